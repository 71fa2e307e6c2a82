"""Objects built by a project class's constructor: which argument each attribute holds.

``Result(answer=text, seconds=time.time() - start)`` is a record of values of different kinds, and
``result.answer`` is ``text``: it must not take the kind of ``seconds``. A constructor call of a
class of the project gives a value whose :attr:`~prefixlint.model.layout.Segment.attributes` map
each attribute to the argument bound to it: dataclass, pydantic and NamedTuple fields by keyword
(and by position for dataclasses and NamedTuples), or the ``__init__`` parameters that
``self.x = ...`` assigns. An attribute the mapping does not cover is a value of unknown kind: the
analyzer says what it knows, never the kind of another argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.collect import ClassInfo, ModuleInfo
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.objects import class_named, field_default
from prefixlint.analysis.python.sources import call_kind, dotted_name, dynamic, mark, static, with_chain
from prefixlint.model.layout import DynamicKind, Segment, SourceLocation, evolve

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator

Owner = tuple[ClassInfo, ModuleInfo]

# How many attributes of one object are followed, and how many base classes up.
MAX_ATTRIBUTES = 24
MAX_BASES = 4
# Bases that add no field of their own to a record class.
_PLAIN_BASES = frozenset({"object", "Generic", "ABC", "NamedTuple", "typing.NamedTuple", "BaseModel"})


def constructor_class(ev: Evaluator, node: cst.Call, env: Env) -> Owner | None:
    """The project class that ``node`` constructs (``Result(...)``, ``models.Result(...)``), or None."""
    func = node.func
    if isinstance(func, cst.Name):
        return class_named(ev, env.mod, func.value)
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        head = func.value.value
        if head in env.mod.imports and head not in env.bindings:
            got = ev._imported(env.mod, head)
            if got is not None and got[1] is None and func.attr.value in got[0].classes:
                return got[0].classes[func.attr.value], got[0]
    return None


def record(ev: Evaluator, node: cst.Call, env: Env) -> list[Segment] | None:
    """The value of a project class's constructor call, with what each attribute holds.

    The object as a whole (its ``repr``) holds every argument: it keeps the taint of all of them,
    but claims a kind only when the dynamic arguments agree on one. None when ``node`` constructs
    no project class, or the class's attributes cannot be told from the call.
    """
    owner = constructor_class(ev, node, env)
    if owner is None:
        return None
    values = attribute_values(ev, owner, node, env)
    if values is None:
        return None
    whole = ev.unknown_call(node, env)
    d = next((s for s in whole if not s.static), None)
    if d is None:
        return whole
    known = {
        # a field that ``**extra`` or an unplaced argument may set: read per call, kind not known
        name: segs
        if segs is not None
        else [dynamic(DynamicKind.UNKNOWN, d.timing, f"{name} of {d.label}", d.location, confidence=0.4)]
        for name, segs in values.items()
    }
    kinds = {s.kind or DynamicKind.UNKNOWN for segs in known.values() for s in segs if not s.static}
    out: list[Segment] = []
    attributes = tuple((name, tuple(segs)) for name, segs in known.items())
    for seg in whole:
        if seg.static:
            out.append(seg)
            continue
        kind = seg.kind if len(kinds) <= 1 else DynamicKind.UNKNOWN
        out.append(evolve(seg, kind=kind, attributes=attributes))
    return out


def attribute_values(
    ev: Evaluator, owner: Owner, call: cst.Call, env: Env
) -> dict[str, list[Segment] | None] | None:
    """Attribute -> the value the constructor call gives it (None: which value is not known); None
    when the class says nothing."""
    init = _init_of(ev, owner)
    if init is not None:
        return _init_values(ev, init, call, env)
    fields = _fields(ev, owner)
    if not fields:
        return None
    positional = _takes_positional(ev, owner)
    given: dict[str, list[Segment] | None] = {}
    spread = False
    order = list(fields)
    i = 0
    for arg in call.args:
        if arg.star:
            spread = True
        elif arg.keyword is not None:
            if arg.keyword.value in fields:
                given[arg.keyword.value] = ev.text(arg.value, env)
        elif positional and i < len(order):
            given[order[i]] = ev.text(arg.value, env)
            i += 1
        else:
            spread = True  # a positional argument whose field the class does not tell
    for name, (fcls, fmod) in list(fields.items())[:MAX_ATTRIBUTES]:
        if name in given:
            continue
        if spread:
            given[name] = None
        elif fcls.fields.get(name) is not None:
            given[name] = _default(ev, fcls, fmod, name, env)
    return given


def _default(ev: Evaluator, cls: ClassInfo, mod: ModuleInfo, name: str, env: Env) -> list[Segment]:
    """The value of a field the call leaves at its default: the default written in the class, or
    what its ``default_factory`` makes (``datetime.now`` is a time; ``list`` an empty list)."""
    default = field_default(cls, name)
    if default is not None:
        return ev.text(default, ev.module_env(mod).at(mod.pos(default)))
    value = cls.fields[name]
    for arg in value.args if isinstance(value, cst.Call) else ():
        kw = arg.keyword.value if arg.keyword is not None else ""
        if (
            kw == "default_factory"
            and call_kind(ev.catalog, dotted_name(arg.value), ev._aliases(mod)) is None
        ):
            return [static("", mod.loc(arg.value))]
    return ev._field(cls, mod, name, env) or []


def attribute(obj: Segment, attr: str, label: str, loc: SourceLocation | None) -> list[Segment]:
    """``obj.attr`` of a constructed object: the argument bound to ``attr``, else a value of unknown kind."""
    for name, segs in obj.attributes:
        if name == attr:
            got = with_chain(list(segs), loc)
            if obj.repeated:
                got = mark(got, repeated=True)
            if obj.conditional:
                got = [evolve(s, conditional=True) if not s.static else s for s in got]
            return got
    return [
        dynamic(
            DynamicKind.UNKNOWN,
            obj.timing,
            label,
            loc,
            confidence=min(obj.confidence, 0.5),
            chain=obj.chain,
        )
    ]


def _init_of(ev: Evaluator, owner: Owner, depth: int = 0) -> tuple[cst.FunctionDef, Owner] | None:
    init = owner[0].methods.get("__init__")
    if init is not None:
        return init, owner
    if depth >= MAX_BASES:
        return None
    for base in _bases(ev, owner):
        got = _init_of(ev, base, depth + 1)
        if got is not None:
            return got
    return None


def _init_values(
    ev: Evaluator, found: tuple[cst.FunctionDef, Owner], call: cst.Call, env: Env
) -> dict[str, list[Segment] | None] | None:
    """``self.x = ...`` of ``__init__``, evaluated with the call's arguments bound."""
    init, (cls, mod) = found
    if id(init) in env.active or not cls.init_attrs:
        return None
    binds = ev.bind_args(init, call, env, skip_self=True)
    sub = env.callee(mod, init, cls, init, bindings=binds)
    out: dict[str, list[Segment] | None] = {}
    for attr, value in list(cls.init_attrs.items())[:MAX_ATTRIBUTES]:
        out[attr] = ev.text(value, sub.at(mod.pos(value) + 1))
    return out


