"""Sources: what a Python expression contributes to a prompt (static text or a dynamic value).

Helpers here build :class:`~prefixlint.model.layout.Segment` pieces and classify calls and names with
the catalog (``prefixlint.analysis.catalog``). The evaluator in :mod:`.evaluate` calls them.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from prefixlint.analysis.catalog import Catalog
from prefixlint.model.layout import (
    Cardinality,
    DynamicKind,
    Granularity,
    Section,
    Segment,
    SourceLocation,
    Timing,
    evolve,
)

# Rough token estimates for dynamic values whose size the code does not show.
KIND_TOKENS = {
    DynamicKind.RETRIEVED_CONTEXT: 500,
    DynamicKind.MEMORY: 200,
    DynamicKind.TOOL_OUTPUT: 200,
    DynamicKind.HISTORY: 1000,
    DynamicKind.USER_INPUT: 50,
}

# Methods that keep a value's nature: ``x.strip()`` is dynamic when ``x`` is.
PASS_THROUGH_METHODS = {
    "strip",
    "lstrip",
    "rstrip",
    "lower",
    "upper",
    "title",
    "capitalize",
    "casefold",
    "replace",
    "isoformat",
    "strftime",
    "date",
    "time",
    "ctime",
    "astimezone",
    "format_map",
    "encode",
    "decode",
    "hex",
    "removeprefix",
    "removesuffix",
    "splitlines",
    "expandtabs",
    "center",
    "ljust",
    "rjust",
    "zfill",
    "timestamp",
    "weekday",
    "isoweekday",
    "to_string",
    "model_dump_json",
    "json",
}
PASS_THROUGH_FUNCS = {"str", "textwrap.dedent", "dedent", "inspect.cleandoc", "cleandoc", "format", "f"}
# Calls that return the list of their arguments' results (``await asyncio.gather(*calls)``).
GATHER = frozenset({"asyncio.gather", "gather"})
SET_TYPES = {
    "set",
    "frozenset",
    "Set",
    "FrozenSet",
    "typing.Set",
    "typing.FrozenSet",
    "AbstractSet",
    "collections.abc.Set",
    "MutableSet",
}


def static(text: str, location: SourceLocation | None = None) -> Segment:
    """A piece of static text."""
    return Segment(section=Section.SYSTEM, text=text, location=location)


def dynamic(
    kind: DynamicKind,
    timing: Timing,
    label: str,
    location: SourceLocation | None,
    *,
    confidence: float = 1.0,
    chain: tuple[SourceLocation, ...] = (),
    granularity: Granularity | None = None,
    cardinality: Cardinality | None = None,
) -> Segment:
    """A dynamic value of ``kind`` computed at ``timing``."""
    return Segment(
        section=Section.SYSTEM,
        text=label,
        static=False,
        kind=kind,
        timing=timing,
        label=label,
        location=location,
        chain=chain,
        confidence=confidence,
        tokens=KIND_TOKENS.get(kind, 0),
        granularity=granularity,
        cardinality=cardinality,
    )


def named(
    catalog: Catalog,
    kind: DynamicKind,
    timing: Timing,
    name: str,
    label: str,
    location: SourceLocation | None,
    *,
    confidence: float = 1.0,
    chain: tuple[SourceLocation, ...] = (),
) -> Segment:
    """A dynamic value known only by its name: what the name tells of its granularity and cardinality.

    A name that says a date (``current_date``) gives DAY to a timestamp; one that says a user id or a
    locale gives its cardinality.
    """
    grain, card = name_traits(catalog, name)
    if kind is not DynamicKind.TIMESTAMP:
        grain = None
    elif grain is not None and card is None:
        card = Cardinality.PER_REQUEST if grain.sub_day else Cardinality.FEW
    return dynamic(
        kind,
        timing,
        label,
        location,
        confidence=confidence,
        chain=chain,
        granularity=grain,
        cardinality=card,
    )


def name_traits(catalog: Catalog, name: str) -> tuple[Granularity | None, Cardinality | None]:
    """``catalog.name_traits``, remembered per name."""
    memo = _memo(catalog, "traits")
    got = memo.get(name)
    if got is None:
        got = memo[name] = catalog.name_traits(name)
    return got


def dotted_name(node: cst.BaseExpression) -> str:
    """``a.b.c`` for a Name/Attribute chain; calls in the chain become ``x()`` -> ``x``."""
    parts: list[str] = []
    cur: cst.BaseExpression = node
    while True:
        if isinstance(cur, cst.Name):
            parts.append(cur.value)
            break
        if isinstance(cur, cst.Attribute):
            parts.append(cur.attr.value)
            cur = cur.value
        elif isinstance(cur, cst.Call):
            cur = cur.func
        elif isinstance(cur, cst.Subscript):
            cur = cur.value
        else:
            break
    return ".".join(reversed(parts))


def call_kind(catalog: Catalog, dotted: str, aliases: dict[str, str]) -> DynamicKind | None:
    """Kind of value a call yields, after expanding an imported alias (``from uuid import uuid4``)."""
    if not dotted:
        return None
    head, _, rest = dotted.partition(".")
    full = aliases.get(head)
    memo = _memo(catalog, "calls")
    key = (dotted, full)
    if key not in memo:
        memo[key] = _call_kind(catalog, dotted, full, rest)
    return memo[key]


def _call_kind(catalog: Catalog, dotted: str, full: str | None, rest: str) -> DynamicKind | None:
    candidates = [dotted]
    if full:
        candidates.insert(0, f"{full}.{rest}" if rest else full)
    for cand in candidates:
        kind = catalog.classify_call(cand)
        if kind is not None:
            return kind
    return None


_MEMOS: dict[str, dict[str, dict]] = {}


def _memo(catalog: Catalog, what: str) -> dict:
    """A memo per catalog content (a catalog is not changed once built; each file gets its own copy
    of the same catalog, and the same lookups recur across files)."""
    fp = catalog.__dict__.get("_prefixlint_fp")
    if fp is None:
        fp = catalog.__dict__["_prefixlint_fp"] = repr(
            (catalog.calls, catalog.names, catalog.name_regexes, catalog.prompt_name_patterns)
        )
    memos = _MEMOS.get(fp)
    if memos is None:
        if len(_MEMOS) > 16:
            _MEMOS.clear()
        memos = _MEMOS[fp] = {}
    return memos.setdefault(what, {})


def prompt_name_test(catalog: Catalog) -> Callable[[str], bool]:
    """``catalog.is_prompt_name``, remembered per name."""
    memo = _memo(catalog, "prompt")

    def test(name: str) -> bool:
        got = memo.get(name)
        if got is None:
            got = memo[name] = catalog.is_prompt_name(name)
        return got

    return test


def name_kind(catalog: Catalog, name: str) -> tuple[DynamicKind, float]:
    """Kind of an unknown value by its name; UNKNOWN with low confidence when the name says nothing."""
    memo = _memo(catalog, "names")
    got = memo.get(name)
    if got is None:
        got = memo[name] = catalog.classify_name(name)
    kind, conf = got
    if kind is None:
        return DynamicKind.UNKNOWN, 0.5
    return kind, conf


def with_chain(segs: list[Segment], loc: SourceLocation | None) -> list[Segment]:
    """Append ``loc`` to the chain of every dynamic piece (the value travelled through ``loc``)."""
    if loc is None:
        return segs
    out = []
    for s in segs:
        if s.static or (s.chain and (s.chain[-1].path, s.chain[-1].line) == (loc.path, loc.line)):
            out.append(s)
        else:
            out.append(evolve(s, chain=(*s.chain, loc)))
    return out


def mark(segs: list[Segment], **fields: object) -> list[Segment]:
    """Copies of ``segs`` with ``fields`` replaced (e.g. ``conditional=True``)."""
    return [evolve(s, **fields) for s in segs]  # type: ignore[arg-type]


def is_static(segs: list[Segment]) -> bool:
    return all(s.static and s.nondeterminism is None for s in segs)


def join_text(segs: list[Segment]) -> str:
    return "".join(s.text for s in segs)
