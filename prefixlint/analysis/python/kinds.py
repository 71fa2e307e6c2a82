"""What kind and timing a computed value has: conversions, methods, unknown calls, sources by API.

:class:`KindsMixin` is part of the :class:`~prefixlint.analysis.python.evaluate.Evaluator`. It holds
the taint steps of calls (a conversion keeps its input's kind, an unknown call that receives a
per-request value returns one, an unknown call of static arguments is of unknown timing), the
sources recognised by API (a retriever's ``invoke``, a vector store's ``query``: the ``[[objects]]``
of the catalog), configuration read once at start-up (process values) and the granularity and
cardinality that calls, format strings and annotations tell.
"""

from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.catalog import ObjectSpec
from prefixlint.analysis.python import timegrain
from prefixlint.analysis.python.collect import ClassInfo, ModuleInfo, evaluated
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.resolve import annotation_name, find_param, local_ops, ops_before
from prefixlint.analysis.python.sources import dotted_name, dynamic, is_static, join_text, name_kind, static
from prefixlint.analysis.python.taint import KEEP, derive, dominant, flag_granularity
from prefixlint.model.layout import (
    Cardinality,
    DynamicKind,
    Granularity,
    Segment,
    SourceLocation,
    Timing,
    evolve,
)

if TYPE_CHECKING:
    from prefixlint.analysis.catalog import Catalog

# Builtins that convert a value without changing what it is; with literal arguments they fold.
CONVERSIONS = frozenset(
    {"int", "float", "round", "abs", "bool", "len", "min", "max", "sum", "repr", "ascii", "hex", "oct"}
    | {"bin", "chr", "ord", "str", "format"}
)
# Methods of str (and of the containers prompts are built from) that keep a value's nature.
PURE_METHODS = frozenset(
    {"split", "rsplit", "partition", "rpartition", "splitlines", "strip", "lstrip", "rstrip", "lower"}
    | {"upper", "title", "capitalize", "casefold", "swapcase", "replace", "translate", "zfill", "ljust"}
    | {"rjust", "center", "expandtabs", "removeprefix", "removesuffix", "encode", "decode", "find"}
    | {"rfind", "index", "rindex", "count", "items", "values", "keys", "copy", "get", "pop", "hex"}
)
# Methods of str that return text built from the receiver's text, piece by piece.
TEXT_METHODS = frozenset(
    {"strip", "lstrip", "rstrip", "lower", "upper", "title", "capitalize", "casefold", "swapcase"}
    | {"replace", "translate", "zfill", "ljust", "rjust", "center", "expandtabs", "removeprefix"}
    | {"removesuffix", "encode", "decode"}
)
# Methods whose result takes two values.
BOOL_METHODS = frozenset(
    {"startswith", "endswith", "isdigit", "isalpha", "isalnum", "isnumeric", "isdecimal", "isspace"}
    | {"islower", "isupper", "istitle", "isidentifier", "isprintable", "isascii"}
)
# Methods that only a date, time or datetime has: a value they return is a time value.
TIME_METHODS = frozenset(
    {"isoformat", "strftime", "date", "time", "ctime", "timestamp", "weekday", "isoweekday", "astimezone"}
    | {"timetuple", "toordinal", "utctimetuple"}
)
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})
_FOLDABLE = {name: getattr(builtins, name) for name in CONVERSIONS if name != "format"}
MAX_OBJECT_DEPTH = 4
# A list attribute grown by the class's methods: how deep to look, and at how many ``append`` calls.
MAX_GROWN_DEPTH = 6
MAX_GROWN_SITES = 8
_ADDERS = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "extendleft"})