def _fields(ev: Evaluator, owner: Owner, depth: int = 0) -> dict[str, Owner]:
    """Field name -> the class that declares it: the bases' fields first, in declaration order."""
    out: dict[str, Owner] = {}
    if depth < MAX_BASES:
        for base in _bases(ev, owner):
            out.update(_fields(ev, base, depth + 1))
    for name in owner[0].fields:
        out[name] = owner
    return out


def _bases(ev: Evaluator, owner: Owner) -> list[Owner]:
    cls, mod = owner
    out = []
    for base in cls.node.bases:
        got = class_named(ev, mod, dotted_name(base.value))
        if got is not None:
            out.append(got)
    return out


def _takes_positional(ev: Evaluator, owner: Owner, depth: int = 0) -> bool:
    """True for a dataclass or a NamedTuple whose bases are all known: fields in declaration order."""
    cls, mod = owner
    record_like = any(
        dotted_name(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator).rsplit(".", 1)[-1]
        == "dataclass"
        for d in cls.node.decorators
    )
    for base in cls.node.bases:
        name = dotted_name(base.value)
        if name.rsplit(".", 1)[-1] == "NamedTuple":
            record_like = True
            continue
        got = class_named(ev, mod, name)
        if got is None:
            if name not in _PLAIN_BASES:
                return False
        elif depth >= MAX_BASES or not _takes_positional(ev, got, depth + 1):
            return False
    return record_like


def merged(options: list[list[Segment]], chosen: list[Segment]) -> list[Segment]:
    """``chosen`` (one of a function's returns) with the attributes of every returned object.

    ``try: return Result(answer=parsed, ...)`` / ``except: return Result(answer="", ...)``: the
    caller's ``result.answer`` may be either argument, so it is the dynamic one, conditionally.
    """
    values: dict[str, list[tuple[Segment, ...]]] = {}
    for option in options:
        for seg in option:
            for name, segs in seg.attributes:
                values.setdefault(name, []).append(segs)
    at = next((i for i, s in enumerate(chosen) if not s.static), None)
    if not values or at is None or len(options) < 2:
        return chosen
    attributes = []
    for name, alternatives in values.items():
        dynamic_ones = [a for a in alternatives if any(not s.static for s in a)]
        if not dynamic_ones:
            attributes.append((name, alternatives[0]))
            continue
        pick = dynamic_ones[0]
        if len(dynamic_ones) < len(options):
            pick = tuple(evolve(s, conditional=True) if not s.static else s for s in pick)
        attributes.append((name, pick))
    out = list(chosen)
    out[at] = evolve(out[at], attributes=tuple(attributes))
    return out
