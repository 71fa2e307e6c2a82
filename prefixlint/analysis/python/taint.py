"""Taint steps: what a value computed from other values is ("taint in, taint out").

A conversion or an unknown call that receives a per-request value returns a per-request value of
the same kind (Pysa's obscure models, CodeQL's default taint steps). :func:`dominant` picks, among
the pieces a value is computed from, the one that decides its nature; :func:`derive` makes the one
dynamic piece that stands for the computed value.
"""

from __future__ import annotations

from prefixlint.analysis.python.sources import KIND_TOKENS, is_static
from prefixlint.model.layout import (
    Cardinality,
    DynamicKind,
    Granularity,
    Segment,
    SourceLocation,
    Timing,
    evolve,
)

# How much a timing says about change between requests, least first.
TIMING_RANK = {Timing.STATIC: 0, Timing.PROCESS: 1, Timing.UNKNOWN: 2, Timing.REQUEST: 3}

# Kinds that stop being themselves once an unknown function has computed something from them: the
# user's own turn (expected at the end of the prompt) and the history. An answer computed from the
# question is still a per-request value, but no longer the user's message.
_TURN_KINDS = (DynamicKind.USER_INPUT, DynamicKind.HISTORY)

KEEP = object()


def dominant(segs: list[Segment]) -> Segment | None:
    """The dynamic piece that decides what a value computed from ``segs`` is (None: all static).

    A piece that breaks the cache wins over one that does not, a later timing over an earlier one,
    a known kind over an unknown one, then the more certain piece.
    """
    best: Segment | None = None
    best_key: tuple[bool, int, bool, float] | None = None
    for seg in segs:
        if seg.static:
            continue
        key = (
            seg.breaks_cache,
            TIMING_RANK[seg.timing],
            seg.kind not in (None, DynamicKind.UNKNOWN),
            seg.confidence,
        )
        if best_key is None or key > best_key:
            best, best_key = seg, key
    return best


def flag_granularity(inputs: list[Segment]) -> Granularity | None:
    """The granularity of a flag computed from ``inputs`` (``now.weekday() > 4``, ``bool(today)``).

    A flag changes at most as often as the value it tests, so one computed from a date still
    changes at most once a day. Below a day the flag is not the value's resolution ("to the
    second"), and only its few values are claimed: None.
    """
    d = dominant(inputs)
    if d is None or d.granularity is None or d.granularity.sub_day:
        return None
    return d.granularity


def derive(
    inputs: list[Segment],
    label: str,
    location: SourceLocation | None,
    *,
    pure: bool,
    kind: DynamicKind | None = None,
    granularity: Granularity | object | None = KEEP,
    cardinality: Cardinality | object | None = KEEP,
    relabel: bool = False,
) -> list[Segment] | None:
    """The one dynamic piece for a value computed from ``inputs``; None when they are all static.

    ``pure``: a conversion that keeps the value (``str``, ``.strip()``, ``.strftime()``, slicing); the
    piece keeps its kind, its origin and, unless given, its granularity and cardinality. Otherwise
    an unknown call computed the value: the piece is located at the call, the user's turn becomes a
    value of unknown kind, and granularity is no longer known. ``relabel``: name the piece after the
    whole expression when it sits on the line of its input (``date.today().isoformat()``).
    """
    if is_static(inputs):
        return None
    d = dominant(inputs)
    if d is None:
        return [s for s in inputs if not s.static or s.nondeterminism is not None]
    new_kind = kind or d.kind or DynamicKind.UNKNOWN
    if not pure and kind is None and new_kind in _TURN_KINDS:
        new_kind = DynamicKind.UNKNOWN
    grain = d.granularity if granularity is KEEP else granularity
    card = d.cardinality if cardinality is KEEP else cardinality
    if not pure and granularity is KEEP:
        grain = None
    same_line = (
        location is not None
        and d.location is not None
        and (location.path, location.line) == (d.location.path, d.location.line)
    )
    told = relabel or new_kind is not d.kind or grain is not d.granularity
    if pure and (not same_line or not told):
        # the conversion keeps the value: report it where it was made, under its own name
        return [evolve(d, kind=new_kind, granularity=grain, cardinality=card, attributes=())]
    chain = d.chain
    if not same_line and d.location is not None:
        chain = (d.location, *d.chain)
    return [
        evolve(
            d,
            kind=new_kind,
            tokens=d.tokens if new_kind is d.kind else KIND_TOKENS.get(new_kind, 0),
            granularity=grain,
            cardinality=card,
            text=label,
            label=label,
            location=location or d.location,
            chain=chain,
            confidence=d.confidence if pure else min(d.confidence, 0.6),
            fixes=d.fixes if same_line else (),
            conditional=any(s.conditional for s in inputs if not s.static),
            attributes=(),  # a value computed from an object is not that object
        )
    ]
