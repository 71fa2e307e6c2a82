"""Jinja2 templates rendered to segments, in render order, with exact locations.

Sources are parsed by :mod:`prefixlint.analysis.templates.jinja_parse` (jinja2's own parser, cached).
:class:`JinjaRenderer` walks the AST the way jinja would render it: text nodes are static, output
expressions are classified by binding, name, call or filter, ``if``/``for`` bodies are flagged
conditional/repeated, and ``include``/``extends``/``import``/macros are expanded within the project.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jinja2 import nodes
from jinja2.nodes import EvalContext

from prefixlint.analysis.templates.bindings import (
    FILTER_KINDS,
    STATIC,
    STATIC_GLOBALS,
    Binding,
    call_binding,
    combine,
    name_binding,
    run_fixed_binding,
)
from prefixlint.analysis.templates.emit import Flags, Frame, RenderContext
from prefixlint.analysis.templates.files import find_template, read_template
from prefixlint.analysis.templates.jinja_parse import ENV, ParsedJinja, parse_jinja
from prefixlint.model.layout import DynamicKind, Segment, SourceLocation, Timing

_MAX_DEPTH = 40  # nested templates or macro calls followed at most


@dataclass
class Unit:
    """One template being rendered: parsed source, where its locations point, its file."""

    parsed: ParsedJinja
    frame: Frame
    file: Path | None


@dataclass
class MacroRef:
    node: nodes.Macro
    unit: Unit
    scope: ChainMap


@dataclass
class ModuleRef:
    """``{% import "x" as m %}``: the macros of another template."""

    macros: dict[str, MacroRef]


@dataclass
class State:
    """Where the walk is: template, variables in scope, flags, include/macro sites, blocks."""

    unit: Unit
    scope: ChainMap
    flags: Flags = field(default_factory=Flags)
    via: tuple[SourceLocation, ...] = ()
    blocks: dict[str, list[tuple[nodes.Block, Unit]]] = field(default_factory=dict)
    block_rest: list[tuple[nodes.Block, Unit]] = field(default_factory=list)
    caller: tuple[list[nodes.Node], State] | None = None
    macros: tuple[int, ...] = ()


def _dotted(e: nodes.Node) -> str | None:
    """``user.name`` for ``user.name`` / ``user["name"]``; ``docs`` for ``docs[0]``; else None."""
    if isinstance(e, nodes.Name):
        return e.name
    if isinstance(e, nodes.Getattr):
        base = _dotted(e.node)
        return f"{base}.{e.attr}" if base else None
    if isinstance(e, nodes.Getitem):
        base = _dotted(e.node)
        if base and isinstance(e.arg, nodes.Const):
            return f"{base}.{e.arg.value}" if isinstance(e.arg.value, str) else base
    return None


def _root_name(e: nodes.Node) -> str | None:
    while isinstance(e, (nodes.Getattr, nodes.Getitem)):
        e = e.node
    return e.name if isinstance(e, nodes.Name) else None


def _unwrap_filters(e: nodes.Node) -> nodes.Node:
    while isinstance(e, nodes.Filter) and e.node is not None and e.name not in FILTER_KINDS:
        e = e.node
    return e


def _expr_children(e: nodes.Node) -> Iterator[nodes.Expr]:
    for child in e.iter_child_nodes():
        if isinstance(child, nodes.Expr):
            yield child
        elif isinstance(child, nodes.Helper):
            yield from _expr_children(child)


def _value_of(segments: list[Segment]) -> Binding:
    """The value of captured output (``{% set x %}...{% endset %}`` or a macro inside an expression)."""
    dynamic = [
        Binding(
            static=False,
            kind=s.kind,
            timing=s.timing,
            label=s.label,
            location=s.location,
            chain=s.chain,
            confidence=s.confidence,
        )
        for s in segments
        if not s.static
    ]
    if not dynamic:
        return Binding(static=True, timing=Timing.STATIC, text="".join(s.text for s in segments))
    return combine(dynamic)


class JinjaRenderer:
    """Walks jinja ASTs into a :class:`RenderContext`."""

    def __init__(self, ctx: RenderContext) -> None:
        self.ctx = ctx
        self.evalctx = EvalContext(ENV)

    # Entry ------------------------------------------------------------------------------------

    def render(self, source: str, frame: Frame, file: Path | None, flags: Flags = Flags()) -> None:
        """Render a template's source (the main text, or an embedded string)."""
        parsed = parse_jinja(source)
        if parsed.ast is None:
            self.ctx.error(
                frame.loc(parsed.error_line, 0), f"template syntax error: {parsed.error_message}", "PFX001"
            )
            return
        unit = Unit(parsed, frame, file)
        with self._entered(str(file) if file else None, frame.path):
            self.render_unit(unit, State(unit=unit, scope=ChainMap(), flags=flags))

    @contextmanager
    def _entered(self, key: str | None, display: str) -> Iterator[None]:
        if key is None:
            yield
            return
        self.ctx.stack.append((key, display))
        try:
            yield
        finally:
            self.ctx.stack.pop()

    @contextmanager
    def _capture(self) -> Iterator[list[Segment]]:
        saved = self.ctx.segments
        self.ctx.segments = []
        out = self.ctx.segments
        try:
            yield out
        finally:
            self.ctx.segments = saved

    def render_unit(self, unit: Unit, st: State) -> None:
        """Render ``unit`` (``st.unit`` is it: every caller builds its state for the unit)."""
        assert unit.parsed.ast is not None
        body = unit.parsed.ast.body
        self._hoist(body, st)
        extends = next((n for n in body if isinstance(n, nodes.Extends)), None)
        if extends is None:
            self.walk(body, st)
            return
        for node in body:
            if isinstance(node, (nodes.Assign, nodes.Import, nodes.FromImport)):
                self.visit(node, st)
        blocks = {name: list(chain) for name, chain in st.blocks.items()}
        for block in unit.parsed.ast.find_all(nodes.Block):
            blocks.setdefault(block.name, []).append((block, unit))
        site = self._tag_loc(extends, st)
        parent = self._load(extends.template, st, site, "extended template")
        if parent is None:
            # Parent unknown: still analyse the child's own blocks, in order.
            for node in body:
                if isinstance(node, nodes.Block):
                    self._render_block_chain(blocks[node.name], replace(st, blocks=blocks))
            return
        with self._entered(str(parent.file), parent.frame.path):
            self.render_unit(
                parent,
                State(
                    unit=parent,
                    scope=st.scope.new_child(),
                    flags=st.flags,
                    via=st.via,
                    blocks=blocks,
                    macros=st.macros,
                ),
            )

    def _hoist(self, body: list[nodes.Node], st: State) -> None:
        for node in body:
            if isinstance(node, nodes.Macro):
                st.scope[node.name] = MacroRef(node, st.unit, st.scope)

    # Statements -------------------------------------------------------------------------------

    def walk(self, body: list[nodes.Node], st: State) -> None:
        for node in body:
            self.visit(node, st)

    def visit(self, node: nodes.Node, st: State) -> None:
        if isinstance(node, nodes.Output):
            self._output(node, st)
        elif isinstance(node, nodes.If):
            inner = replace(st, flags=st.flags.inside_if())
            self.walk(node.body, inner)
            for branch in node.elif_:
                self.walk(branch.body, inner)
            self.walk(node.else_, inner)
        elif isinstance(node, nodes.For):
            self._for(node, st)
        elif isinstance(node, nodes.Assign):
            self._bind(node.target, self.classify(node.node, st), st)
        elif isinstance(node, nodes.AssignBlock):
            with self._capture() as captured:
                self.walk(node.body, st)
            self._bind(node.target, _value_of(captured), st)
        elif isinstance(node, nodes.Macro):
            st.scope[node.name] = MacroRef(node, st.unit, st.scope)
        elif isinstance(node, nodes.CallBlock):
            self._call_block(node, st)
        elif isinstance(node, nodes.Include):
            self._include(node, st)
        elif isinstance(node, nodes.Import):
            unit = self._load(node.template, st, self._tag_loc(node, st), "imported template")
            st.scope[node.target] = ModuleRef(self._module_macros(unit, st) if unit else {})
        elif isinstance(node, nodes.FromImport):
            unit = self._load(node.template, st, self._tag_loc(node, st), "imported template")
            macros = self._module_macros(unit, st) if unit else {}
            for item in node.names:
                name, alias = item if isinstance(item, tuple) else (item, item)
                st.scope[alias] = macros.get(name, STATIC)
        elif isinstance(node, nodes.Block):
            chain = list(st.blocks.get(node.name, []))
            if not chain or chain[-1][0] is not node:
                chain.append((node, st.unit))
            self._render_block_chain(chain, st)
        elif isinstance(node, nodes.With):
            scope = st.scope.new_child()
            for target, value in zip(node.targets, node.values, strict=False):
                self._bind(target, self.classify(value, st), replace(st, scope=scope))
            self.walk(node.body, replace(st, scope=scope))
        elif isinstance(node, nodes.Extends):
            return  # only meaningful at the top level (handled by render_unit)
        elif isinstance(getattr(node, "body", None), list):
            self.walk(node.body, st)  # FilterBlock, Scope, ScopedEvalContextModifier...

    def _for(self, node: nodes.For, st: State) -> None:
        items = self.classify(node.iter, st)
        scope = st.scope.new_child()
        inner = replace(st, scope=scope, flags=st.flags.inside_for())
        self._bind(node.target, items, inner)
        scope["loop"] = items
        self.walk(node.body, inner)
        self.walk(node.else_, replace(st, flags=st.flags.inside_if()))

    def _bind(self, target: nodes.Node, value: Binding, st: State) -> None:
        if isinstance(target, nodes.Name):
            st.scope[target.name] = value
        elif isinstance(target, nodes.Tuple):
            for item in target.items:
                self._bind(item, value, st)
        elif isinstance(target, nodes.NSRef):
            st.scope[f"{target.name}.{target.attr}"] = value

    def _render_block_chain(self, chain: list[tuple[nodes.Block, Unit]], st: State) -> None:
        block, unit = chain[0]
        self.walk(block.body, replace(st, unit=unit, block_rest=chain[1:]))

    # Templates of the project -------------------------------------------------------------------

    def _template_names(self, expr: nodes.Node, st: State) -> list[str] | None:
        if isinstance(expr, nodes.Const) and isinstance(expr.value, str):
            return [expr.value]
        if isinstance(expr, (nodes.List, nodes.Tuple)) and all(
            isinstance(i, nodes.Const) and isinstance(i.value, str) for i in expr.items
        ):
            return [i.value for i in expr.items]
        if isinstance(expr, nodes.Const) and isinstance(expr.value, (list, tuple)):
            return [str(v) for v in expr.value]
        value = self.classify(expr, st)
        return [value.text] if value.static and value.text else None

    def _load(
        self, expr: nodes.Node, st: State, site: SourceLocation, what: str, ignore_missing: bool = False
    ) -> Unit | None:
        """Find, read and parse another template; report missing files and include loops."""
        names = self._template_names(expr, st)
        if names is None:
            return None
        extra = (st.unit.file.parent,) if st.unit.file else ()
        path = None
        for name in names:
            path = find_template(name, (*self.ctx.search_paths, *extra), self.ctx.root)
            if path is not None:
                break
        if path is None:
            if not ignore_missing:
                self.ctx.error(site, f"{what} {names[0]!r} not found")
            return None
        key = str(path)
        keys = [k for k, _ in self.ctx.stack]
        if key in keys:
            cycle = [d for _, d in self.ctx.stack[keys.index(key) :]] + [self.ctx.stack[keys.index(key)][1]]
            self.ctx.error(site, "include loop: " + " -> ".join(cycle))
            return None
        if len(self.ctx.stack) >= _MAX_DEPTH:
            self.ctx.error(site, f"templates nested deeper than {_MAX_DEPTH} levels; {names[0]!r} not read")
            return None
        try:
            text = read_template(path)
        except (OSError, UnicodeDecodeError) as exc:
            self.ctx.error(site, f"cannot read {what} {names[0]!r}: {exc}")
            return None
        self.ctx.dependencies.add(key)
        parsed = parse_jinja(text)
        frame = Frame(self.ctx.display(path))
        if parsed.ast is None:
            self.ctx.error(
                frame.loc(parsed.error_line, 0), f"template syntax error: {parsed.error_message}", "PFX001"
            )
            return None
        return Unit(parsed, frame, path)

    def _include(self, node: nodes.Include, st: State) -> None:
        site = self._tag_loc(node, st)
        if self._template_names(node.template, st) is None:
            value = combine([self.classify(node.template, st)])
            label = f"include of {_dotted(node.template) or 'a computed name'}"
            unknown = Binding(
                static=False,
                kind=value.kind or DynamicKind.UNKNOWN,
                timing=value.timing,
                label=label,
                chain=value.chain,
                confidence=0.3,
            )
            self.ctx.dynamic(
                unknown, st.unit.parsed.text(st.unit.parsed.spans.get(id(node))), site, st.flags, st.via
            )
            return
        unit = self._load(node.template, st, site, "included template", node.ignore_missing)
        if unit is None:
            return
        scope = st.scope.new_child() if node.with_context else ChainMap()
        with self._entered(str(unit.file), unit.frame.path):
            self.render_unit(
                unit, State(unit=unit, scope=scope, flags=st.flags, via=(*st.via, site), macros=st.macros)
            )

    def _module_macros(self, unit: Unit, st: State) -> dict[str, MacroRef]:
        assert unit.parsed.ast is not None
        scope: ChainMap = ChainMap()
        mst = State(unit=unit, scope=scope, flags=st.flags, via=st.via)
        with self._entered(str(unit.file), unit.frame.path):
            self._hoist(unit.parsed.ast.body, mst)
            for node in unit.parsed.ast.body:
                if isinstance(node, (nodes.Assign, nodes.Import, nodes.FromImport)):
                    self.visit(node, mst)
        return {k: v for k, v in scope.items() if isinstance(v, MacroRef)}

    # Macros --------------------------------------------------------------------------------------

    def _lookup_macro(self, callee: nodes.Node, st: State) -> MacroRef | None:
        if isinstance(callee, nodes.Name):
            found = st.scope.get(callee.name)
            return found if isinstance(found, MacroRef) else None
        if isinstance(callee, nodes.Getattr) and isinstance(callee.node, nodes.Name):
            module = st.scope.get(callee.node.name)
            if isinstance(module, ModuleRef):
                return module.macros.get(callee.attr)
        return None

    def _call_macro(
        self,
        macro: MacroRef,
        call: nodes.Call,
        st: State,
        site: SourceLocation,
        caller: list[nodes.Node] | None = None,
    ) -> bool:
        """Expand a macro at its call site; False when it is already being expanded (recursion)."""
        if id(macro.node) in st.macros or len(st.macros) >= _MAX_DEPTH:
            return False
        scope = macro.scope.new_child()
        mst = State(
            unit=macro.unit,
            scope=scope,
            flags=st.flags,
            via=(*st.via, site),
            caller=(caller, st) if caller is not None else None,
            macros=(*st.macros, id(macro.node)),
        )
        args, defaults = macro.node.args, macro.node.defaults
        keywords = {k.key: k.value for k in call.kwargs}
        first_default = len(args) - len(defaults)
        for i, arg in enumerate(args):
            if i < len(call.args):
                value = self.classify(call.args[i], st)
            elif arg.name in keywords:
                value = self.classify(keywords.pop(arg.name), st)
            elif i >= first_default:
                value = self.classify(defaults[i - first_default], replace(mst, scope=macro.scope))
            else:
                value = STATIC
            scope[arg.name] = value
        scope["varargs"] = combine(self.classify(a, st) for a in call.args[len(args) :])
        scope["kwargs"] = combine(self.classify(v, st) for v in keywords.values())
        self.walk(macro.node.body, mst)
        return True

    def _call_block(self, node: nodes.CallBlock, st: State) -> None:
        site = self._tag_loc(node, st)
        macro = self._lookup_macro(node.call.node, st)
        if macro is not None and self._call_macro(macro, node.call, st, site, caller=node.body):
            return
        text = st.unit.parsed.text(st.unit.parsed.spans.get(id(node)))
        self.ctx.dynamic(self.classify(node.call, st), text, site, st.flags, st.via)
        self.walk(node.body, replace(st, flags=st.flags.inside_if()))

    def _expand_call(self, call: nodes.Call, st: State, site: SourceLocation) -> bool:
        """``{{ macro(...) }}``, ``{{ caller() }}``, ``{{ super() }}``, ``{{ self.block() }}`` in place."""
        callee = call.node
        if isinstance(callee, nodes.Name) and callee.name == "caller" and st.caller is not None:
            body, cst = st.caller
            self.walk(body, replace(cst, flags=cst.flags.union(st.flags)))
            return True
        if isinstance(callee, nodes.Name) and callee.name == "super" and "super" not in st.scope:
            if st.block_rest:
                self._render_block_chain(st.block_rest, st)
            return True
        if (
            isinstance(callee, nodes.Getattr)
            and isinstance(callee.node, nodes.Name)
            and callee.node.name == "self"
            and "self" not in st.scope
        ):
            chain = st.blocks.get(callee.attr)
            if chain is None and st.unit.parsed.ast is not None:
                found = st.unit.parsed.ast.find_all(nodes.Block)
                chain = [(b, st.unit) for b in found if b.name == callee.attr]
            if chain:
                self._render_block_chain(chain, st)
            return True
        macro = self._lookup_macro(callee, st)
        return macro is not None and self._call_macro(macro, call, st, site)

    # Output -------------------------------------------------------------------------------------

    def _loc(self, st: State, node: nodes.Node) -> SourceLocation:
        span = st.unit.parsed.spans.get(id(node))
        if span is None:
            return st.unit.frame.loc(node.lineno or 1, 0)
        return st.unit.frame.loc(span.line, span.col, span.end_line, span.end_col)

    def _tag_loc(self, node: nodes.Node, st: State) -> SourceLocation:
        return self._loc(st, node)

    def _output(self, node: nodes.Output, st: State) -> None:
        for child in node.nodes:
            loc = self._loc(st, child)
            if isinstance(child, nodes.TemplateData):
                start = SourceLocation(loc.path, loc.line, loc.col)
                self.ctx.static(child.data, start, st.flags)
                continue
            call = _unwrap_filters(child)
            if isinstance(call, nodes.Call) and self._expand_call(call, st, loc):
                continue
            text = st.unit.parsed.text(st.unit.parsed.spans.get(id(child)))
            text = text or f"{{{{ {_dotted(child) or '...'} }}}}"
            self.ctx.dynamic(self.classify(child, st), text, loc, st.flags, st.via)

    # Expressions --------------------------------------------------------------------------------

    def classify(self, e: nodes.Node, st: State) -> Binding:
        """What an expression renders: static, or a dynamic value with its kind."""
        if isinstance(e, nodes.Filter) and e.name in FILTER_KINDS:
            return Binding(static=False, kind=FILTER_KINDS[e.name], label=f"| {e.name}", confidence=0.9)
        if not isinstance(e, nodes.Name):
            try:
                const: Any = e.as_const(self.evalctx)
            except Exception:  # jinja raises Impossible or the evaluation's own error
                pass
            else:
                return Binding(static=True, timing=Timing.STATIC, text="" if const is None else str(const))
        if isinstance(e, nodes.Name):
            return self.lookup(e.name, st)
        if isinstance(e, (nodes.Getattr, nodes.Getitem)):
            return self._classify_attr(e, st)
        if isinstance(e, nodes.Call):
            return self._classify_call(e, st)
        if isinstance(e, nodes.Filter):
            parts = [self.classify(e.node, st)] if e.node is not None else []
            parts += [self.classify(c, st) for c in _expr_children(e) if c is not e.node]
            return combine(parts)
        return combine(self.classify(c, st) for c in _expr_children(e))

    def lookup(self, name: str, st: State) -> Binding:
        found = st.scope.get(name)
        if isinstance(found, Binding):
            return found
        if found is not None:
            return STATIC  # a macro or an imported module used as a value
        if name in self.ctx.bindings:
            return self.ctx.bound(name)  # type: ignore[return-value]
        if name in STATIC_GLOBALS or name in ("loop", "caller", "self", "super"):
            return STATIC
        return name_binding(name, self.ctx.catalog)

    def _classify_attr(self, e: nodes.Getattr | nodes.Getitem, st: State) -> Binding:
        dotted = _dotted(e)
        if dotted is not None:
            found = st.scope.get(dotted)
            if isinstance(found, Binding):
                return found
            if dotted in self.ctx.bindings:
                return self.ctx.bound(dotted)  # type: ignore[return-value]
        root = _root_name(e)
        bound = root is not None and (root in st.scope or root in self.ctx.bindings)
        fixed = run_fixed_binding(dotted, self.ctx.catalog, bound) if dotted is not None else None
        if fixed is not None:
            return fixed
        if bound:
            return self.lookup(root, st)  # type: ignore[arg-type]
        if dotted is not None and root not in STATIC_GLOBALS:
            by_name = name_binding(dotted, self.ctx.catalog)
            if by_name.kind is not DynamicKind.UNKNOWN:
                return by_name
        parts = [self.classify(e.node, st)]
        if isinstance(e, nodes.Getitem):
            parts.append(self.classify(e.arg, st))
        value = combine(parts)
        if value.kind is DynamicKind.UNKNOWN and dotted:
            value = value.relabel(dotted)
        return value

    def _classify_call(self, e: nodes.Call, st: State) -> Binding:
        dotted = _dotted(e.node)
        root = _root_name(e.node)
        if dotted and not (root and (root in st.scope or root in self.ctx.bindings)):
            by_call = call_binding(dotted, self.ctx.catalog)
            if by_call is not None:
                return by_call
        args = [self.classify(c, st) for c in _expr_children(e) if c is not e.node]
        macro = self._lookup_macro(e.node, st)
        if macro is not None:
            with self._capture() as captured:
                expanded = self._call_macro(macro, e, st, self._loc(st, e))
            return _value_of(captured) if expanded else combine(args)
        if isinstance(e.node, nodes.Name):
            name = e.node.name
            if name in st.scope or name in self.ctx.bindings or name in STATIC_GLOBALS:
                callee = self.lookup(name, st)
            else:
                callee = name_binding(name, self.ctx.catalog)
                if callee.kind is DynamicKind.UNKNOWN:
                    callee = callee.relabel(f"{name}()") if not args else STATIC
        else:
            callee = self.classify(e.node, st)
        return combine([callee, *args])
