"""The text evaluator: what string an expression builds, as ordered static and dynamic pieces.

:class:`Evaluator` follows f-strings, ``+``/``+=``, ``join``, ``format``/``%``/``Template``, Jinja
renders and prompt files, local assignments, module constants, ``self`` attributes, dataclass fields,
helper functions (with their arguments bound) and imports from other modules of the project. Each
dynamic piece carries its kind, when it is computed, where it comes from and the chain of locations
it travelled through. Message lists and tools live in :mod:`.messages`.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Mapping
from typing import NamedTuple

import libcst as cst

from prefixlint.analysis.catalog import Catalog
from prefixlint.analysis.python import branches, fixes, records, timegrain
from prefixlint.analysis.python.callers import param_from_callers
from prefixlint.analysis.python.collect import ClassInfo, ModuleInfo, evaluated, resolved
from prefixlint.analysis.python.constants import table_item
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.fills import replace_call
from prefixlint.analysis.python.kinds import CONVERSIONS, KindsMixin, is_empty_container
from prefixlint.analysis.python.lazy_binds import LazyBindings, bound_args
from prefixlint.analysis.python.memo import TextMemo
from prefixlint.analysis.python.messages import MessagesMixin, _target_names
from prefixlint.analysis.python.objects import class_of
from prefixlint.analysis.python.pieces import decode_literal
from prefixlint.analysis.python.project import ProjectContext, def_pattern
from prefixlint.analysis.python.resolve import annotation_name, find_param, local_ops, ops_before, rebound_ops
from prefixlint.analysis.python.sources import (
    GATHER,
    PASS_THROUGH_FUNCS,
    PASS_THROUGH_METHODS,
    SET_TYPES,
    call_kind,
    dotted_name,
    dynamic,
    is_static,
    join_text,
    mark,
    name_kind,
    named,
    static,
    with_chain,
)
from prefixlint.analysis.python.templating import TemplateMixin
from prefixlint.analysis.result import AnalysisError
from prefixlint.model.layout import (
    Cardinality,
    DynamicKind,
    Nondeterminism,
    Segment,
    SourceLocation,
    Timing,
    evolve,
)
from prefixlint.model.settings import Settings

MAX_DEPTH = 12


class FnRef(NamedTuple):
    """A project function a call refers to, its class, and the instance's ``__init__`` bindings."""

    fdef: cst.FunctionDef
    mod: ModuleInfo
    cls: ClassInfo | None
    self_binds: Mapping[str, list[Segment]] | None = None


__all__ = ["MAX_DEPTH", "Env", "Evaluator"]


