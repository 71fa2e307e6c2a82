"""Align several payloads of one template token by token: which spans stay stable, which vary.

Samples are compared with the first one (the reference), piece by piece first (identical pieces match
whole), then token by token inside the pieces that differ. A reference token is stable when every
sample has it at the aligned place; a span of tokens that some sample replaces, lacks or adds to is
varying. A stable run shorter than :data:`MIN_STABLE_RUN` tokens between two varying spans (a role
marker, a ``", "``) is part of one span, so chance matches between unrelated texts make no spans.

Each varying span gets the values every sample holds there, the kind of value (from the volatile
patterns), its location in the reference file, and its cost: the stable tokens after it, which a
cache can no longer serve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from prefixlint.analysis.payloads.divergence import SharedPrefix, first_divergence
from prefixlint.analysis.payloads.kinds import ValueKind, kind_of_values, value_around
from prefixlint.analysis.payloads.samples import Sample
from prefixlint.model.layout import Section, SourceLocation
from prefixlint.model.tokens import Tokenizer

MIN_STABLE_RUN = 8  # tokens
# A differing region longer than this (in tokens) on both sides is one varying span: the token diff
# inside it would cost more than it tells.
MAX_DIFF_UNITS = 2000
# Below this share of the reference's head shingles (runs of units before the last user message), a
# sample is taken to come from another template. Samples of one template share their static text;
# retrieved chunks or history in the head lower the share, unrelated templates share almost nothing.
SAME_TEMPLATE = 0.3
# Samples of one template aligned at most (the first ones); more rarely change which spans vary.
MAX_SAMPLES = 100

Opcode = tuple[str, int, int, int, int]


# --- pairwise alignment -------------------------------------------------------------------------------


def align_pair(ref: Sample, other: Sample) -> list[Opcode]:
    """Opcodes turning ``ref``'s units into ``other``'s: identical pieces first, then tokens."""
    key_a = [(p.section, p.role, p.digest) for p in ref.pieces]
    key_b = [(p.section, p.role, p.digest) for p in other.pieces]
    out: list[Opcode] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, key_a, key_b, autojunk=False).get_opcodes():
        a1, a2 = ref.first_unit[i1], ref.first_unit[i2]
        b1, b2 = other.first_unit[j1], other.first_unit[j2]
        if tag == "equal":
            _emit(out, ("equal", a1, a2, b1, b2))
        elif i2 - i1 == j2 - j1:  # as many pieces on both sides: compare them pairwise
            for k in range(i2 - i1):
                ua, ub = ref.first_unit[i1 + k], other.first_unit[j1 + k]
                va, vb = ref.first_unit[i1 + k + 1], other.first_unit[j1 + k + 1]
                for op in _token_opcodes(ref.keys, other.keys, ua, va, ub, vb):
                    _emit(out, op)
        else:
            for op in _token_opcodes(ref.keys, other.keys, a1, a2, b1, b2):
                _emit(out, op)
    return out


def _emit(out: list[Opcode], op: Opcode) -> None:
    """Append ``op``, joining it to the last one when both are equal or both differ."""
    tag, i1, i2, j1, j2 = op
    if i1 == i2 and j1 == j2:
        return
    if out:
        t, a1, a2, b1, b2 = out[-1]
        if (t == "equal") == (tag == "equal") and a2 == i1 and b2 == j1:
            out[-1] = (t if t == tag else "replace", a1, i2, b1, j2)
            return
    out.append(op)


def _token_opcodes(a: list[Any], b: list[Any], a1: int, a2: int, b1: int, b2: int) -> list[Opcode]:
    """Token opcodes of ``a[a1:a2]`` against ``b[b1:b2]`` (common ends first, bounded diff between)."""
    i = 0
    while a1 + i < a2 and b1 + i < b2 and a[a1 + i] == b[b1 + i]:
        i += 1
    j = 0
    while a2 - j > a1 + i and b2 - j > b1 + i and a[a2 - 1 - j] == b[b2 - 1 - j]:
        j += 1
    ops: list[Opcode] = []
    if i:
        ops.append(("equal", a1, a1 + i, b1, b1 + i))
    ma, mb = (a1 + i, a2 - j), (b1 + i, b2 - j)
    if ma[1] - ma[0] > MAX_DIFF_UNITS and mb[1] - mb[0] > MAX_DIFF_UNITS:
        ops.append(("replace", ma[0], ma[1], mb[0], mb[1]))
    elif ma[0] < ma[1] or mb[0] < mb[1]:
        sm = SequenceMatcher(None, a[ma[0] : ma[1]], b[mb[0] : mb[1]], autojunk=False)
        for tag, x1, x2, y1, y2 in sm.get_opcodes():
            ops.append((tag, ma[0] + x1, ma[0] + x2, mb[0] + y1, mb[0] + y2))
    if j:
        ops.append(("equal", a2 - j, a2, b2 - j, b2))
    return ops


def template_similarity(ref: Sample, other: Sample) -> float:
    """Share of ``ref``'s head shingles that ``other``'s head has too (1.0 when neither has a head)."""
    a, b = ref.shingles(), other.shingles()
    if not a:
        return 0.0 if b else 1.0
    return len(a & b) / len(a)


@dataclass
class Cluster:
    """Samples of one template: the aligned members (each with its opcodes against the first, the
    reference), and those beyond :data:`MAX_SAMPLES`, counted but not aligned."""

    members: list[tuple[Sample, list[Opcode]]]
    extra: list[Sample] = field(default_factory=list)

    @property
    def reference(self) -> Sample:
        return self.members[0][0]

    @property
    def size(self) -> int:
        return len(self.members) + len(self.extra)

    def samples(self) -> list[Sample]:
        return [s for s, _ in self.members] + self.extra


def cluster_samples(samples: Sequence[Sample]) -> list[Cluster]:
    """Samples grouped by template: each joins the group whose reference its head resembles most (at
    least :data:`SAME_TEMPLATE` of the reference's shingles), or starts a group of its own."""
    clusters: list[Cluster] = []
    for s in samples:
        best, score = None, SAME_TEMPLATE
        for c in clusters:
            sim = template_similarity(c.reference, s)
            if sim >= score:
                best, score = c, sim
        if best is None:
            clusters.append(Cluster([(s, [])]))
        elif len(best.members) < MAX_SAMPLES:
            best.members.append((s, align_pair(best.reference, s)))
        else:
            best.extra.append(s)
    return clusters


# --- spans ------------------------------------------------------------------------------------------


@dataclass
class VaryingSpan:
    """Reference units ``[start, stop)`` that vary between samples (``start == stop``: text only other
    samples have, inserted there)."""

    start: int
    stop: int
    piece: int  # reference piece the span starts in
    path: str
    section: Section
    token: int  # reference token position where the span starts
    tokens: float  # its size in the reference
    values: list[str]  # the value each sample holds there (reference first)
    kind: ValueKind
    cost: float = 0.0  # stable tokens after it (the new user turn left out)
    location: SourceLocation | None = None
    char_start: int = 0
    char_end: int = 0


@dataclass
class Alignment:
    """Several samples of one template, aligned: the stable prefix and the varying spans."""

    samples: list[Sample]
    stable: list[bool]  # per reference unit
    spans: list[VaryingSpan]
    stable_prefix: int  # tokens before the first variation
    divergences: list[SharedPrefix]  # the reference against each other sample
    tool_order_varies: bool = False

    @property
    def reference(self) -> Sample:
        return self.samples[0]

    def ahead_of_stable(self) -> list[VaryingSpan]:
        """Spans followed by stable content (the ones a cache pays for)."""
        return [s for s in self.spans if s.cost > 0]


def align_group(
    members: Sequence[tuple[Sample, list[Opcode]]], tokenizer: Tokenizer | None = None
) -> Alignment:
    """Stable and varying spans of one template's samples (as :func:`cluster_samples` groups them)."""
    ref = members[0][0]
    n = len(ref.keys)
    varied = [False] * n
    gap = [False] * (n + 1)
    ops_of = [ops for _, ops in members[1:]]
    for ops in ops_of:
        for tag, i1, i2, _, _ in ops:
            if tag == "equal":
                continue
            if i2 > i1:
                varied[i1:i2] = [True] * (i2 - i1)
            else:
                gap[i1] = True
    reorder = _tool_order_varies([s for s, _ in members])
    if reorder:
        tools_end = ref.first_unit[sum(1 for p in ref.pieces if p.section is Section.TOOLS)]
        varied[:tools_end] = [False] * tools_end
        gap[: tools_end + 1] = [False] * (tools_end + 1)
    intervals = _merged_intervals(varied, gap, ref.weights)
    stable = [True] * n
    for a, b in intervals:
        stable[a:b] = [False] * (b - a)
    spans = [_span(ref, members, a, b, stable) for a, b in intervals]
    divergences = [first_divergence(ref.pieces, s.pieces, tokenizer) for s, _ in members[1:]]
    if tokenizer is not None and divergences:  # to the token, as every comparison counts it
        prefix = float(min(d.tokens for d in divergences))
    else:
        prefix = sum(ref.weights[: intervals[0][0]]) if intervals else sum(ref.weights)
    return Alignment([s for s, _ in members], stable, spans, round(prefix), divergences, reorder)


def _tool_order_varies(samples: Sequence[Sample]) -> bool:
    orders = {s.tools for s in samples}
    return len(orders) > 1 and len({tuple(sorted(o)) for o in orders}) == 1


def _merged_intervals(varied: list[bool], gap: list[bool], weights: list[float]) -> list[tuple[int, int]]:
    """Varying unit ranges, joined across stable runs lighter than :data:`MIN_STABLE_RUN` tokens."""
    raw: list[tuple[int, int]] = []
    n = len(varied)
    u = 0
    while u <= n:
        if u < n and varied[u]:
            v = u
            while v < n and varied[v]:
                v += 1
            raw.append((u, v))
            u = v
            continue
        if gap[u]:
            raw.append((u, u))
        u += 1
    merged: list[tuple[int, int]] = []
    for a, b in raw:
        if merged and sum(weights[merged[-1][1] : a]) < MIN_STABLE_RUN:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _map(ops: Sequence[Opcode], pos: int, end: bool, size: int) -> int:
    """Where reference unit boundary ``pos`` falls in the other sample."""
    seq = reversed(ops) if end else ops
    for tag, i1, i2, j1, j2 in seq:
        if tag == "equal":
            if (i1 < pos <= i2) if end else (i1 <= pos < i2):
                return j1 + pos - i1
        elif i1 <= pos <= i2:
            return j2 if end else j1
    return size if end else 0


def _region(sample: Sample, start: int, stop: int) -> tuple[int, int, int]:
    """``(piece, first char, end char)`` of units ``[start, stop)`` within the piece they start in."""
    n = len(sample.keys)
    if not n:
        return 0, 0, 0
    piece = sample.piece_of[min(start, n - 1)]
    text = sample.pieces[piece].text or ""
    inside = [
        u for u in range(start, min(stop, n)) if sample.piece_of[u] == piece and sample.char_start[u] >= 0
    ]
    if inside:
        return piece, sample.char_start[inside[0]], sample.char_end[inside[-1]]
    if start >= n:
        return piece, len(text), len(text)
    c = sample.char_start[start] if sample.char_start[start] >= 0 else 0
    return piece, c, c


def _value(sample: Sample, start: int, stop: int) -> tuple[int, int, int, str]:
    """The whole value around units ``[start, stop)``: piece, character range and text."""
    piece, c1, c2 = _region(sample, start, stop)
    if not sample.pieces or stop <= start:
        return piece, c1, c1, ""
    text = sample.pieces[piece].text or ""
    v1, v2 = value_around(text, c1, c2) if c2 > c1 or text else (c1, c2)
    if stop > start and sample.piece_of[min(stop, len(sample.keys)) - 1] != piece:
        v2 = max(v2, len(text))  # the span runs on into later pieces
    return piece, v1, v2, text[v1:v2]


def _span(
    ref: Sample, members: Sequence[tuple[Sample, list[Opcode]]], a: int, b: int, stable: list[bool]
) -> VaryingSpan:
    n = len(ref.keys)
    piece, c1, c2, value = _value(ref, a, b)
    location = ref.locate(piece, c1, c2)
    values = [value]
    moved = False
    for other, ops in members[1:]:
        j1, j2 = _map(ops, a, False, len(other.keys)), _map(ops, b, True, len(other.keys))
        at, v1, v2, text = _value(other, j1, max(j1, j2))
        if not value and text and not moved:  # text only other samples have: point at it there
            location, moved = other.locate(at, v1, v2) or location, True
        values.append(text)
    section = ref.pieces[piece].section if ref.pieces else Section.MESSAGES
    last = ref.last_user_piece()
    head_end = ref.first_unit[last] if last is not None else n
    cost = sum(w for u, w in enumerate(ref.weights[b:head_end], start=b) if stable[u])
    return VaryingSpan(
        start=a,
        stop=b,
        piece=piece,
        path=ref.pieces[piece].path if ref.pieces else "",
        section=section,
        token=round(sum(ref.weights[:a])),
        tokens=sum(ref.weights[a:b]),
        values=values,
        kind=kind_of_values(values, section.value),
        cost=cost,
        location=location,
        char_start=c1,
        char_end=c2,
    )
