"""Parse a module once and collect what the evaluator needs, in one batched libcst pass.

:func:`parse_module` returns a :class:`ModuleInfo`: module-level assignments, functions, classes
(with ``__init__`` attributes and dataclass fields), imports, and every call with the function and
class it sits in. The visit is one iterative walk over the nodes that carry meaning (whitespace and
punctuation are skipped), which also numbers the nodes in source order (:meth:`ModuleInfo.pos`,
enough to tell what comes first) and remembers parents. Exact positions (those of libcst's
``PositionProvider``) are computed only for the nodes asked about, by :mod:`.positions`.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import libcst as cst

from prefixlint.analysis.python.cst_parse import parse_module as parse_unvalidated
from prefixlint.analysis.python.positions import LazyPositions
from prefixlint.model.layout import SourceLocation
from prefixlint.model.source_text import line_starts


@dataclass
class ClassInfo:
    """A class: methods, attributes set in ``__init__``, and annotated fields with defaults."""

    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    init_attrs: dict[str, cst.BaseExpression] = field(default_factory=dict)
    fields: dict[str, cst.BaseExpression | None] = field(default_factory=dict)
    # field -> the class name its annotation gives (``prompts: PromptSettings``), where it is one name
    field_types: dict[str, str] = field(default_factory=dict)


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
    # id(node) -> number in source order: pre-order, so a node comes before everything inside it
    # (a ``def`` before its decorators); keyed by id (the module keeps its nodes alive): libcst's
    # node __hash__ is slow Python code
    order: dict[int, int] = field(default_factory=dict)
    # id(function or class) -> the number after its last node
    order_end: dict[int, int] = field(default_factory=dict)
    parents: dict[int, cst.CSTNode] = field(default_factory=dict)
    assigns: dict[str, cst.BaseExpression] = field(default_factory=dict)
    assign_targets: dict[str, cst.CSTNode] = field(default_factory=dict)
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    # local name -> (module, attribute or None, relative level)
    imports: dict[str, tuple[str, str | None, int]] = field(default_factory=dict)
    calls: list[CallSite] = field(default_factory=list)
    decorated: list[tuple[cst.FunctionDef, ClassInfo | None]] = field(default_factory=list)
    func_class: dict[cst.FunctionDef, ClassInfo] = field(default_factory=dict)
    # id(function) -> the functions defined in its body, by name; id(inner function) -> its outer one
    inner_functions: dict[int, dict[str, cst.FunctionDef]] = field(default_factory=dict)
    enclosing: dict[int, cst.FunctionDef] = field(default_factory=dict)
    line_starts: list[int] = field(default_factory=list)
    name_uses: dict[str, int] = field(default_factory=dict)
    # function -> its ``return <value>`` statements (not those of nested functions or classes)
    returns: dict[cst.FunctionDef, list[cst.Return]] = field(default_factory=dict)
    # function -> ops per local name (filled by ``resolve.local_ops``, kept as long as the module)
    local_ops: dict[cst.FunctionDef, Any] = field(default_factory=dict, repr=False, compare=False)
    # module-level name -> its assignments and ``+=`` in source order, when it has more than one
    # (filled by ``resolve.rebound_ops``)
    module_ops: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    # module-level tables: ``NAME = {"key": value}`` and ``NAME["key"] = value`` -> NAME -> key -> value
    dict_items: dict[str, dict[str, cst.BaseExpression]] = field(default_factory=dict)
    # id(function) -> the calls in its own body (filled on first use by ``sendpaths.function_sites``)
    calls_by_func: dict[int, list[CallSite]] | None = field(default=None, repr=False, compare=False)
    # what a call of this module passes to a helper's ``*args``/``**kwargs``, made once (by the ids
    # of the call and the helper) so that the nodes, and the ids memos key on, live with the module
    star_args: dict[tuple[int, int, bool], dict[str, cst.BaseExpression]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _positions: LazyPositions | None = field(default=None, repr=False)

    @property
    def positions(self) -> LazyPositions:
        if self._positions is None:
            self._positions = LazyPositions(self.module, self.text, self.parents.get)
        return self._positions

    def loc(self, node: cst.CSTNode) -> SourceLocation | None:
        sp = self.span(node)
        if sp is None:
            return None
        line, col = self.line_col(sp[0])
        end_line, end_col = self.line_col(sp[1])
        return SourceLocation(self.path, line, col, end_line, end_col)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and 0-based column of a character offset (libcst's numbering)."""
        if not self.line_starts:
            self.line_starts = line_starts(self.text)
        i = bisect_right(self.line_starts, offset) - 1
        return i + 1, offset - self.line_starts[i]

    def offset(self, line: int, col: int) -> int:
        """The character offset of a 1-based line and 0-based column (inverse of :meth:`line_col`)."""
        if not self.line_starts:
            self.line_starts = line_starts(self.text)
        return self.line_starts[min(max(line, 1), len(self.line_starts)) - 1] + col

    def start(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """1-based line and 0-based column where ``node`` starts (None when unknown)."""
        sp = self.span(node)
        return self.line_col(sp[0]) if sp is not None else None

    def span(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """``(start, end)`` character offsets of ``node`` (None for a node of another module)."""
        if id(node) not in self.order:
            return None
        return self.positions.get(node)

    def source(self, node: cst.CSTNode) -> str:
        sp = self.span(node)
        if sp is not None:
            return self.text[sp[0] : sp[1]]
        try:
            return self.module.code_for_node(node)
        except Exception:
            return ""

    def pos(self, node: cst.CSTNode) -> int:
        """A number that orders nodes as they appear in the source (0 when unknown)."""
        return self.order.get(id(node), 0)

    def end_pos(self, node: cst.CSTNode) -> int:
        """A number after every node inside the function or class ``node``."""
        return self.order_end.get(id(node), 1 << 60)

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
        outer = self.scopes[-1] if self.scopes else None
        if outer is not None:  # ``def`` in a function's body: a closure over its locals
            self.info.inner_functions.setdefault(id(outer), {})[node.name.value] = node
            self.info.enclosing[id(node)] = outer
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
                    if isinstance(node.value, cst.Dict):
                        self._record_dict_literal(tgt.target.value, node.value)
                elif isinstance(tgt.target, cst.Subscript):
                    self._record_item(tgt.target, node.value)
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
            name = class_annotation(node.annotation.annotation)
            if name:
                self.classes[-1].field_types[t.value] = name
        elif self.funcs and self.funcs[-1].name.value == "__init__" and node.value is not None:
            self._record_init_attr(t, node.value)

    def _record_dict_literal(self, name: str, value: cst.Dict) -> None:
        items = self.info.dict_items.setdefault(name, {})
        for el in value.elements:
            if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                key = evaluated(el.key)
                if isinstance(key, str):
                    items[key] = el.value

    def _record_item(self, target: cst.Subscript, value: cst.BaseExpression) -> None:
        """``PROMPTS["qa"] = "..."`` at module level: an item of a module-level table."""
        if not isinstance(target.value, cst.Name) or len(target.slice) != 1:
            return
        index = target.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            key = evaluated(index.value)
            if isinstance(key, str):
                self.info.dict_items.setdefault(target.value.value, {})[key] = value

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


def class_annotation(ann: cst.BaseExpression) -> str:
    """The one class an annotation names: ``Config``, ``"Config"``, ``Optional[Config]``,
    ``Config | None``, ``mod.Config``; empty otherwise."""
    if isinstance(ann, cst.SimpleString):
        value = evaluated(ann)
        return value.strip() if isinstance(value, str) and value.strip().isidentifier() else ""
    if isinstance(ann, cst.Name):
        return ann.value
    if isinstance(ann, cst.Attribute):
        return ann.attr.value
    if isinstance(ann, cst.Subscript) and isinstance(ann.value, (cst.Name, cst.Attribute)):
        wrapper = ann.value.attr.value if isinstance(ann.value, cst.Attribute) else ann.value.value
        inner = ann.slice[0].slice if len(ann.slice) == 1 else None
        if wrapper == "Optional" and isinstance(inner, cst.Index):
            return class_annotation(inner.value)
        return ""
    if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
        sides = [s for s in (ann.left, ann.right) if not (isinstance(s, cst.Name) and s.value == "None")]
        return class_annotation(sides[0]) if len(sides) == 1 else ""
    return ""


@lru_cache(maxsize=8192)  # nodes hash by identity; bounded, least recently used first out
def evaluated(node: cst.BaseExpression) -> object:
    """``node.evaluated_value``, remembered per node (libcst runs ``ast.literal_eval`` each time)."""
    return node.evaluated_value  # type: ignore[attr-defined]


def parse_module(path: str, text: str) -> ModuleInfo:
    """Parse ``text`` once and collect a :class:`ModuleInfo` (raises libcst.ParserSyntaxError)."""
    module = parse_unvalidated(text)
    info = ModuleInfo(path=path, text=text, module=module)
    _walk(module, _Collector(info), info)
    return info


_LEAVE = object()


def _walk(module: cst.Module, collector: _Collector, info: ModuleInfo) -> None:
    """Visit every meaningful node once, in source order, calling the collector's hooks."""
    visit_hooks = _hooks("visit_")
    leave_hooks = _hooks("leave_")
    order, parents, order_end = info.order, info.parents, info.order_end
    is_node = _IS_NODE
    fields_of = _CHILD_FIELDS
    stack: list[Any] = [module]
    push, pop = stack.append, stack.pop
    n = 0
    while stack:
        node = pop()
        if node is _LEAVE:
            node = pop()
            order_end[id(node)] = n
            leave_hooks[type(node)](collector, node)
            continue
        order[id(node)] = n
        n += 1
        kind = type(node)
        hook = visit_hooks.get(kind)
        if hook is not None:
            hook(collector, node)
        if kind in leave_hooks:
            push(node)
            push(_LEAVE)
        names = fields_of.get(kind)
        if names is None:
            names = _child_fields(kind)
        for name in names:  # reversed source order: the stack pops them in source order
            value = getattr(node, name)
            if type(value) is tuple:
                for child in reversed(value):
                    known = is_node.get(type(child))
                    if known or (known is None and _is_node(child)):
                        parents[id(child)] = node
                        push(child)
            else:
                known = is_node.get(type(value))
                if known or (known is None and _is_node(value)):
                    parents[id(value)] = node
                    push(value)


# type -> whether its instances are libcst nodes (``isinstance`` against the ABC is slow)
_IS_NODE: dict[type, bool] = {}


def _is_node(value: object) -> bool:
    """Whether ``value`` is a node, remembered for its type (asked once per type)."""
    _IS_NODE[type(value)] = got = isinstance(value, cst.CSTNode)
    return got


@cache
def _hooks(prefix: str) -> dict[type, Callable[[Any, Any], None]]:
    """Node type -> the collector's ``visit_<Type>`` (or ``leave_<Type>``) function."""
    out: dict[type, Callable[[Any, Any], None]] = {}
    for attr in dir(_Collector):
        if attr.startswith(prefix):
            out[getattr(cst, attr[len(prefix) :])] = getattr(_Collector, attr)
    return out


# Node types that carry no meaning for the analyzer: whitespace, comments, brackets, punctuation
# and operators (an operator's kind is read from its parent when needed).
_SKIPPED = (
    cst.BaseParenthesizableWhitespace,
    cst.EmptyLine,
    cst.TrailingWhitespace,
    cst.Newline,
    cst.Comment,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.Comma,
    cst.Semicolon,
    cst.Dot,
    cst.Colon,
    cst.AssignEqual,
    cst.ImportStar,
    cst.Asynchronous,
    cst.BaseBinaryOp,
    cst.BaseBooleanOp,
    cst.BaseCompOp,
    cst.BaseUnaryOp,
    cst.BaseAugOp,
)

# Where a node's fields are not declared in source order, the order its code is written in.
_SOURCE_ORDER = {
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.MatchCase: ("pattern", "guard", "body"),
    cst.TypeAlias: ("name", "type_parameters", "value"),
}

_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of ``kind`` that can hold meaningful nodes, in reversed source order."""
    fields = dataclasses.fields(kind)
    # libcst's fields carry their types as objects; only a forward reference (``"CompIf"``) needs
    # ``get_type_hints``, which evaluates every annotation of the class and its bases
    hints: dict[str, Any] = {f.name: f.type for f in fields}
    if any(_forward(t) for t in hints.values()):
        try:
            hints = typing.get_type_hints(kind)
        except Exception:  # a node type of a newer libcst with hints this Python cannot resolve
            hints = {}
    names = []
    for f in fields:
        classes = _classes(hints[f.name]) if f.name in hints else [cst.CSTNode]  # unknown: walk it
        if any(_walked(c) for c in classes):
            names.append(f.name)
    first = [n for n in _SOURCE_ORDER.get(kind, ()) if n in names]
    ordered = first + [n for n in names if n not in first]
    _CHILD_FIELDS[kind] = out = tuple(reversed(ordered))
    return out


def _walked(kind: type) -> bool:
    """A node class the walk descends into: a ``CSTNode`` that is not of a skipped kind.

    Read from the class's MRO: ``issubclass`` against libcst's abstract classes first searches every
    subclass of ``CSTNode`` for a class that is not one (``str``), thousands of checks a run.
    """
    mro = getattr(kind, "__mro__", ())
    return cst.CSTNode in mro and not any(skipped in mro for skipped in _SKIPPED)


def _forward(hint: object) -> bool:
    """True when a type hint names a class by a string anywhere (``Sequence["CompIf"]``)."""
    if isinstance(hint, (str, typing.ForwardRef)):
        return True
    return any(_forward(arg) for arg in typing.get_args(hint))


def _classes(hint: object) -> list[type]:
    """The classes named anywhere in a type hint (``Sequence[Union[A, B]]`` -> ``[A, B]``)."""
    if isinstance(hint, type):
        return [hint]
    out: list[type] = []
    for arg in typing.get_args(hint):
        out.extend(_classes(arg))
    return out
