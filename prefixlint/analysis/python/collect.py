"""Parse a module once and collect what the evaluator needs, in one batched libcst pass.

:func:`parse_module` returns a :class:`ModuleInfo`: module-level assignments, functions, classes
(with ``__init__`` attributes and dataclass fields), imports, and every call with the function and
class it sits in. Positions come from libcst's ``PositionProvider``; nothing else is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

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
    positions: dict[cst.CSTNode, CodeRange]
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

    def loc(self, node: cst.CSTNode) -> SourceLocation | None:
        rng = self.positions.get(node)
        if rng is None:
            return None
        return SourceLocation(self.path, rng.start.line, rng.start.column, rng.end.line, rng.end.column)

    def offset(self, line: int, col: int) -> int:
        """0-based character offset of a 1-based line and 0-based column."""
        if not self.line_starts:
            starts = [0]
            for i, ch in enumerate(self.text):
                if ch == "\n":
                    starts.append(i + 1)
            self.line_starts = starts
        line = max(1, min(line, len(self.line_starts)))
        return self.line_starts[line - 1] + col

    def span(self, node: cst.CSTNode) -> tuple[int, int] | None:
        rng = self.positions.get(node)
        if rng is None:
            return None
        return self.offset(rng.start.line, rng.start.column), self.offset(rng.end.line, rng.end.column)

    def source(self, node: cst.CSTNode) -> str:
        sp = self.span(node)
        if sp is not None:
            return self.text[sp[0] : sp[1]]
        try:
            return self.module.code_for_node(node)
        except Exception:
            return ""

    def pos(self, node: cst.CSTNode) -> int:
        sp = self.span(node)
        return sp[0] if sp else 0

    @property
    def directory(self) -> Path:
        return Path(self.path).resolve().parent


class _Collector(cst.BatchableCSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, info: ModuleInfo) -> None:
        super().__init__()
        self.info = info
        self.funcs: list[cst.FunctionDef] = []
        self.classes: list[ClassInfo] = []

    # scopes -------------------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        info = ClassInfo(node)
        if not self.funcs and not self.classes:
            self.info.classes[node.name.value] = info
        self.classes.append(info)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()

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

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.funcs.pop()

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
            cls = self.info.func_class.get(self.funcs[-1])
            for tgt in node.targets:
                t = tgt.target
                if (
                    cls is not None
                    and isinstance(t, cst.Attribute)
                    and isinstance(t.value, cst.Name)
                    and t.value.value == "self"
                ):
                    cls.init_attrs[t.attr.value] = node.value

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        t = node.target
        if self._module_level() and isinstance(t, cst.Name) and node.value is not None:
            self.info.assigns[t.value] = node.value
            self.info.assign_targets[t.value] = t
        elif self.classes and not self.funcs and isinstance(t, cst.Name):
            self.classes[-1].fields[t.value] = node.value
        elif self.funcs and self.funcs[-1].name.value == "__init__" and node.value is not None:
            cls = self.info.func_class.get(self.funcs[-1])
            if (
                cls is not None
                and isinstance(t, cst.Attribute)
                and isinstance(t.value, cst.Name)
                and t.value.value == "self"
            ):
                cls.init_attrs[t.attr.value] = node.value

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


def parse_module(path: str, text: str) -> ModuleInfo:
    """Parse ``text`` once and collect a :class:`ModuleInfo` (raises libcst.ParserSyntaxError)."""
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    info = ModuleInfo(path=path, text=text, module=module, positions={})
    # One batched pass computes the positions and runs the collector; resolve() then hits the cache.
    wrapper.visit_batched([_Collector(info)])
    info.positions = dict(wrapper.resolve(PositionProvider))
    return info
