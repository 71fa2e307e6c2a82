"""Request dict -> :class:`~prefixlint.model.layout.Layout`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.analysis.payloads.shapes import detect_api
from prefixlint.model.layout import CacheControl, DynamicKind, Layout, Segment, SourceLocation, Timing
from prefixlint.model.pieces import Piece
from prefixlint.model.providers import guess_provider
from prefixlint.model.tokens import tokenizer_for

__all__ = ["detect_api", "layout_from_pieces", "layout_from_request"]

Locate = Callable[[str], "SourceLocation | None"]


def layout_from_request(
    body: dict[str, Any],
    provider: str | None = None,
    api: str | None = None,
    cache: PieceCache | None = None,
    locate: Locate | None = None,
) -> Layout:
    """The layout of a request body: tools, then system/instructions, then messages.

    Static text keeps its text; :class:`~prefixlint.analysis.payloads.markers.VolatileText` values
    become dynamic request-time segments. The last user message is flagged. ``locate`` maps a path in
    the body (``messages[0].content``) to where it sits in a file: segments and their
    ``cache_control`` breakpoints then carry locations.
    """
    model = body.get("model")
    provider = provider or guess_provider(model)
    api = api or detect_api(body)
    tok = tokenizer_for(provider, model)
    cache = cache or PieceCache(tok)
    pieces = pieces_from_request(body, api, cache, keep_text=True)
    layout = layout_from_pieces(pieces, provider, model, api, tok.exact, locate)
    if locate is not None and api == "messages" and isinstance(body.get("cache_control"), dict):
        _locate_top_level_breakpoint(layout, locate)
    return layout


def layout_from_pieces(
    pieces: list[Piece],
    provider: str,
    model: str | None,
    api: str,
    exact: bool,
    locate: Locate | None = None,
) -> Layout:
    """A layout with one segment per piece (cut with ``keep_text=True``)."""
    last_user = max((i for i, p in enumerate(pieces) if p.role == "user"), default=None)
    last_user_msg = pieces[last_user].message_index if last_user is not None else None
    segs: list[Segment] = []
    for p in pieces:
        cc = None
        if p.ttl:
            cc = CacheControl(ttl=p.ttl, location=locate(f"{p.path}.cache_control") if locate else None)
        segs.append(
            Segment(
                section=p.section,
                text=p.text or "",
                static=p.stable,
                kind=None if p.stable else DynamicKind.UNKNOWN,
                timing=Timing.STATIC if p.stable else Timing.REQUEST,
                role=p.role,
                tokens=p.tokens,
                location=locate(p.path) if locate else None,
                label=p.path,
                message_index=p.message_index,
                cache_control=cc,
                is_last_user_message=p.role == "user" and p.message_index == last_user_msg,
            )
        )
    exact = exact and not any(p.estimated for p in pieces)  # an image's tokens: the provider rule's
    return Layout(segments=segs, provider=provider, model=model, sink_name=api, tokens_exact=exact, samples=1)


def _locate_top_level_breakpoint(layout: Layout, locate: Locate) -> None:
    """The breakpoint that a top-level ``cache_control`` puts on the last segment points at that key."""
    if not layout.segments:
        return
    last = layout.segments[-1]
    if last.cache_control is not None and last.cache_control.location is None:
        from prefixlint.model.layout import evolve

        cc = evolve(last.cache_control, location=locate("cache_control"))
        layout.segments[-1] = evolve(last, cache_control=cc)