class KindsMixin:
    """Taint steps and sources by API, for the evaluator."""

    catalog: Catalog

    if TYPE_CHECKING:

        def text(self, node: cst.CSTNode, env: Env) -> list[Segment]: ...
        def _aliases(self, mod: ModuleInfo) -> dict[str, str]: ...
        def module_env(self, mod: ModuleInfo) -> Env: ...
        def _imported(self, mod: ModuleInfo, name: str) -> tuple[ModuleInfo, str | None] | None: ...

    # names of calls ------------------------------------------------------------------------------
    def _call_names(self, dotted: str, mod: ModuleInfo) -> list[str]:
        """``dotted``, and its full name when its head is an import alias (``dt.now``)."""
        head, _, rest = dotted.partition(".")
        full = self._aliases(mod).get(head)
        names = [dotted]
        if full:
            names.insert(0, f"{full}.{rest}" if rest else full)
        return names

    def source_traits(
        self, node: cst.Call, dotted: str, kind: DynamicKind, env: Env
    ) -> tuple[Granularity | None, Cardinality | None]:
        """Granularity and cardinality of a value a catalog source call returns."""
        names = self._call_names(dotted, env.mod)
        if kind is DynamicKind.TIMESTAMP:
            grain = next((g for n in names if (g := self.catalog.granularity_of_call(n))), None)
            if dotted.endswith("strftime") and node.args:
                fmt = self._static_text(node.args[0].value, env)
                if fmt is not None:
                    grain = timegrain.strftime_granularity(fmt) or grain
            return grain, timegrain.cardinality_of(grain)
        card = next((c for n in names if (c := self.catalog.cardinality_of_call(n))), None)
        if card is None and kind in (DynamicKind.RETRIEVED_CONTEXT, DynamicKind.TOOL_OUTPUT):
            card = Cardinality.PER_REQUEST  # results of a query or a tool call: new on each request
        return None, card

    def _static_text(self, node: cst.BaseExpression, env: Env) -> str | None:
        """The text of ``node`` when it is static (a format string), else None."""
        if isinstance(node, cst.SimpleString):
            val = evaluated(node)
            return val if isinstance(val, str) else None
        segs = self.text(node, env)
        return join_text(segs) if is_static(segs) else None

    # process values --------------------------------------------------------------------------------
    def process_value(
        self, node: cst.CSTNode, env: Env, kind: DynamicKind = DynamicKind.UNKNOWN
    ) -> list[Segment]:
        """A value fixed at start-up (configuration, settings, an environment variable): one per deploy."""
        return [
            dynamic(
                kind,
                Timing.PROCESS,
                env.mod.source(node)[:60],
                env.mod.loc(node),
                confidence=0.8,
                cardinality=Cardinality.FEW,
            )
        ]

    def is_process_call(self, dotted: str, env: Env) -> bool:
        return any(self.catalog.is_process_call(n) for n in self._call_names(dotted, env.mod))

    def from_config(self, base: cst.BaseExpression, env: Env) -> bool:
        """True when ``base`` (of ``base.attr`` or ``base[key]``) is configuration read once at start-up
        (a chain of attributes and items of any length: each step is a smaller part of ``base``)."""
        cat = self.catalog
        if isinstance(base, cst.Call):
            return self.is_process_call(dotted_name(base.func), env)
        if isinstance(base, cst.Attribute):
            return cat.is_process_name(base.attr.value) or self.from_config(base.value, env)
        if isinstance(base, cst.Subscript):
            return self.from_config(base.value, env)
        if isinstance(base, cst.Name):
            if cat.is_process_name(base.value):
                return True
            if env.func is not None:
                param = find_param(env.func, base.value)
                if param is not None and base.value not in env.bindings:
                    return cat.is_process_type(annotation_name(param))
            value = env.mod.assigns.get(base.value)
            return isinstance(value, cst.Call) and (
                self.is_process_call(dotted_name(value.func), env)
                or cat.is_process_type(dotted_name(value.func).rsplit(".", 1)[-1])
            )
        return False

    def param_traits(self, param: cst.Param, env: Env) -> tuple[Timing | None, Cardinality | None]:
        """What a parameter's annotation and name tell: a config object is a process value; a
        ``bool``, ``Literal[...]`` or ``Enum`` takes a few values."""
        name = param.name.value
        ann = annotation_name(param)
        if self.catalog.is_process_name(name) or self.catalog.is_process_type(ann):
            return Timing.PROCESS, Cardinality.FEW
        if ann in ("bool", "Literal") or self._is_enum(ann, env):
            return None, Cardinality.FEW
        return None, None

    def _is_enum(self, cname: str, env: Env) -> bool:
        cls = None
        if cname in env.mod.classes:
            cls = env.mod.classes[cname]
        elif cname in env.mod.imports:
            got = self._imported(env.mod, cname)
            if got is not None and got[1] in got[0].classes:
                cls = got[0].classes[got[1]]
        if cls is None:
            return False
        return any(dotted_name(b.value).rsplit(".", 1)[-1] in _ENUM_BASES for b in cls.node.bases)

    # objects whose methods are sources (retrievers, vector stores) ----------------------------------
    def object_source(self, func: cst.Attribute, env: Env) -> ObjectSpec | None:
        """The catalog object whose method ``func`` calls returns a dynamic value (``retriever.invoke``)."""
        if not self.catalog.objects:
            return None
        path = [func.attr.value]
        recv: cst.BaseExpression = func.value
        for _ in range(2):
            spec = self.object_of(recv, env)
            if spec is not None and spec.returns_from(".".join(path)):
                return spec
            if not isinstance(recv, cst.Attribute):
                return None
            path.insert(0, recv.attr.value)
            recv = recv.value
        return None

    def object_of(self, node: cst.BaseExpression, env: Env, depth: int = 0) -> ObjectSpec | None:
        """What catalog object ``node`` holds: by the call that made it, its annotation or its name."""
        if depth > MAX_OBJECT_DEPTH:
            return None
        if isinstance(node, cst.Await):
            return self.object_of(node.expression, env, depth + 1)
        if isinstance(node, cst.Call):
            names = self._call_names(dotted_name(node.func), env.mod)
            return next((o for o in self.catalog.objects if any(o.made(n) for n in names)), None)
        if isinstance(node, cst.Name):
            return self._object_of_name(node.value, env, depth)
        if isinstance(node, cst.Attribute):
            attr = node.attr.value
            if isinstance(node.value, cst.Name) and node.value.value == "self" and env.cls is not None:
                init = env.cls.methods.get("__init__")
                value = env.cls.init_attrs.get(attr)
                if value is not None and init is not None:
                    got = self.object_of(value, env.deeper(func=init, pos=env.mod.pos(value)), depth + 1)
                    if got is not None:
                        return got
            return self._named_object(attr)
        return None

    def _object_of_name(self, name: str, env: Env, depth: int) -> ObjectSpec | None:
        if env.func is not None:
            ops = local_ops(env.mod, env.func).get(name)
            if ops:
                before = ops_before(ops, env.pos)
                if before and before[-1].kind == "assign":
                    got = self.object_of(before[-1].value, env.at(before[-1].pos), depth + 1)
                    if got is not None:
                        return got
            param = find_param(env.func, name)
            if param is not None:
                ann = annotation_name(param)
                got = next((o for o in self.catalog.objects if ann and o.typed_as(ann)), None)
                if got is not None:
                    return got
        elif name in env.mod.assigns:
            value = env.mod.assigns[name]
            got = self.object_of(value, self.module_env(env.mod).at(env.mod.pos(value)), depth + 1)
            if got is not None:
                return got
        if env.func is not None and name in env.mod.assigns and not local_ops(env.mod, env.func).get(name):
            value = env.mod.assigns[name]
            got = self.object_of(value, self.module_env(env.mod).at(env.mod.pos(value)), depth + 1)
            if got is not None:
                return got
        return self._named_object(name)

    def _named_object(self, name: str) -> ObjectSpec | None:
        return next((o for o in self.catalog.objects if o.named_as(name)), None)

    # attributes that grow at run time ----------------------------------------------------------------
    def grown_attr(self, cls: ClassInfo, attr: str, env: Env) -> list[Segment] | None:
        """``self.history = []`` in ``__init__``, then ``self.history.append(x)`` in a method: what it holds.

        The list is filled while the program runs, so its text is what its methods append to it (the
        costliest of those values), repeated; None when no method of the class adds to it.
        """
        key = (id(cls), attr)
        growing = self.__dict__.setdefault("_growing", set())
        if key in growing or env.depth > MAX_GROWN_DEPTH:
            return None
        sites = [
            site
            for site in env.mod.calls
            if site.cls is cls and site.func is not None and site.node.args and _adds_to_self(site.node, attr)
        ]
        if not sites:
            return None
        growing.add(key)
        try:
            pieces: list[Segment] = []
            for site in sites[:MAX_GROWN_SITES]:
                sub = env.deeper(func=site.func, cls=cls, bindings={}, pos=env.mod.pos(site.node))
                pieces.extend(self.text(site.node.args[-1].value, sub))
        finally:
            growing.discard(key)
        d = dominant(pieces)
        loc = env.mod.loc(sites[0].node)
        if d is None:
            kind, conf = name_kind(self.catalog, attr)
            d = dynamic(kind, Timing.REQUEST, f"self.{attr}", loc, confidence=min(conf, 0.6) or 0.5)
        return [evolve(d, repeated=True, timing=Timing.REQUEST if d.timing is Timing.UNKNOWN else d.timing)]

    # taint steps -----------------------------------------------------------------------------------
    def known_method(self, meth: str) -> bool:
        """True for a method whose result :meth:`method_step` can tell from its receiver."""
        return meth in PURE_METHODS or meth in BOOL_METHODS or meth in TIME_METHODS

    def method_step(self, node: cst.Call, meth: str, segs: list[Segment], env: Env) -> list[Segment] | None:
        """``value.method(...)`` of a dynamic ``value`` (``segs``) for a method that keeps or formats it."""
        loc = env.mod.loc(node)
        label = env.mod.source(node)[:60]
        if meth in BOOL_METHODS:
            grain = flag_granularity(segs)
            return derive(segs, label, loc, pure=True, granularity=grain, cardinality=Cardinality.FEW)
        if meth in TEXT_METHODS and any(s.static and s.text.strip() for s in segs):
            return segs  # ``PROMPT.strip()``: the same text, piece by piece
        d = dominant(segs)
        if d is None or meth not in TIME_METHODS:
            return derive(segs, label, loc, pure=True)
        if d.kind not in (None, DynamicKind.UNKNOWN, DynamicKind.TIMESTAMP):
            return derive(segs, label, loc, pure=True)
        kind = DynamicKind.TIMESTAMP if d.kind in (None, DynamicKind.UNKNOWN) else None
        grain = self._time_method_granularity(node, meth, d.granularity, env)
        card = timegrain.cardinality_of(grain) if grain is not None else d.cardinality
        return derive(
            segs, label, loc, pure=True, kind=kind, granularity=grain, cardinality=card, relabel=True
        )

    def _time_method_granularity(
        self, node: cst.Call, meth: str, current: Granularity | None, env: Env
    ) -> Granularity | None:
        if meth == "strftime" and node.args:
            fmt = self._static_text(node.args[0].value, env)
            got = timegrain.strftime_granularity(fmt) if fmt is not None else None
            return current if got is None else timegrain.coarser(got, current) if current else got
        if meth == "isoformat":
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "timespec":
                    spec = self._static_text(arg.value, env)
                    if spec is not None:
                        return timegrain.timespec_granularity(spec, current)
            return current
        return timegrain.method_granularity(meth, current)

    def replace_step(self, node: cst.Call, segs: list[Segment]) -> list[Segment]:
        """``dt.replace(microsecond=0)`` of a time value: coarser by the fields set to zero."""
        d = dominant(segs)
        if d is None or d.kind is not DynamicKind.TIMESTAMP:
            return segs
        zeroed = {
            a.keyword.value
            for a in node.args
            if a.keyword is not None and isinstance(a.value, cst.Integer) and a.value.value == "0"
        }
        grain = timegrain.replace_granularity(zeroed, d.granularity)
        return _regrained(segs, d, grain)

    def conversion(self, node: cst.Call, name: str, env: Env) -> list[Segment]:
        """``int(x)``, ``round(x)``, ``len(x)``, ``bool(x)``...: folded when static, else ``x``'s nature."""
        loc = env.mod.loc(node)
        inputs = [s for a in node.args for s in self.text(a.value, env)]
        if is_static(inputs):
            folded = _fold(node, name)
            if folded is None:
                folded = env.mod.source(node)
            return [static(folded, loc)]
        d = dominant(inputs)
        grain: Granularity | object | None = KEEP
        card: Cardinality | object | None = KEEP
        if name == "bool":
            grain, card = flag_granularity(inputs), Cardinality.FEW
        elif name == "format" and len(node.args) > 1 and d is not None:
            spec = self._static_text(node.args[1].value, env)
            if spec is not None and timegrain.has_directive(spec):
                grain = timegrain.strftime_granularity(spec)
                card = timegrain.cardinality_of(grain)  # type: ignore[arg-type]
        elif (
            name in ("int", "round")
            and d is not None
            and d.kind is DynamicKind.TIMESTAMP
            and d.granularity is Granularity.SUB_SECOND
            and len(node.args) == 1
        ):
            grain = Granularity.SECOND  # int(time.time()): whole seconds
        kind = DynamicKind.TIMESTAMP if grain not in (KEEP, None) else None
        return (
            derive(
                inputs,
                env.mod.source(node)[:60],
                loc,
                pure=True,
                kind=kind,
                granularity=grain,
                cardinality=card,
            )
            or inputs
        )

    def unknown_call(self, node: cst.Call, env: Env) -> list[Segment]:
        """A call of code not in view: its arguments' nature when one is per request, else unknown.

        Taint in, taint out: a call that receives a per-request value returns one. A call that
        receives only static values computes something the analyzer cannot see: unknown timing in a
        function, once per process at import.
        """
        loc = env.mod.loc(node)
        inputs: list[Segment] = []
        for arg in node.args:
            inputs.extend(self.text(arg.value, env))
        func = node.func
        if isinstance(func, cst.Attribute):
            recv = self.text(func.value, env)
            # the receiver's own nature counts when it was made per request (``answer.to_text()``),
            # not when it is a client or a helper object made at start-up
            if any(not s.static and s.timing is Timing.REQUEST for s in recv):
                inputs.extend(recv)
        d = dominant(inputs)
        label = env.mod.source(node)[:60]
        if d is not None and d.timing in (Timing.REQUEST, Timing.UNKNOWN):
            got = derive(inputs, label, loc, pure=False)
            if got is not None:
                return got
        timing = Timing.PROCESS if env.timing is Timing.PROCESS else Timing.UNKNOWN
        return [dynamic(DynamicKind.UNKNOWN, timing, label, loc, confidence=0.4)]

    def format_spec_step(
        self, segs: list[Segment], spec: str, label: str, loc: SourceLocation | None
    ) -> list[Segment]:
        """``f"{now:%Y-%m-%d}"``: a strftime spec makes a time value of that granularity."""
        if is_static(segs) or not timegrain.has_directive(spec):
            return segs
        d = dominant(segs)
        if d is None or d.kind not in (None, DynamicKind.UNKNOWN, DynamicKind.TIMESTAMP):
            return segs
        grain = timegrain.strftime_granularity(spec)
        if d.granularity is not None and grain is not None:
            grain = timegrain.coarser(grain, d.granularity)
        return (
            derive(
                segs,
                label,
                loc,
                pure=True,
                kind=DynamicKind.TIMESTAMP,
                granularity=grain,
                cardinality=timegrain.cardinality_of(grain),
            )
            or segs
        )

    def slice_step(self, node: cst.Subscript, segs: list[Segment]) -> list[Segment]:
        """``iso[:10]`` of a time text: an ISO 8601 prefix of that length (10 characters: a date)."""
        d = dominant(segs)
        if d is None or d.kind is not DynamicKind.TIMESTAMP or len(node.slice) != 1:
            return segs
        sl = node.slice[0].slice
        if not isinstance(sl, cst.Slice) or sl.lower is not None or not isinstance(sl.upper, cst.Integer):
            return segs
        grain = timegrain.iso_prefix_granularity(int(sl.upper.value, 0), d.granularity)
        return _regrained(segs, d, grain)

    def time_field_step(self, attr: str, segs: list[Segment]) -> list[Segment]:
        """``now.year``, ``now.minute``: a field of a time value changes as often as its unit."""
        grain = timegrain.ATTRIBUTES.get(attr)
        d = dominant(segs)
        if grain is None or d is None or d.kind is not DynamicKind.TIMESTAMP:
            return segs
        grain = timegrain.coarser(grain, d.granularity)
        return _regrained(segs, d, grain)

    def comparison_step(
        self, node: cst.CSTNode, env: Env, operands: list[cst.BaseExpression]
    ) -> list[Segment]:
        """``x > 3``, ``not x``: static when the operands are, else a value of two texts."""
        inputs = [s for op in operands for s in self.text(op, env)]
        got = derive(
            inputs,
            env.mod.source(node)[:60],
            env.mod.loc(node),
            pure=True,
            granularity=flag_granularity(inputs),
            cardinality=Cardinality.FEW,
        )
        return got if got is not None else [static(env.mod.source(node), env.mod.loc(node))]

    def arithmetic_step(self, node: cst.BinaryOperation, env: Env) -> list[Segment]:
        """``time.time() - start``, ``n * 2``: the operands' nature (static operands stay static)."""
        inputs = self.text(node.left, env) + self.text(node.right, env)
        got = derive(inputs, env.mod.source(node)[:60], env.mod.loc(node), pure=True)
        return got if got is not None else [static(env.mod.source(node), env.mod.loc(node))]


