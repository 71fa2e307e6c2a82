"""Payload files to layouts: one layout per request, and aligned layouts for samples of one template.

A request's layout has one segment per piece, each with its location in the file. Requests of one
template (the lines of a JSON Lines file, or the payload files of one directory) are aligned: the
reference request's layout then holds the spans seen to vary as dynamic segments, so the
dynamic-before-static rules report them with what they cost, and ``Layout.samples`` tells the
single-payload rules that evidence replaces guessing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from prefixlint.analysis.payloads.align import Alignment, VaryingSpan, align_group, cluster_samples
from prefixlint.analysis.payloads.documents import Payload, PayloadFile, read_payload_file
from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.analysis.payloads.samples import Sample, make_sample
from prefixlint.analysis.payloads.to_layout import layout_from_pieces
from prefixlint.analysis.result import FileAnalysis
from prefixlint.model.layout import (
    Layout,
    Nondeterminism,
    Section,
    Segment,
    Timing,
    evolve,
    replace_segments,
)
from prefixlint.model.settings import Settings
from prefixlint.model.tokens import Tokenizer, tokenizer_for

_KNOWN_PREFIXES = (
    ("claude", "anthropic"),
    ("gemini", "gemini"),
    ("deepseek", "deepseek"),
    ("gpt-", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
)


def provider_for(body: dict, api: str, settings: Settings | None) -> tuple[str, str | None]:
    """``(provider, model)`` for a request: Anthropic for a messages body, the provider a known model
    name says, else the configured provider (a self-hosted model name says nothing)."""
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if api == "messages":
        return "anthropic", model
    low = (model or "").lower()
    for prefix, provider in _KNOWN_PREFIXES:
        if low.startswith(prefix):
            return provider, model
    if settings is None:
        return "openai", model
    return settings.provider, model or settings.model


@dataclass
class PayloadSample:
    """One request of a file, cut and laid out."""

    payload: Payload
    layout: Layout
    sample: Sample


class PayloadAnalyzer:
    """Cuts requests with one piece cache and tokenizer per provider and model."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings
        self._caches: dict[tuple[str, str | None], PieceCache] = {}

    def tokenizer(self, provider: str, model: str | None) -> Tokenizer:
        return self.cache(provider, model).tokenizer

    def cache(self, provider: str, model: str | None) -> PieceCache:
        key = (provider, model)
        if key not in self._caches:
            self._caches[key] = PieceCache(tokenizer_for(provider, model), fast=False)
        return self._caches[key]

    def request(self, payload: Payload) -> PayloadSample:
        """The layout and alignment sample of one request."""
        provider, model = provider_for(payload.body, payload.api, self.settings)
        cache = self.cache(provider, model)
        pieces = pieces_from_request(payload.body, payload.api, cache, keep_text=True)
        layout = layout_from_pieces(
            pieces, provider, model, payload.api, cache.tokenizer.exact, payload.locate_piece
        )
        top = payload.body.get("cache_control")
        if payload.api == "messages" and isinstance(top, dict) and layout.segments:
            last = layout.segments[-1]
            if last.cache_control is not None and last.cache_control.location is None:
                cc = evolve(last.cache_control, location=payload.locate("cache_control"))
                layout.segments[-1] = evolve(last, cache_control=cc)
        return PayloadSample(payload, layout, make_sample(payload.label, pieces, cache.tokenizer, payload))

    def layouts(self, payloads: Sequence[Payload]) -> tuple[list[Layout], list[Alignment]]:
        """A layout per request; the reference request of each template seen more than once is laid
        out from its alignment (its varying spans dynamic)."""
        done = [self.request(p) for p in payloads]
        layouts = [d.layout for d in done]
        alignments: list[Alignment] = []
        by_target: dict[tuple[str, str | None, str], list[int]] = {}
        for i, d in enumerate(done):
            by_target.setdefault((d.layout.provider, d.layout.model, d.payload.api), []).append(i)
        for (provider, model, _api), indexes in by_target.items():
            if len(indexes) < 2:
                continue
            index_of = {id(done[i].sample): i for i in indexes}
            for cluster in cluster_samples([done[i].sample for i in indexes]):
                if cluster.size < 2:
                    continue
                alignment = align_group(cluster.members, self.tokenizer(provider, model))
                alignments.append(alignment)
                for member in cluster.samples():
                    layouts[index_of[id(member)]].samples = cluster.size
                ref = index_of[id(cluster.reference)]
                layouts[ref] = aligned_layout(alignment, layouts[ref], cluster.size)
        return layouts, alignments


