"""What a template variable holds: a caller's binding, or a guess from its name or call.

A :class:`Binding` is what the Python side knows about a value passed to a template
(``render(now=datetime.now())`` binds ``now`` to a per-request timestamp). Where no caller is known,
:func:`name_binding` and :func:`call_binding` classify by the name through the catalog. :func:`combine`
picks the value that matters most when one expression mixes several.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from prefixlint.analysis.catalog import Catalog
from prefixlint.model.layout import Cardinality, DynamicKind, Granularity, SourceLocation, Timing


@dataclass(frozen=True)
class Binding:
    """What a caller binds to a template variable (or what the analyzer infers for it).

    ``static=True`` means the slot renders the same bytes on every request (``text`` holds them when
    known). Otherwise ``kind`` and ``timing`` say what changes and when. ``confidence`` is 1.0 for a
    value the caller binds and lower for a guess from a name.
    """

    static: bool
    kind: DynamicKind | None = None
    timing: Timing = Timing.REQUEST
    label: str = ""
    text: str = ""
    location: SourceLocation | None = None
    chain: tuple[SourceLocation, ...] = ()
    confidence: float = 1.0
    # what the caller's value tells of how often it changes (see Segment)
    granularity: Granularity | None = None
    cardinality: Cardinality | None = None

    def relabel(self, label: str) -> Binding:
        """The same value under another name (a loop variable, a macro parameter)."""
        return replace(self, label=label)


STATIC = Binding(static=True, timing=Timing.STATIC)
UNKNOWN_CONFIDENCE = 0.3

# Jinja globals and functions that return a new value on every call, by the called name.
CALL_KINDS: dict[str, DynamicKind] = {
    "now": DynamicKind.TIMESTAMP,
    "utcnow": DynamicKind.TIMESTAMP,
    "today": DynamicKind.TIMESTAMP,
    "timestamp": DynamicKind.TIMESTAMP,
    "current_time": DynamicKind.TIMESTAMP,
    "current_date": DynamicKind.TIMESTAMP,
    "random": DynamicKind.RANDOM,
    "randint": DynamicKind.RANDOM,
    "lipsum": DynamicKind.RANDOM,
    "uuid": DynamicKind.IDENTIFIER,
    "uuid1": DynamicKind.IDENTIFIER,
    "uuid4": DynamicKind.IDENTIFIER,
    "uuid7": DynamicKind.IDENTIFIER,
}

# Filters whose result changes on every render regardless of their input.
FILTER_KINDS: dict[str, DynamicKind] = {
    "now": DynamicKind.TIMESTAMP,
    "today": DynamicKind.TIMESTAMP,
    "current_time": DynamicKind.TIMESTAMP,
    "random": DynamicKind.RANDOM,
    "shuffle": DynamicKind.RANDOM,
    "uuid": DynamicKind.IDENTIFIER,
    "uuid4": DynamicKind.IDENTIFIER,
}

# Jinja built-in globals that render the same bytes every time.
STATIC_GLOBALS = frozenset(
    {
        "range",
        "dict",
        "cycler",
        "joiner",
        "namespace",
        "true",
        "false",
        "none",
        "True",
        "False",
        "None",
        "gettext",
        "ngettext",
        "_",
        "varargs",
        "kwargs",
    }
)


def _snake(name: str) -> str:
    """``firstName`` -> ``first_name`` (template variables are often camelCase)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def name_binding(name: str, catalog: Catalog) -> Binding:
    """Classify a variable by its name; unknown names are per-request values of unknown kind."""
    kind, confidence = catalog.classify_name(name)
    if kind is None and any(c.isupper() for c in name):
        kind, confidence = catalog.classify_name(_snake(name))
    if kind is not None:
        grain, card = catalog.name_traits(name)  # ``current_date``: a date; ``user_id``: one per user
        if kind is not DynamicKind.TIMESTAMP:
            grain = None
        elif grain is not None and card is None:
            card = Cardinality.PER_REQUEST if grain.sub_day else Cardinality.FEW
        return Binding(
            static=False, kind=kind, label=name, confidence=confidence, granularity=grain, cardinality=card
        )
    low = 0.2 if catalog.is_prompt_name(name) else UNKNOWN_CONFIDENCE
    return Binding(static=False, kind=DynamicKind.UNKNOWN, label=name, confidence=low)


def run_fixed_binding(dotted: str, catalog: Catalog, root_bound: bool) -> Binding | None:
    """The value of an attribute chain that names configuration or the project a run works on
    (``state.project.name``, ``config.max_words``): one value for the run (Timing.PROCESS), whatever
    the object's other attributes are; None for other chains. A bound root's own name is for its
    caller to tell, not for this guess."""
    parts = re.split(r"[.\[\]]+", dotted.strip("]"))
    if len(parts) < 2 or not any(catalog.is_fixed_part(p) for p in parts[1 if root_bound else 0 :]):
        return None
    return Binding(
        static=False,
        kind=DynamicKind.UNKNOWN,
        timing=Timing.PROCESS,
        label=dotted,
        confidence=0.6,
        cardinality=Cardinality.FEW,
    )


def call_binding(dotted: str, catalog: Catalog) -> Binding | None:
    """The value of a call such as ``now()`` or ``datetime.now()``, when the call says it is dynamic."""
    kind = catalog.classify_call(dotted) or CALL_KINDS.get(dotted.rpartition(".")[2])
    if kind is None:
        return None
    return Binding(static=False, kind=kind, label=f"{dotted}()", confidence=0.95)


def _rank(b: Binding) -> tuple[int, int, int, float]:
    kind = b.kind or DynamicKind.UNKNOWN
    breaks = kind not in (DynamicKind.HISTORY, DynamicKind.USER_INPUT)
    known = kind is not DynamicKind.UNKNOWN
    return (int(breaks), int(b.timing is Timing.REQUEST), int(known), b.confidence)


def combine(values: Iterable[Binding]) -> Binding:
    """One value for an expression built from several: static only when every part is static.

    Among dynamic parts, a cache-breaking kind beats history and user input, a per-request value
    beats a per-process one, and a known kind beats an unknown one.
    """
    dynamic = [v for v in values if not v.static]
    if not dynamic:
        return STATIC
    return max(dynamic, key=_rank)
