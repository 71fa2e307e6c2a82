"""Parse a module once and collect what the evaluator needs, in one batched libcst pass.

:func:`parse_module` returns a :class:`ModuleInfo`: module-level assignments, functions, classes
(with ``__init__`` attributes and dataclass fields), imports, and every call with the function and
class it sits in. Positions are those of libcst's ``PositionProvider``, kept as character offsets and
computed in the same single codegen pass that collects (no ``MetadataWrapper``).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import libcst as cst

from prefixlint.layout import SourceLocation


@dataclass
class ClassInfo:
    """A class: methods, attributes set in ``__init__``, and annotated fields with defaults."""

    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    init_attrs: dict[str, cst.BaseExpression] = field(default_factory=dict)
    fields: dict[str, cst.BaseExpression | None] = field(default_factory=dict)


@dataclass
class CallSite:
    """A call, with the function and class it appears in (None at module level)."""

    node: cst.Call
    func: cst.FunctionDef | None
    cls: ClassInfo | None


@dataclass
class ModuleInfo:
    """Everything collected from one module."""

    path: str
    text: str
    module: cst.Module
    # id(node) -> (start, end) character offsets of its syntactic extent (PositionProvider's);
    # keyed by id (the module keeps its nodes alive): libcst's node __hash__ is slow Python code
    positions: dict[int, tuple[int, int]]
    assigns: dict[str, cst.BaseExpression] = field(default_factory=dict)
    assign_targets: dict[str, cst.CSTNode] = field(default_factory=dict)
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    # local name -> (module, attribute or None, relative level)
    imports: dict[str, tuple[str, str | None, int]] = field(default_factory=dict)
    calls: list[CallSite] = field(default_factory=list)
    decorated: list[tuple[cst.FunctionDef, ClassInfo | None]] = field(default_factory=list)
    func_class: dict[cst.FunctionDef, ClassInfo] = field(default_factory=dict)
    line_starts: list[int] = field(default_factory=list)
    name_uses: dict[str, int] = field(default_factory=dict)
    # function -> its ``return <value>`` statements (not those of nested functions or classes)
    returns: dict[cst.FunctionDef, list[cst.Return]] = field(default_factory=dict)

    def loc(self, node: cst.CSTNode) -> SourceLocation | None:
        sp = self.positions.get(id(node))
        if sp is None:
            return None
        line, col = self.line_col(sp[0])
        end_line, end_col = self.line_col(sp[1])
        return SourceLocation(self.path, line, col, end_line, end_col)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and 0-based column of a character offset (libcst's numbering)."""
        if not self.line_starts:
            self.line_starts = _line_starts(self.text)
        i = bisect_right(self.line_starts, offset) - 1
        return i + 1, offset - self.line_starts[i]

    def start(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """1-based line and 0-based column where ``node`` starts (None when unknown)."""
        sp = self.positions.get(id(node))
        return self.line_col(sp[0]) if sp is not None else None

    def span(self, node: cst.CSTNode) -> tuple[int, int] | None:
        return self.positions.get(id(node))

    def source(self, node: cst.CSTNode) -> str:
        sp = self.positions.get(id(node))
        if sp is not None:
            return self.text[sp[0] : sp[1]]
        try:
            return self.module.code_for_node(node)
        except Exception:
            return ""

    def pos(self, node: cst.CSTNode) -> int:
        sp = self.positions.get(id(node))
        return sp[0] if sp else 0

    @property
    def directory(self) -> Path:
        return Path(resolved(self.path)).parent


class _Collector:
    """Collects module facts from ``before``/``after`` hooks of the position pass."""

    def __init__(self, info: ModuleInfo) -> None:
        self.info = info
        self.funcs: list[cst.FunctionDef] = []
        self.classes: list[ClassInfo] = []
        self.scopes: list[cst.FunctionDef | None] = []  # None for a class body

    # scopes -------------------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        info = ClassInfo(node)
        if not self.funcs and not self.classes:
            self.info.classes[node.name.value] = info
        self.classes.append(info)
        self.scopes.append(None)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()
        self.scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        cls = self.classes[-1] if self.classes and not self.funcs else None
        if cls is not None:
            cls.methods[node.name.value] = node
            self.info.func_class[node] = cls
        elif not self.funcs and not self.classes:
            self.info.functions[node.name.value] = node
        if node.decorators:
            self.info.decorated.append((node, cls))
        self.funcs.append(node)
        self.scopes.append(node)
        self.info.returns[node] = []

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.funcs.pop()
        self.scopes.pop()

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and self.scopes and self.scopes[-1] is not None:
            self.info.returns[self.scopes[-1]].append(node)

    # module-level facts ------------------------------------------------------------------------
    def _module_level(self) -> bool:
        return not self.funcs and not self.classes

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._module_level():
            for tgt in node.targets:
                if isinstance(tgt.target, cst.Name):
                    self.info.assigns[tgt.target.value] = node.value
                    self.info.assign_targets[tgt.target.value] = tgt.target
        elif self.funcs and self.funcs[-1].name.value == "__init__" and len(self.classes) >= 1:
            for tgt in node.targets:
                self._record_init_attr(tgt.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        t = node.target
        if self._module_level() and isinstance(t, cst.Name) and node.value is not None:
            self.info.assigns[t.value] = node.value
            self.info.assign_targets[t.value] = t
        elif self.classes and not self.funcs and isinstance(t, cst.Name):
            self.classes[-1].fields[t.value] = node.value
        elif self.funcs and self.funcs[-1].name.value == "__init__" and node.value is not None:
            self._record_init_attr(t, node.value)

    def _record_init_attr(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """Remember ``self.<attr> = value`` inside the current class's ``__init__``."""
        cls = self.info.func_class.get(self.funcs[-1])
        if (
            cls is not None
            and isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
        ):
            cls.init_attrs[target.attr.value] = value

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _dotted(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.info.imports[alias.asname.name.value] = (full, None, 0)
            else:
                head = full.split(".")[0]
                self.info.imports.setdefault(head, (head, None, 0))
                if "." in full:
                    self.info.imports[full] = (full, None, 0)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = _dotted(node.module) if node.module is not None else ""
        level = len(node.relative)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _dotted(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.info.imports[local] = (module, name, level)

    def visit_Name(self, node: cst.Name) -> None:
        self.info.name_uses[node.value] = self.info.name_uses.get(node.value, 0) + 1

    def visit_Call(self, node: cst.Call) -> None:
        func = self.funcs[-1] if self.funcs else None
        cls = self.info.func_class.get(func) if func is not None else None
        self.info.calls.append(CallSite(node, func, cls))


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def resolved(path: str) -> str:
    """``str(Path(path).resolve())``, remembered (asked for the same few paths again and again)."""
    return _resolved(path if os.path.isabs(path) else os.path.join(os.getcwd(), path))


@lru_cache(maxsize=1 << 16)
def _resolved(path: str) -> str:
    return str(Path(path).resolve())


_EVALUATED: dict[int, tuple[cst.CSTNode, object]] = {}


def evaluated(node: cst.BaseExpression) -> object:
    """``node.evaluated_value``, remembered per node (libcst runs ``ast.literal_eval`` each time)."""
    hit = _EVALUATED.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    value = node.evaluated_value  # type: ignore[attr-defined]
    if len(_EVALUATED) > 100_000:
        _EVALUATED.clear()
    _EVALUATED[id(node)] = (node, value)
    return value


_NEWLINE = re.compile(r"\r\n?|\n")


def _line_starts(text: str) -> list[int]:
    """Offsets where each line starts, splitting lines as libcst does (``\r\n``, ``\r``, ``\n``)."""
    if "\r" not in text:
        starts = [0]
        find = text.find
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        return starts
    return [0, *(m.end() for m in _NEWLINE.finditer(text))]


class _PassState:
    """A libcst codegen state that records the positions PositionProvider would (as character
    offsets) and runs the collector's hooks, in one pass over the tree.

    Concatenated codegen tokens are the source text itself, so counting their lengths gives offsets.
    It is also its own ``record_syntactic_position`` context manager (those nest: a stack of frames).
    """

    __slots__ = (
        "collector",
        "computed",
        "default_indent",
        "default_newline",
        "frames",
        "indent_len",
        "indent_tokens",
        "leave_hook",
        "off",
        "pending",
        "pop",
        "provider",
        "push",
        "record",
        "stack",
        "visit_hook",
    )

    def __init__(self, module: cst.Module, collector: _Collector) -> None:
        self.default_indent = module.default_indent
        self.default_newline = module.default_newline
        self.provider = None
        self.indent_tokens: list[str] = []
        self.indent_len = 0
        self.off = 0
        self.computed: dict[int, tuple[int, int]] = {}
        self.stack: list[int] = []
        self.frames: list[tuple[int, object, object, int]] = []
        self.pending: tuple[int, object, object] = (0, None, None)
        self.collector = collector
        self.push = self.stack.append
        self.pop = self.stack.pop
        self.record = self.computed.setdefault
        self.visit_hook = _hooks(collector, "visit_").get
        self.leave_hook = _hooks(collector, "leave_").get

    @property
    def tokens(self) -> list[str]:  # Module._codegen_impl only asks whether anything was written
        return [""] if self.off else []

    def increase_indent(self, value: str) -> None:
        self.indent_tokens.append(value)
        self.indent_len += len(value)

    def decrease_indent(self) -> None:
        self.indent_len -= len(self.indent_tokens.pop())

    def add_indent_tokens(self) -> None:
        self.off += self.indent_len

    def add_token(self, value: str) -> None:
        self.off += len(value)

    def pop_trailing_newline(self) -> None:
        pass

    # called for every node of the tree: kept to bound methods looked up once
    def before_codegen(self, node: cst.CSTNode) -> None:
        self.push(self.off)
        hook = self.visit_hook(type(node))
        if hook is not None:
            hook(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        # a syntactic position recorded inside the node wins (as in PositionProvider)
        self.record(id(node), (self.pop(), self.off))
        hook = self.leave_hook(type(node))
        if hook is not None:
            hook(node)

    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: object = None, end_node: object = None
    ) -> _PassState:
        self.pending = (id(node), start_node, end_node)
        return self

    def __enter__(self) -> None:
        key, start_node, end_node = self.pending
        self.frames.append((key, start_node, end_node, self.off))

    def __exit__(self, *exc: object) -> None:
        key, start_node, end_node, start = self.frames.pop()
        computed = self.computed
        if start_node is not None:
            start = computed[id(start_node)][0]
        end = computed[id(end_node)][1] if end_node is not None else self.off
        computed[key] = (start, end)


def _hooks(collector: _Collector, prefix: str) -> dict[type, Callable[[Any], None]]:
    out: dict[type, Callable[[Any], None]] = {}
    for attr in dir(collector):
        if attr.startswith(prefix):
            out[getattr(cst, attr[len(prefix) :])] = getattr(collector, attr)
    return out


def parse_module(path: str, text: str) -> ModuleInfo:
    """Parse ``text`` once and collect a :class:`ModuleInfo` (raises libcst.ParserSyntaxError)."""
    module = cst.parse_module(text)
    info = ModuleInfo(path=path, text=text, module=module, positions={})
    # One codegen pass computes every node's position and runs the collector (no metadata wrapper).
    state = _PassState(module, _Collector(info))
    module._codegen(state)  # type: ignore[arg-type]
    info.positions = state.computed
    return info