def aligned_layout(alignment: Alignment, plain: Layout, samples: int | None = None) -> Layout:
    """The reference request's layout with its varying spans as dynamic segments.

    Each piece becomes its stable runs (static segments) and the spans that start in it (dynamic
    segments); a span that runs on into later pieces covers them. A piece's ``cache_control`` goes on
    the last segment that covers it, where the block ends.
    """
    ref = alignment.reference
    span_at = {s.start: s for s in alignment.spans}
    last_user = ref.last_user_piece()
    last_msg = ref.pieces[last_user].message_index if last_user is not None else None
    segs: list[Segment] = []
    u = 0
    for pi, piece in enumerate(ref.pieces):
        stop = ref.first_unit[pi + 1]
        base = plain.segments[pi]
        is_last = piece.role == "user" and piece.message_index == last_msg
        while True:
            span = span_at.pop(u, None) if u < stop else None
            if span is not None:
                segs.append(_dynamic_segment(span, base, is_last))
                u = max(u, span.stop)
                continue
            if u >= stop:
                break
            if not alignment.stable[u]:  # inside a span that started in an earlier piece
                u += 1
                continue
            v = u
            while v < stop and alignment.stable[v] and v not in span_at:
                v += 1
            segs.append(_static_segment(ref, pi, u, v, base, is_last))
            u = v
        if base.cache_control is not None and segs:
            segs[-1] = evolve(segs[-1], cache_control=base.cache_control)
    for span in span_at.values() if plain.segments else ():  # text only other samples have, after the end
        segs.append(_dynamic_segment(span, plain.segments[-1], False))
    if alignment.tool_order_varies:
        first = next((i for i, s in enumerate(segs) if s.section is Section.TOOLS), None)
        if first is not None:
            location = ref.payload.locate("tools") if ref.payload else None
            segs[first] = evolve(
                segs[first],
                nondeterminism=Nondeterminism.TOOL_ORDER,
                location=location or segs[first].location,
            )
    out = replace_segments(plain, segs)
    out.samples = samples or len(alignment.samples)
    return out


def _static_segment(ref: Sample, piece: int, u: int, v: int, base: Segment, is_last: bool) -> Segment:
    chars = [c for c in ref.char_start[u:v] if c >= 0]
    start = chars[0] if chars else 0
    end = max([c for c in ref.char_end[u:v] if c >= 0], default=start)
    return evolve(
        base,
        text=ref.text_of(u, v),
        tokens=round(sum(ref.weights[u:v])),
        location=ref.locate(piece, start, end) or base.location,
        cache_control=None,
        is_last_user_message=is_last,
    )


def _dynamic_segment(span: VaryingSpan, base: Segment, is_last: bool) -> Segment:
    shown = [v for v in dict.fromkeys(span.values) if v]
    return evolve(
        base,
        text=" | ".join(v[:60] for v in shown[:3]),
        static=False,
        kind=span.kind.kind,
        timing=Timing.REQUEST,
        tokens=round(span.tokens),
        location=span.location or base.location,
        label=(shown[0] if shown else span.path)[:60],
        cache_control=None,
        is_last_user_message=is_last,
        confidence=1.0,
    )


def analyze_payload_files(
    files: Iterable[tuple[str, str]], settings: Settings, align_across_files: bool = True
) -> dict[str, FileAnalysis]:
    """Analyses of payload files (``(path, text)``), keyed by path.

    The requests of each file are aligned with each other; with ``align_across_files`` the requests
    of single-request files are aligned across files too (the payload files of one directory).
    """
    analyzer = PayloadAnalyzer(settings)
    read: list[PayloadFile] = [read_payload_file(p, t, settings.payload_shape) for p, t in files]
    out: dict[str, FileAnalysis] = {pf.path: FileAnalysis(pf.path, errors=list(pf.errors)) for pf in read}
    singles = [pf.payloads[0] for pf in read if len(pf.payloads) == 1] if align_across_files else []
    batches = [pf.payloads for pf in read if len(pf.payloads) > 1 or not align_across_files]
    if singles:
        batches.append(singles)
    for batch in batches:
        if not batch:
            continue
        layouts, _ = analyzer.layouts(batch)
        for payload, layout in zip(batch, layouts, strict=True):
            out[payload.file].layouts.append(layout)
        if align_across_files and batch is singles and len(singles) > 1:
            members = {p.file for p in singles}
            for path in members:
                out[path].dependencies |= members - {path}
    return out


def analyze_payload_file(path: str, text: str, settings: Settings) -> FileAnalysis:
    """The layouts of one payload file (its requests aligned with each other)."""
    return analyze_payload_files([(path, text)], settings)[path]