class Evaluator(TemplateMixin, MessagesMixin, KindsMixin):
    """Evaluates expressions of one file (and the project modules it reaches) to segment lists."""

    def __init__(self, project: ProjectContext, settings: Settings, catalog: Catalog) -> None:
        self.project = project
        self.settings = settings
        self.catalog = catalog
        self.dependencies: set[str] = set()
        self.errors: list[AnalysisError] = []
        self._const_cache: dict[tuple[str, str], list[Segment]] = {}
        self._const_busy: set[tuple[str, str]] = set()  # constants being evaluated (a cycle)
        self.memo = TextMemo()
        # Template style of the sink being evaluated (LangChain templates); "" for plain strings.
        self.template_mode = ""

    # entry points -------------------------------------------------------------------------------
    def module_env(self, mod: ModuleInfo) -> Env:
        return Env(mod=mod, timing=Timing.PROCESS)

    def text(self, node: cst.CSTNode, env: Env) -> list[Segment]:
        """Pieces of the string ``node`` evaluates to."""
        if env.depth > MAX_DEPTH:
            return [dynamic(DynamicKind.UNKNOWN, _unknown(env), "...", env.mod.loc(node), confidence=0.3)]
        forced = self._forced_templates
        key = self.memo.key(node, env, (self.template_mode, tuple(forced.items()) if forced else ()))
        hit = self.memo.get(key)
        if hit is not None:
            segs, choices = hit
            for choice in choices:
                self.record_choice(choice)
            return segs
        mark = self.memo.mark()
        method = getattr(self, "_t_" + type(node).__name__, None)
        segs = method(node, env) if method is not None else self._opaque(node, env)
        self.memo.put(key, (node, env), segs, mark)
        return segs

    # literals -----------------------------------------------------------------------------------
    def _t_SimpleString(self, node: cst.SimpleString, env: Env) -> list[Segment]:
        val = evaluated(node)
        if isinstance(val, bytes):
            val = val.decode("utf-8", "replace")
        return [static(val, env.mod.loc(node))]

    def _t_ConcatenatedString(self, node: cst.ConcatenatedString, env: Env) -> list[Segment]:
        return self.text(node.left, env) + self.text(node.right, env)

    def _t_Integer(self, node: cst.Integer, env: Env) -> list[Segment]:
        return [static(node.value, env.mod.loc(node))]

    _t_Float = _t_Integer

    def _t_FormattedString(self, node: cst.FormattedString, env: Env) -> list[Segment]:
        out: list[Segment] = []
        quote = node.end
        prefix = node.start[: -len(quote)].replace("f", "").replace("F", "")
        raw = "r" in prefix.lower()
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(static(decode_literal(part.value, prefix, quote, raw), env.mod.loc(part)))
            elif isinstance(part, cst.FormattedStringExpression):
                segs = self.text(part.expression, env)
                spec = part.format_spec
                if spec and all(isinstance(p, cst.FormattedStringText) for p in spec):
                    spec_text = "".join(p.value for p in spec)  # type: ignore[union-attr]
                    label = env.mod.source(part.expression)[:60]
                    segs = self.format_spec_step(segs, spec_text, label, env.mod.loc(part.expression))
                # ``{x}`` with no conversion and no spec is ``format(x, "")``: ``str(x)`` unless the
                # class has its own ``__format__``
                conv = part.conversion or ("" if spec else "s")
                if conv in ("r", "s") and self._address_repr(part.expression, env, conv):
                    segs = [static(env.mod.source(part), env.mod.loc(part))]
                    segs = [evolve(segs[0], nondeterminism=Nondeterminism.MEMORY_ADDRESS)]
                if not is_static(segs):
                    fix = fixes.move_line_to_end_fix(env.mod, node, part)
                    if fix is not None:
                        segs = [s if s.static or s.fixes else evolve(s, fixes=(fix,)) for s in segs]
                out.extend(segs)
        return out

    def _t_BinaryOperation(self, node: cst.BinaryOperation, env: Env) -> list[Segment]:
        op = node.operator
        if isinstance(op, cst.Add):
            left, right = self.text(node.left, env), self.text(node.right, env)
            if not is_static(left) and is_static(right) and any(s.static for s in right):
                fix = fixes.swap_concat_fix(env.mod, node)
                if fix is not None:
                    left = [s if s.static or s.fixes else evolve(s, fixes=(fix,)) for s in left]
            return left + right
        if isinstance(op, cst.Multiply):
            repeated = _repetition(node)
            if repeated is not None:
                operand, count = repeated
                segs = self.text(operand, env)
                if is_static(segs):  # "rule. " * 40
                    text = join_text(segs)
                    count = min(count, MAX_REPEATED_CHARS // max(1, len(text)))
                    return [static(text * count, env.mod.loc(node))]
                return mark(segs, repeated=True)
        if isinstance(op, cst.Modulo):
            tmpl = self.template_source(node.left, env)
            if tmpl is not None:
                right = node.right
                binds: dict[str, list[Segment]] = {}
                if isinstance(right, cst.Tuple):
                    for i, el in enumerate(right.elements):
                        binds[str(i)] = self.text(el.value, env)
                elif isinstance(right, cst.Dict):
                    binds.update(self._dict_binds(right, env))
                else:
                    binds["0"] = self.text(right, env)
                return self.render(tmpl, "percent", binds, env, node)
        if isinstance(op, (cst.Subtract, cst.Divide, cst.FloorDivide, cst.Multiply, cst.Power, cst.Modulo)):
            return self.arithmetic_step(node, env)
        return self._opaque(node, env)

    def _t_IfExp(self, node: cst.IfExp, env: Env) -> list[Segment]:
        body, orelse = self.text(node.body, env), self.text(node.orelse, env)
        if is_static(body) and is_static(orelse):
            return body if len(join_text(body)) >= len(join_text(orelse)) else orelse
        return mark(body if not is_static(body) else orelse, conditional=True)

    def _t_BooleanOperation(self, node: cst.BooleanOperation, env: Env) -> list[Segment]:
        left = self.text(node.left, env)
        right = self.text(node.right, env)
        return left if not is_static(left) or is_static(right) else mark(right, conditional=True)

    def _t_Await(self, node: cst.Await, env: Env) -> list[Segment]:
        return self.text(node.expression, env)

    # names --------------------------------------------------------------------------------------
    def _t_Name(self, node: cst.Name, env: Env) -> list[Segment]:
        name = node.value
        loc = env.mod.loc(node)
        if name in env.bindings:
            # a helper's parameter: the value passes through its use here (the line a user moves)
            before = self._param_reassignments(name, env)
            if before:  # ``t = t.replace(...)``, ``if t is None: t = DEFAULT``: from the caller's value on
                return with_chain(self._replay_text(before, env, seed=env.bindings[name]), loc)
            return with_chain(env.bindings[name], loc)
        looped = self._comprehension_item(node, env)
        if looped is not None:  # ``[ask(context=d) for d in chunks]``: ``d`` is an item of ``chunks``
            return with_chain(looped, loc)
        if env.func is not None:
            ops = local_ops(env.mod, env.func).get(name)
            if ops:
                before = ops_before(ops, env.pos)
                if before:
                    return with_chain(self._replay_text(before, env), loc)
            param = find_param(env.func, name)
            if param is not None:
                return self._param(param, env, loc)
            outer = env.mod.enclosing.get(id(env.func))
            if outer is not None and (local_ops(env.mod, outer).get(name) or find_param(outer, name)):
                # a closure's free name: its value in the enclosing function, where the ``def`` is
                at = env.mod.pos(env.func)
                return with_chain(self.text(node, evolve(env, func=outer, pos=at, bindings={})), loc)
        if name in env.mod.assigns:
            rebound = rebound_ops(env.mod, name) if env.func is None else None
            before = ops_before(rebound, env.pos) if rebound else None
            if before:  # ``SYSTEM = SYSTEM + RULES`` at module level: the value it has there
                return with_chain(self._replay_text(before, env), loc)
            return with_chain(self.constant(env.mod, name), loc)
        if name in env.mod.imports:
            got = self._imported_text(env.mod, name, env)
            if got is not None:
                return with_chain(got, loc)
        if name in ("True", "False", "None"):
            return [static(name, loc)]
        if name == "__file__":
            return [static(env.mod.path, loc)]
        # an unresolved free name (builtin, star import...): only its name can say it is dynamic
        kind, conf = name_kind(self.catalog, name)
        if kind is DynamicKind.UNKNOWN:
            return [dynamic(kind, _unknown(env), name, loc, confidence=0.3)]
        return [named(self.catalog, kind, env.timing, name, name, loc, confidence=min(conf, 0.6))]

    def _comprehension_item(self, node: cst.Name, env: Env) -> list[Segment] | None:
        """An item of the sequence when ``node`` is a name bound by an enclosing comprehension's
        ``for`` (the innermost that binds it), else None."""
        parent = env.mod.parents.get(id(node))
        while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                comp: cst.CompFor | None = parent.for_in
                while comp is not None:
                    if node.value in _target_names(comp.target) and not _inside(comp.iter, node):
                        return _first_dynamic_item(self.items(comp.iter, env))
                    comp = comp.inner_for_in
            parent = env.mod.parents.get(id(parent))
        return None

    def _param_reassignments(self, name: str, env: Env) -> list:
        """The assignments to a bound parameter before this use (none: the caller's value stands)."""
        if env.func is None or find_param(env.func, name) is None:
            return []
        before = ops_before(local_ops(env.mod, env.func).get(name) or [], env.pos)
        return before if any(op.kind in ("assign", "aug") for op in before) else []

    def _reassigned_param(self, name: str, env: Env) -> bool:
        """True when a bound parameter was set again before this use (``t = t.replace(...)``)."""
        return bool(self._param_reassignments(name, env))

    def constant(self, mod: ModuleInfo, name: str) -> list[Segment]:
        """A module-level constant, evaluated once (import time)."""
        key = (mod.path, name)
        if key in self._const_cache:
            if key in self._const_busy:
                self.memo.unsettled()
            return self._const_cache[key]
        self._const_cache[key] = [dynamic(DynamicKind.UNKNOWN, Timing.PROCESS, name, None, confidence=0.3)]
        self._const_busy.add(key)
        rebound = rebound_ops(mod, name)
        try:
            if rebound:  # assigned, then changed: its final value, built in source order
                segs = self._replay_text(ops_before(rebound, sys.maxsize), self.module_env(mod))
            else:
                value = mod.assigns[name]
                segs = self.text(value, self.module_env(mod).at(mod.pos(value)))
        finally:
            self._const_busy.discard(key)
        self._const_cache[key] = segs
        return segs

    def _imported(self, mod: ModuleInfo, name: str) -> tuple[ModuleInfo, str | None] | None:
        module, attr, level = mod.imports[name]
        for dotted, wanted in _import_candidates(module, attr):
            target = self.project.resolve_import(mod.path, dotted, level)
            if target is not None and (
                wanted is None
                or wanted in target.assigns
                or wanted in target.functions
                or wanted in target.classes
            ):
                self.dependencies.add(target.path)
                return target, wanted
        return None

    def _imported_defining(
        self, mod: ModuleInfo, name: str, fname: str | None
    ) -> tuple[ModuleInfo, str | None] | None:
        """:meth:`_imported`, or None unparsed when no file ``name`` may come from has ``def fname``.

        A caller that only wants a function (or method) ``fname`` of the imported thing learns
        nothing from a module without that ``def``: its text is tested before it is parsed. The
        files tested stay dependencies (one that gains the ``def`` changes the answer).
        """
        module, attr, level = mod.imports[name]
        files = [
            self.project.module_file(mod.path, dotted, level)
            for dotted, _ in _import_candidates(module, attr)
        ]
        found = [f for f in files if f is not None]
        if fname is not None:
            pattern = def_pattern(fname)
            if any(self.project.may_hold(f, pattern) for f in found):
                return self._imported(mod, name)
        self.dependencies.update(resolved(str(f)) for f in found)
        return None

    def _imported_text(self, mod: ModuleInfo, name: str, env: Env) -> list[Segment] | None:
        got = self._imported(mod, name)
        if got is None:
            return None
        target, attr = got
        if attr is not None and attr in target.assigns:
            return self.constant(target, attr)
        return None

    def _param(self, param: cst.Param, env: Env, use: SourceLocation | None = None) -> list[Segment]:
        """A parameter nobody bound: its default (evaluated at def time), or a value named like it."""
        name = param.name.value
        ploc = env.mod.loc(param)
        got = param_from_callers(self, param, env, use)  # what the project's callers pass
        if got is not None:
            return got
        if param.default is not None:
            return self.text(param.default, evolve(env, timing=Timing.PROCESS, func=None, bindings={}))
        kind, conf = name_kind(self.catalog, name)
        chain = (ploc,) if ploc is not None and use is not None else ()
        # No caller in view (an entry point): only a name that says what it holds (``session_id``,
        # ``question``) makes it per request; otherwise its nature is not known.
        timing = Timing.UNKNOWN if kind is DynamicKind.UNKNOWN else Timing.REQUEST
        seg = named(self.catalog, kind, timing, name, name, use or ploc, confidence=conf, chain=chain)
        # a config object is a process value; a bool, Literal or Enum takes a few values
        timing2, card = self.param_traits(param, env)
        if timing2 is not None or card is not None:
            seg = evolve(seg, timing=timing2 or seg.timing, cardinality=card or seg.cardinality)
        return [seg]

    def _replay_text(self, ops: list, env: Env, seed: list[Segment] | None = None) -> list[Segment]:
        segs: list[Segment] = list(seed or ())
        for op in ops:
            if op.conditional and branches.dead(self, op, env):
                continue  # under ``if flag:`` with ``flag`` false for this call
            sub = env.at(op.pos)
            if op.kind == "assign":
                new = self.text(op.value, sub)
                if op.conditional and segs and not is_static(segs) and is_static(new):
                    # ``if c: s = f"{now}..."`` / ``else: s = "..."``: the value may still be the
                    # dynamic one, which a static branch does not make safe
                    segs = mark(segs, conditional=True)
                elif op.conditional and segs and not is_static(new):
                    segs = mark(new, conditional=True)
                else:
                    segs = new
            elif op.kind == "aug":
                add = self.text(op.value, sub)
                if op.conditional:
                    add = mark(add, conditional=True)
                if op.loop_iter is not None:
                    add = mark(add, repeated=True)
                segs = segs + add
            elif op.kind == "for":
                items = self.items(op.value, sub)
                segs = _first_dynamic_item(items)
            elif op.kind in ("append", "extend", "insert"):
                segs = segs + self.text(op.value, sub)
        return segs

    # attributes and subscripts -----------------------------------------------------------------
    def _t_Attribute(self, node: cst.Attribute, env: Env) -> list[Segment]:
        segs = self._attribute(node, env)
        if is_static(segs):
            return segs
        if self.from_config(node.value, env):
            # ``self.config.max_steps``, ``settings.BOT_NAME``: read from configuration fixed at start-up
            return self.process_value(node, env)
        return self.time_field_step(node.attr.value, segs)

    def _attribute(self, node: cst.Attribute, env: Env) -> list[Segment]:
        loc = env.mod.loc(node)
        attr = node.attr.value
        base = node.value
        dotted = dotted_name(node)
        kind = call_kind(self.catalog, dotted, self._aliases(env.mod))
        if kind is not None:
            return [dynamic(kind, env.timing, dotted, loc)]
        if isinstance(base, cst.Name):
            if base.value == "self" and env.cls is not None:
                got = self._self_attr(env.cls, attr, env)
                if got is not None:
                    return with_chain(got, loc)
            if base.value in ("self", "cls") and base.value not in env.bindings:
                # an attribute set where the analyzer does not look: only its name can tell
                kind3, conf3 = name_kind(self.catalog, attr)
                timing = env.timing if kind3 is not DynamicKind.UNKNOWN else _unknown(env)
                return [named(self.catalog, kind3, timing, attr, env.mod.source(node), loc, confidence=conf3)]
            cls = self._class_of(base.value, env)
            if cls is not None:
                got = self._field(cls[0], cls[1], attr, env)
                if got is not None:
                    return with_chain(got, loc)
            if base.value in env.mod.imports and base.value not in env.bindings:
                got_mod = self._imported(env.mod, base.value)
                if got_mod is not None and got_mod[1] is None and attr in got_mod[0].assigns:
                    return with_chain(self.constant(got_mod[0], attr), loc)
            if self._known_value(base.value, env):
                # a bound loop variable or a local/module value: its attribute is what it is
                return self._attribute_of(node, base, env, loc)
        kind2, conf = name_kind(self.catalog, attr)
        if kind2 is DynamicKind.UNKNOWN:
            return self._attribute_of(node, base, env, loc)
        return [named(self.catalog, kind2, env.timing, attr, env.mod.source(node), loc, confidence=conf)]

    def _attribute_of(
        self, node: cst.Attribute, base: cst.BaseExpression, env: Env, loc: SourceLocation
    ) -> list[Segment]:
        """``base.attr`` is as static or dynamic as ``base`` itself (with the base's kind and timing)."""
        base_segs = self.text(base, env)
        if is_static(base_segs):
            return [static(env.mod.source(node), loc)]
        d = next(s for s in base_segs if not s.static)
        if d.attributes:  # an object built by a constructor in view: the argument bound to ``attr``
            return records.attribute(d, node.attr.value, env.mod.source(node), loc)
        kind = d.kind or DynamicKind.UNKNOWN
        seg = named(
            self.catalog,
            kind,
            d.timing,
            node.attr.value,
            env.mod.source(node),
            loc,
            confidence=d.confidence,
            chain=d.chain,
        )
        if seg.cardinality is None and d.cardinality is not None:
            seg = evolve(seg, cardinality=d.cardinality)  # ``user.email``: as many texts as users
        if d.kind is DynamicKind.TIMESTAMP:
            seg = evolve(seg, granularity=d.granularity, cardinality=d.cardinality)
        return [seg]

    def _known_value(self, name: str, env: Env) -> bool:
        """True when ``name`` is bound, assigned locally, or a module constant (not a bare parameter)."""
        if name in env.bindings:
            return True
        if env.func is not None and local_ops(env.mod, env.func).get(name):
            return True
        if env.func is not None and find_param(env.func, name) is not None:
            return False
        return name in env.mod.assigns

    def _self_attr(self, cls: ClassInfo, attr: str, env: Env) -> list[Segment] | None:
        init = cls.methods.get("__init__")
        if attr in cls.init_attrs and init is not None:
            value = cls.init_attrs[attr]
            if is_empty_container(value):
                grown = self.grown_attr(cls, attr, env)  # filled by the class's methods at run time
                if grown is not None:
                    return grown
            sub_env = env.deeper(
                func=init, cls=cls, bindings=dict(env.self_binds), pos=env.mod.pos(value) + 1
            )
            return self.text(value, sub_env)
        if attr in cls.fields:
            return self._field(cls, env.mod, attr, env)
        if attr in cls.methods:
            return None
        return None

    def _class_of(self, var: str, env: Env) -> tuple[ClassInfo, ModuleInfo] | None:
        """The class of a parameter from its annotation (``ctx: RequestContext``)."""
        if env.func is None:
            return None
        param = find_param(env.func, var)
        if param is None:
            return None
        cname = annotation_name(param)
        if not cname:
            return None
        if cname in env.mod.classes:
            return env.mod.classes[cname], env.mod
        if cname in env.mod.imports:
            got = self._imported(env.mod, cname)
            if got is not None and got[1] in got[0].classes:
                return got[0].classes[got[1]], got[0]
        return None

    def _field(self, cls: ClassInfo, mod: ModuleInfo, attr: str, env: Env) -> list[Segment] | None:
        if attr not in cls.fields:
            if attr in cls.init_attrs:
                return self._self_attr(cls, attr, env)
            return None
        value = cls.fields[attr]
        loc = mod.loc(value) if value is not None else None
        if isinstance(value, cst.Call) and dotted_name(value.func).endswith("field"):
            for arg in value.args:
                kw = arg.keyword.value if arg.keyword else ""
                if kw == "default_factory":
                    fac = dotted_name(arg.value)
                    kind = call_kind(self.catalog, fac, self._aliases(mod))
                    if kind is not None:
                        grain = self.catalog.granularity_of_call(fac)
                        return [
                            dynamic(
                                kind,
                                Timing.REQUEST,
                                f"{attr} = field(default_factory={fac})",
                                mod.loc(arg.value),
                                granularity=grain,
                                cardinality=self.catalog.cardinality_of_call(fac)
                                or timegrain.cardinality_of(grain),
                            )
                        ]
                    return [
                        dynamic(*name_kind(self.catalog, attr)[:1], Timing.REQUEST, attr, loc, confidence=0.6)
                    ]
                if kw == "default":
                    if _is_none(arg.value):  # a placeholder: the instance's own value is set later
                        kind, conf = name_kind(self.catalog, attr)
                        return [dynamic(kind, Timing.REQUEST, attr, loc, confidence=min(conf, 0.6) or 0.6)]
                    return self.text(arg.value, self.module_env(mod))
        if value is None or _is_none(value):
            # set by whoever makes the object: only the field's name can tell
            kind, conf = name_kind(self.catalog, attr)
            timing = Timing.REQUEST if kind is not DynamicKind.UNKNOWN else _unknown(env)
            return [
                named(self.catalog, kind, timing, attr, attr, loc or mod.loc(cls.node.name), confidence=conf)
            ]
        return self.text(value, self.module_env(mod))

    def _t_Subscript(self, node: cst.Subscript, env: Env) -> list[Segment]:
        loc = env.mod.loc(node)
        dotted = dotted_name(node.value)
        if dotted in ("os.environ", "environ"):
            # ``os.environ["X"]``: configuration, fixed for the process
            return self.process_value(node, env, DynamicKind.ENVIRONMENT)
        kind = call_kind(self.catalog, dotted, self._aliases(env.mod))
        if kind is not None:
            return [dynamic(kind, env.timing, env.mod.source(node), loc)]
        item = table_item(self, node, env)
        if item is not None:  # ``PROMPTS["qa"]``: an item of a module-level table
            value, tmod = item
            return with_chain(self.text(value, self.module_env(tmod).at(tmod.pos(value))), loc)
        key = node.slice[0].slice if node.slice else None
        base = self.text(node.value, env)
        if is_static(base):
            return [static(env.mod.source(node), loc)]
        if self.from_config(node.value, env):
            return self.process_value(node, env)
        if isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString):
            name = evaluated(key.value)
            if isinstance(name, str):
                k, conf = name_kind(self.catalog, name)
                if k is not DynamicKind.UNKNOWN:
                    return [
                        named(self.catalog, k, env.timing, name, env.mod.source(node), loc, confidence=conf)
                    ]
        return self.slice_step(node, base)

    # calls --------------------------------------------------------------------------------------
    def _aliases(self, mod: ModuleInfo) -> dict[str, str]:
        out = {}
        for local, (module, attr, level) in mod.imports.items():
            if level == 0:
                out[local] = f"{module}.{attr}" if attr else module
        return out

    def _t_Call(self, node: cst.Call, env: Env) -> list[Segment]:
        loc = env.mod.loc(node)
        func = node.func
        dotted = dotted_name(func)
        last = dotted.rsplit(".", 1)[-1]
        args = node.args
        if isinstance(func, cst.Attribute):
            meth = func.attr.value
            recv = func.value
            if meth in ("format", "format_map"):
                return self._format_call(node, recv, env)
            if meth == "replace":
                # a known template (chained replaces too) first, then any text that holds the marker
                got = self.replace_fill(node, env) or replace_call(self, node, recv, env)
                if got is not None:
                    return got
            if meth == "join" and args:
                sep = self.text(recv, env)
                items = self.items(args[0].value, env)
                out: list[Segment] = []
                for i, item in enumerate(items):
                    if i:
                        out.extend(sep)
                    out.extend(item)
                return out
            if meth in ("substitute", "safe_substitute"):
                inner = recv.args[0].value if isinstance(recv, cst.Call) and recv.args else recv
                tmpl = self.template_source(inner, env)
                if tmpl is not None:
                    return self.render(tmpl, "dollar", self._call_binds(node, env), env, node)
            if meth == "render":
                got = self._jinja_render(node, recv, env)
                if got is not None:
                    return got
            if meth in ("read_text", "read"):
                got = self.file_text(node, env)
                if got is not None:
                    return got
        kind = call_kind(self.catalog, dotted, self._aliases(env.mod))
        local_fn = self._function_for(func, env)
        if local_fn is None:
            got = self._source_call(node, dotted, kind, env)
            if got is not None:
                return got
        if local_fn is not None:
            return with_chain(self.call_function(*local_fn[:3], node, env, "text", local_fn.self_binds), loc)
        built = records.record(self, node, env)
        if built is not None:  # ``Result(answer=..., seconds=...)``: each attribute holds its argument
            return built
        if dotted in ("json.dumps", "dumps") or dotted.endswith(".dumps"):
            return self._json_dumps(node, env)
        if (
            last in ("repr", "str", "id")
            and len(dotted.split(".")) == 1
            and args
            and (last == "id" or self._address_repr(args[0].value, env, "r" if last == "repr" else "s"))
        ):
            seg = static(env.mod.source(node), loc)
            return [evolve(seg, nondeterminism=Nondeterminism.MEMORY_ADDRESS)]
        if isinstance(func, cst.Attribute):
            got = self._method_call(node, func, env)
            if got is not None:
                return got
        if dotted in PASS_THROUGH_FUNCS and args:
            segs = self.text(args[0].value, env)
            if is_static(segs) and last in ("dedent", "cleandoc"):
                return [static(textwrap.dedent(join_text(segs)), loc)]
            if is_static(segs) or last not in CONVERSIONS:
                return segs
            return self.conversion(node, last, env)
        if last in ("sorted", "list", "tuple") and args:
            return self.text(args[0].value, env)
        if dotted in GATHER and args:  # ``await asyncio.gather(*calls)``: the list of their results
            return [s for arg in args for s in self.text(arg.value, env)]
        if last == "Path" or dotted.endswith("path.join"):
            return [static(env.mod.source(node), loc)]
        if dotted in CONVERSIONS and args:
            return self.conversion(node, last, env)
        kind2, conf = name_kind(self.catalog, last)
        if kind2 is not DynamicKind.UNKNOWN and kind2 not in (DynamicKind.USER_INPUT,):
            # ``get_current_date()`` from a library: the function's name says what it returns
            return [
                named(
                    self.catalog,
                    kind2,
                    env.timing,
                    last,
                    env.mod.source(node),
                    loc,
                    confidence=min(conf, 0.6),
                )
            ]
        return self.unknown_call(node, env)

    def _source_call(
        self, node: cst.Call, dotted: str, kind: DynamicKind | None, env: Env
    ) -> list[Segment] | None:
        """A call the catalog knows: a source of dynamic values, a retriever's method, or configuration."""
        loc = env.mod.loc(node)
        if kind is DynamicKind.ENVIRONMENT and _env_var(dotted):
            # an environment variable: configuration, the same for every request of a deploy
            return self.process_value(node, env, DynamicKind.ENVIRONMENT)
        if kind is not None:
            grain, card = self.source_traits(node, dotted, kind, env)
            return [dynamic(kind, env.timing, env.mod.source(node), loc, granularity=grain, cardinality=card)]
        if isinstance(node.func, cst.Attribute):
            spec = self.object_source(node.func, env)
            if spec is not None:
                return [
                    dynamic(
                        spec.kind,
                        env.timing,
                        env.mod.source(node)[:60],
                        loc,
                        cardinality=Cardinality.PER_REQUEST,
                    )
                ]
        if self.is_process_call(dotted, env):
            return self.process_value(node, env)
        return None

    def _method_call(self, node: cst.Call, func: cst.Attribute, env: Env) -> list[Segment] | None:
        """A method of a value: string methods, time formatting, ``.get(key)``; None for other methods."""
        meth = func.attr.value
        if meth not in PASS_THROUGH_METHODS and not self.known_method(meth):
            return None
        loc = env.mod.loc(node)
        segs = self.text(func.value, env)  # once: a chain of methods must not evaluate its head again
        if is_static(segs):
            if meth in PASS_THROUGH_METHODS:
                return [static(_apply_method(join_text(segs), meth), loc)]
            return [static(env.mod.source(node), loc)]
        if meth == "get" and node.args and isinstance(node.args[0].value, cst.SimpleString):
            if self.from_config(func.value, env):
                return self.process_value(node, env)
            if env.timing is not Timing.PROCESS and all(s.static or s.timing is Timing.PROCESS for s in segs):
                # ``store.get("k")`` on an object made at start-up: read at run time, nature not known
                return [
                    dynamic(
                        DynamicKind.UNKNOWN, Timing.UNKNOWN, env.mod.source(node)[:60], loc, confidence=0.4
                    )
                ]
            key = evaluated(node.args[0].value)
            if isinstance(key, str):
                k, conf = name_kind(self.catalog, key)
                if k is not DynamicKind.UNKNOWN:
                    return [
                        named(self.catalog, k, env.timing, key, env.mod.source(node), loc, confidence=conf)
                    ]
            return segs
        if meth == "replace" and any(a.keyword is not None for a in node.args):
            return self.replace_step(node, segs)
        got = self.method_step(node, meth, segs, env)
        return got if got is not None else segs

    def _instance(
        self, name: str, env: Env
    ) -> tuple[ClassInfo, ModuleInfo, Mapping[str, list[Segment]]] | None:
        """The class of ``name = SomeClass(...)`` (local or module level) and its ``__init__`` bindings."""
        value, venv = None, env
        if env.func is not None:
            ops = local_ops(env.mod, env.func).get(name)
            if ops:
                before = ops_before(ops, env.pos)
                if not before or before[-1].kind != "assign":
                    return None
                value, venv = before[-1].value, env.at(before[-1].pos)
        if value is None and name in env.mod.assigns:
            value = env.mod.assigns[name]
            venv = self.module_env(env.mod).at(env.mod.pos(value))
        return self._constructed(value, venv)

    def _constructed(
        self, value: cst.BaseExpression | None, venv: Env
    ) -> tuple[ClassInfo, ModuleInfo, Mapping[str, list[Segment]]] | None:
        """The project class that ``SomeClass(...)`` (or ``module.SomeClass(...)``) makes, and its
        ``__init__`` bindings."""
        if not isinstance(value, cst.Call):
            return None
        found = records.constructor_class(self, value, venv)  # ``Bot(...)``, ``bots.Bot(...)``
        if found is None:
            return None
        init = found[0].methods.get("__init__")
        binds = self.bind_args(init, value, venv, skip_self=True) if init is not None else {}
        return found[0], found[1], binds

    def _function_for(self, func: cst.BaseExpression, env: Env) -> FnRef | None:
        """A function of this project that a call refers to: local, method of self, or imported."""
        mod = env.mod
        if isinstance(func, cst.Name):
            name = func.value
            if env.func is not None and name in local_ops(mod, env.func):
                return None
            inner = _inner_function(mod, env.func, name)
            if inner is not None:  # ``async def _one(x): ...`` defined in the caller's body
                return FnRef(inner, mod, None)
            if name in mod.functions:
                return FnRef(mod.functions[name], mod, None)
            if name in mod.imports:
                got = self._imported_defining(mod, name, mod.imports[name][1])
                if got is not None and got[1] in got[0].functions:
                    return FnRef(got[0].functions[got[1]], got[0], None)
            return None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            base, attr = func.value.value, func.attr.value
            if base in ("self", "cls") and env.cls is not None and attr in env.cls.methods:
                return FnRef(env.cls.methods[attr], mod, env.cls, env.self_binds)
            if base in mod.classes and attr in mod.classes[base].methods:
                return FnRef(mod.classes[base].methods[attr], mod, mod.classes[base])
            if base in mod.imports and base not in env.bindings:
                got = self._imported_defining(mod, base, attr)
                if got is not None and got[1] is None and attr in got[0].functions:
                    return FnRef(got[0].functions[attr], got[0], None)
                if got is not None and got[1] in got[0].classes and attr in got[0].classes[got[1]].methods:
                    # ``Builder.fill(...)``: a static or class method of an imported class
                    cls = got[0].classes[got[1]]
                    method = cls.methods[attr]
                    if any(
                        dotted_name(d.decorator) in ("staticmethod", "classmethod") for d in method.decorators
                    ):
                        return FnRef(method, got[0], cls)
            if base not in env.bindings and base != "self":
                inst = self._instance(base, env)
                if inst is not None and attr in inst[0].methods:
                    return FnRef(inst[0].methods[attr], inst[1], inst[0], inst[2])
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
            # ``Bot(config).ask(q)``: a method of the object made right there
            made = self._constructed(func.value, env)
            if made is not None and func.attr.value in made[0].methods:
                return FnRef(made[0].methods[func.attr.value], made[1], made[0], made[2])
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute):
            # ``self.helper.build()``: a method of the class the attribute is declared with
            owner = class_of(self, func.value, env)
            if owner is not None and func.attr.value in owner[0].methods:
                return FnRef(owner[0].methods[func.attr.value], owner[1], owner[0])
        return None

    def bind_args(self, fdef: cst.FunctionDef, call: cst.Call, env: Env, skip_self: bool) -> LazyBindings:
        """The call's arguments by parameter name, each evaluated where the call is when first read."""
        return LazyBindings(self, env, bound_args(fdef, call, skip_self, env.mod.star_args))

    def call_function(
        self,
        fdef: cst.FunctionDef,
        fmod: ModuleInfo,
        cls: ClassInfo | None,
        call: cst.Call,
        env: Env,
        what: str,
        self_binds: Mapping[str, list[Segment]] | None = None,
    ):  # type: ignore[no-untyped-def]
        """Evaluate a helper's return value(s) with the call's arguments bound."""
        if id(fdef) in env.active or env.depth > MAX_DEPTH:
            if what == "text":
                return [
                    dynamic(
                        DynamicKind.UNKNOWN, _unknown(env), fdef.name.value, fmod.loc(fdef), confidence=0.3
                    )
                ]
            return []
        binds = self.bind_args(fdef, call, env, skip_self=cls is not None)
        returns = _returns(fdef, fmod)
        if fmod.path != env.mod.path:
            self.dependencies.add(fmod.path)
        if not returns:
            return [] if what != "text" else [static("", fmod.loc(fdef))]
        ret = returns[-1]
        sub = env.callee(fmod, fdef, cls, ret, bindings=binds, self_binds=self_binds or {})
        if what == "text":
            # Several returns: report what the code can do, i.e. the alternative that costs most.
            options = [
                self.text(r.value, evolve(sub, pos=fmod.pos(r)))  # type: ignore[arg-type]
                for r in returns[-4:]
            ]
            segs = records.merged(options, max(reversed(options), key=static_after_break))
            return mark(segs, conditional=True) if len(returns) > 1 and not is_static(segs) else segs
        if what == "messages":
            return self.message_list(ret.value, sub)
        return self.message_item(ret.value, sub)

    def _call_binds(self, call: cst.Call, env: Env) -> dict[str, list[Segment]]:
        binds: dict[str, list[Segment]] = {}
        pos = 0
        for arg in call.args:
            if arg.keyword is not None:
                binds[arg.keyword.value] = self.text(arg.value, env)
            elif arg.star == "**" and (found := self.dict_literal(arg.value, env)) is not None:
                binds.update(self._dict_binds(*found))
            elif arg.star == "**" or arg.star == "*":
                continue
            else:
                binds[str(pos)] = self.text(arg.value, env)
                pos += 1
        return binds

    def _dict_binds(self, node: cst.Dict, env: Env) -> dict[str, list[Segment]]:
        out: dict[str, list[Segment]] = {}
        for el in node.elements:
            if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                key = evaluated(el.key)
                if isinstance(key, str):
                    out[key] = self.text(el.value, env)
        return out

    def _format_call(self, node: cst.Call, recv: cst.BaseExpression, env: Env) -> list[Segment]:
        tmpl = self.template_source(recv, env)
        if tmpl is None:
            return self.text(recv, env)
        binds = self._call_binds(node, env)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "format_map" and node.args:
            found = self.dict_literal(node.args[0].value, env)
            binds = self._dict_binds(*found) if found is not None else {}
        return self.render(tmpl, "format", binds, env, node)

    def _json_dumps(self, node: cst.Call, env: Env) -> list[Segment]:
        loc = env.mod.loc(node)
        if not node.args:
            return [static("", loc)]
        sorted_keys = any(a.keyword is not None and a.keyword.value == "sort_keys" for a in node.args)
        target = node.args[0].value
        inner = self.text(target, env)
        # the literal's own text stands for its JSON (about as long), not the name it is read through
        seg = static(join_text(inner) or env.mod.source(target), loc) if is_static(inner) else None
        if (
            sorted_keys
            or isinstance(target, (cst.SimpleString, cst.FormattedString))
            or self._literal(target, env)
        ):
            return [seg] if seg is not None else inner
        fix = fixes.sort_keys_fix(env.mod, node, safe=_str_keys_only(target))
        extra = {"nondeterminism": Nondeterminism.UNSORTED_JSON, "fixes": (fix,) if fix else ()}
        if seg is not None:
            return [evolve(seg, **extra)]  # type: ignore[arg-type]
        return [evolve(inner[0], location=loc, **extra), *inner[1:]]  # type: ignore[arg-type]

    def _bound_literal(self, name: cst.Name, env: Env) -> tuple[cst.BaseExpression, Env] | None:
        """The one value assigned to ``name`` before this point, and the env to read it in: in the
        function, else the module, else the module it is imported from (``from tools import TOOLS``)."""
        if env.func is not None:
            ops = local_ops(env.mod, env.func).get(name.value)
            if ops:
                before = ops_before(ops, env.pos)
                single = len(before) == 1 and before[0].kind == "assign"
                return (before[-1].value, env) if single else None
        if name.value in env.mod.assigns:
            return env.mod.assigns[name.value], env
        if name.value in env.mod.imports:
            got = self._imported(env.mod, name.value)
            if got is not None and got[1] is not None and got[1] in got[0].assigns:
                return got[0].assigns[got[1]], self.module_env(got[0])
        return None

    def _string_items(self, node: cst.BaseExpression, env: Env, depth: int = 0) -> bool:
        """True for a set, frozenset, list or tuple literal (or a name bound to one) of string literals:
        its elements compare with each other, so ``sorted`` over it cannot raise."""
        if depth > 4:
            return False
        if isinstance(node, cst.Name):
            bound = self._bound_literal(node, env)
            return bound is not None and self._string_items(bound[0], bound[1], depth + 1)
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value in ("set", "frozenset")
            and len(node.args) == 1
            and node.args[0].keyword is None
            and not node.args[0].star
        ):
            return self._string_items(node.args[0].value, env, depth + 1)
        if isinstance(node, (cst.Set, cst.List, cst.Tuple)):
            strings = (cst.SimpleString, cst.ConcatenatedString)
            return bool(node.elements) and all(
                isinstance(el, cst.Element) and isinstance(el.value, strings) for el in node.elements
            )
        return False

    def _literal(self, node: cst.BaseExpression, env: Env, depth: int = 0) -> bool:
        """True for a literal dict/list (or a name bound to one) whose key order is fixed in the source.

        ``depth`` counts names followed; nesting (a JSON schema's dicts in dicts) is bounded by the source.
        """
        if depth > 4:
            return False
        if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float, cst.ConcatenatedString)):
            return True
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return True
            bound = self._bound_literal(node, env)
            if bound is None:
                return False
            return self._literal(bound[0], bound[1], depth + 1)
        if isinstance(node, cst.Dict):
            return all(
                isinstance(el, cst.DictElement)
                and self._literal(el.key, env, depth)
                and self._literal(el.value, env, depth)
                for el in node.elements
            )
        if isinstance(node, (cst.List, cst.Tuple)):
            return all(
                isinstance(el, cst.Element) and self._literal(el.value, env, depth) for el in node.elements
            )
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            return self._literal(node.expression, env, depth)
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value == "sorted"
            and node.args
            and node.args[0].keyword is None
            and not node.args[0].star
        ):
            # ``sorted({"b", "a"})``: the order of the strings is fixed, even when they come from a set
            return self._string_items(node.args[0].value, env, depth + 1)
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, (cst.SimpleString, cst.ConcatenatedString))
        ):
            # ``"""...""".strip()``: a string method of a literal, with literal arguments
            return all(a.keyword is None and self._literal(a.value, env, depth) for a in node.args)
        return False

    def _address_repr(self, node: cst.BaseExpression, env: Env, conv: str) -> bool:
        """True when ``repr(node)``/``str(node)`` would print a memory address."""
        if isinstance(node, cst.Name):
            if node.value == "self" and env.cls is not None:
                return _default_repr(env.cls, conv)
            if node.value in env.mod.functions or (env.func is None and node.value in env.mod.classes):
                return True
            value = None
            if env.func is not None:
                ops = local_ops(env.mod, env.func).get(node.value)
                if ops:
                    before = ops_before(ops, env.pos)
                    value = before[-1].value if before else None
            if value is None:
                value = env.mod.assigns.get(node.value)
            if isinstance(value, cst.Call):
                return self._address_repr(value, env, conv)
            return False
        if isinstance(node, cst.Call):
            name = dotted_name(node.func)
            if name == "object":
                return True
            cls = env.mod.classes.get(name)
            return cls is not None and _default_repr(cls, conv)
        return isinstance(node, cst.Lambda)

    # collections --------------------------------------------------------------------------------
    def is_set(self, node: cst.BaseExpression, env: Env, depth: int = 0) -> bool:
        """True when iterating ``node`` follows a set's hash order."""
        if depth > 6:
            return False
        if isinstance(node, (cst.Set, cst.SetComp)):
            return True
        if isinstance(node, cst.Call):
            name = dotted_name(node.func)
            if name in ("set", "frozenset"):
                return True
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in (
                "union",
                "intersection",
                "difference",
            ):
                return self.is_set(node.func.value, env, depth + 1)
            return False
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitOr, cst.BitAnd)):
            return self.is_set(node.left, env, depth + 1) or self.is_set(node.right, env, depth + 1)
        if isinstance(node, cst.Name):
            if env.func is not None:
                ops = local_ops(env.mod, env.func).get(node.value)
                if ops:
                    before = ops_before(ops, env.pos)
                    return (
                        bool(before)
                        and before[0].kind == "assign"
                        and self.is_set(before[0].value, env, depth + 1)
                    )
                param = find_param(env.func, node.value)
                if param is not None:
                    return annotation_name(param) in SET_TYPES
            value = env.mod.assigns.get(node.value)
            return value is not None and self.is_set(value, self.module_env(env.mod), depth + 1)
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
            and env.cls is not None
            and node.attr.value in env.cls.init_attrs
        ):
            init = env.cls.methods.get("__init__")
            return self.is_set(env.cls.init_attrs[node.attr.value], env.deeper(func=init), depth + 1)
        return False

    def _opaque(self, node: cst.CSTNode, env: Env) -> list[Segment]:
        loc = env.mod.loc(node)
        if isinstance(node, (cst.List, cst.Tuple, cst.Set, cst.Dict)):
            inner: list[Segment] = []
            elements = node.elements
            for el in elements:
                if isinstance(el, (cst.DictElement, cst.BaseElement)):
                    inner.extend(self.text(el.value, env))
            if is_static(inner):
                return [static(env.mod.source(node), loc)]
            return inner
        if isinstance(node, cst.Comparison):
            return self.comparison_step(node, env, [node.left, *(c.comparator for c in node.comparisons)])
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return self.comparison_step(node, env, [node.expression])
            inner = self.text(node.expression, env)
            return inner if not is_static(inner) else [static(env.mod.source(node), loc)]
        if isinstance(node, (cst.Lambda, cst.Ellipsis)):
            return [static(env.mod.source(node), loc)]
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            out: list[Segment] = []
            for item in self.items(node, env):  # type: ignore[arg-type]
                out.extend(item)
            return out
        return [dynamic(DynamicKind.UNKNOWN, _unknown(env), env.mod.source(node)[:60], loc, confidence=0.3)]


