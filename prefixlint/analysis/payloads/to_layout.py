"""Request dict -> :class:`~prefixlint.model.layout.Layout`."""

from __future__ import annotations

from typing import Any

from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.model.layout import CacheControl, DynamicKind, Layout, Segment, Timing
from prefixlint.model.providers import guess_provider
from prefixlint.model.tokens import tokenizer_for


def detect_api(body: dict[str, Any]) -> str:
    """``messages`` (Anthropic), ``responses`` or ``chat`` from the shape of a request body."""
    if "input" in body or "instructions" in body:
        return "responses"
    if "max_tokens" in body and ("system" in body or guess_provider(body.get("model")) == "anthropic"):
        return "messages"
    return "chat"


def layout_from_request(
    body: dict[str, Any],
    provider: str | None = None,
    api: str | None = None,
    cache: PieceCache | None = None,
) -> Layout:
    """The layout of a request body: tools, then system/instructions, then messages.

    Static text keeps its text; :class:`~prefixlint.analysis.payloads.markers.VolatileText` values
    become dynamic request-time segments. The last user message is flagged.
    """
    model = body.get("model")
    provider = provider or guess_provider(model)
    api = api or detect_api(body)
    tok = tokenizer_for(provider, model)
    cache = cache or PieceCache(tok)
    pieces = pieces_from_request(body, api, cache, keep_text=True)
    last_user = max((i for i, p in enumerate(pieces) if p.role == "user"), default=None)
    last_user_msg = pieces[last_user].message_index if last_user is not None else None
    segs: list[Segment] = []
    for p in pieces:
        segs.append(
            Segment(
                section=p.section,
                text=p.text or "",
                static=p.stable,
                kind=None if p.stable else DynamicKind.UNKNOWN,
                timing=Timing.STATIC if p.stable else Timing.REQUEST,
                role=p.role,
                tokens=p.tokens,
                label=p.path,
                message_index=p.message_index,
                cache_control=CacheControl(ttl=p.ttl) if p.ttl else None,
                is_last_user_message=p.role == "user" and p.message_index == last_user_msg,
            )
        )
    return Layout(segments=segs, provider=provider, model=model, sink_name=api, tokens_exact=tok.exact)