def _fold(node: cst.Call, name: str) -> str | None:
    """The text of a builtin conversion of literal arguments (``int("3")``, ``round(2.5)``); None if not."""
    fn = _FOLDABLE.get(name)
    if fn is None:
        return None
    args = []
    for arg in node.args:
        if arg.keyword is not None or arg.star:
            return None
        try:
            args.append(ast.literal_eval(cst.Module([]).code_for_node(arg.value)))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    try:
        return str(fn(*args))
    except Exception:  # any error of the folded call: leave it unfolded
        return None


def _adds_to_self(call: cst.Call, attr: str) -> bool:
    """True for ``self.<attr>.append(...)`` (or ``extend``, ``insert``, ``add``, ``update``)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _ADDERS:
        return False
    recv = func.value
    return (
        isinstance(recv, cst.Attribute)
        and recv.attr.value == attr
        and isinstance(recv.value, cst.Name)
        and recv.value.value == "self"
    )


def is_empty_container(node: cst.BaseExpression) -> bool:
    """``[]``, ``{}``, ``list()``, ``dict()``, ``set()``, ``deque()``: a container filled later."""
    if isinstance(node, (cst.List, cst.Dict, cst.Tuple)) and not node.elements:
        return True
    return (
        isinstance(node, cst.Call)
        and not node.args
        and dotted_name(node.func).rsplit(".", 1)[-1]
        in (
            "list",
            "dict",
            "set",
            "deque",
            "OrderedDict",
        )
    )


def _regrained(segs: list[Segment], d: Segment, grain: Granularity | None) -> list[Segment]:
    """``segs`` as one time value of granularity ``grain`` (and the cardinality it implies)."""
    return (
        derive(
            segs,
            d.label,
            d.location,
            pure=True,
            granularity=grain,
            cardinality=timegrain.cardinality_of(grain),
        )
        or segs
    )