def _import_candidates(module: str, attr: str | None) -> list[tuple[str, str | None]]:
    """The modules an import may read from, in the order tried, each with the name wanted from it.

    ``import m`` reads ``m`` itself; ``from m import a`` reads ``a`` from ``m``, or failing that is
    the submodule ``m.a`` (``from pkg import mod``). :meth:`Evaluator._imported` resolves them and
    :meth:`Evaluator._imported_defining` tests their text, so both try the same files.
    """
    if attr is None:
        return [(module, None)]
    return [(module, attr), (f"{module}.{attr}" if module else attr, None)]


def _str_keys_only(node: cst.BaseExpression) -> bool:
    """True when ``node`` is ``json.loads(...)``: every key, at every depth, is a string, so
    ``sort_keys=True`` cannot raise ``TypeError`` on keys that do not compare."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and isinstance(node.func.value, cst.Name)
        and node.func.value.value == "json"
        and node.func.attr.value == "loads"
    )


def _inner_function(mod: ModuleInfo, func: cst.FunctionDef | None, name: str) -> cst.FunctionDef | None:
    """The function ``name`` defined in the body of ``func`` or of a function enclosing it."""
    while func is not None:
        got = mod.inner_functions.get(id(func), {}).get(name)
        if got is not None:
            return got
        func = mod.enclosing.get(id(func))
    return None


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _inside(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    """True when ``node`` is ``tree`` or one of its descendants."""
    if tree is node:
        return True
    return any(_inside(child, node) for child in tree.children)


def _first_dynamic_item(items: list[list[Segment]]) -> list[Segment]:
    for item in items:
        if not is_static(item):
            return mark(item, repeated=True)
    return mark(items[0], repeated=True) if items else []


def _returns(fdef: cst.FunctionDef, mod: ModuleInfo) -> list[cst.Return]:
    """``return <value>`` statements of ``fdef``, a function of ``mod`` (collected by :mod:`.collect`;
    none for a function of another module)."""
    return mod.returns.get(fdef, [])


def _default_repr(cls: ClassInfo, conv: str) -> bool:
    if "__repr__" in cls.methods or (
        conv == "s" and ("__str__" in cls.methods or "__format__" in cls.methods)
    ):
        return False
    for deco in cls.node.decorators:
        if "dataclass" in dotted_name(deco.decorator) or "attr" in dotted_name(deco.decorator):
            return False
    for base in cls.node.bases:
        name = dotted_name(base.value)
        if name and name not in ("object",):
            return False  # an inherited repr may well be custom (Enum, NamedTuple, BaseModel...)
    return True


def _apply_method(text: str, method: str) -> str:
    if method in ("strip", "lstrip", "rstrip", "lower", "upper", "title", "capitalize", "casefold"):
        return getattr(text, method)()
    return text


def _unknown(env: Env) -> Timing:
    """The timing of a value the analyzer cannot see: once per process at import, else not known."""
    return Timing.PROCESS if env.timing is Timing.PROCESS else Timing.UNKNOWN


def _env_var(dotted: str) -> bool:
    """``os.getenv``/``os.environ.get``/``os.environ``: configuration, fixed per deploy."""
    return dotted.endswith("getenv") or "environ" in dotted.split(".")


def static_after_break(segs: list[Segment]) -> int:
    """Characters of static text after the first cache-breaking piece (0 when none breaks)."""
    for i, seg in enumerate(segs):
        if seg.breaks_cache:
            return sum(len(s.text) for s in segs[i + 1 :] if s.static)
    return -1


_NUMBERS = (cst.Integer, cst.Float, cst.Imaginary)

# A static string repeated by ``"text" * n`` is expanded up to this many characters.
MAX_REPEATED_CHARS = 1_000_000


def _repetition(node: cst.BinaryOperation) -> tuple[cst.BaseExpression, int] | None:
    """``(operand, n)`` for ``operand * n`` or ``n * operand`` with an integer literal ``n`` (not
    ``2 * 3``, which is arithmetic)."""
    for operand, count in ((node.left, node.right), (node.right, node.left)):
        if isinstance(count, cst.Integer) and not isinstance(operand, _NUMBERS):
            try:
                n = int(count.value, 0)
            except ValueError:
                continue
            return operand, max(0, n)
    return None
