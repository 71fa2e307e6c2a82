"""What a finding costs: tokens lost after a segment, and whether the prefix before it still caches."""

from __future__ import annotations

from collections.abc import Iterator

from prefixlint.model.findings import Impact
from prefixlint.model.layout import DynamicKind, Layout, Segment
from prefixlint.model.providers import get_provider
from prefixlint.model.settings import Settings

_FILLER = " \t\r\n.,:;!?-*#()[]{}\"'`"


def _counts(seg: Segment) -> bool:
    """Static text that matters: not only whitespace or punctuation, and not the new user turn."""
    return seg.static and not seg.is_last_user_message and bool(seg.text.strip(_FILLER) or seg.tokens > 3)


def static_tokens_lost(layout: Layout, index: int) -> int:
    """Static tokens after ``index`` that are re-prefilled on every request because of it."""
    lost = sum(s.tokens for s in layout.segments[index + 1 :] if _counts(s))
    if layout.segments[index].is_last_user_message:
        lost += static_after_in_last_message(layout, index)
    return lost


# A value in the last user message costs only the static text after it in that message; below this
# many tokens it is where per-request values belong (the labelled standard: ~100 tokens).
LAST_MESSAGE_MIN_STATIC_TOKENS = 100


def static_after_in_last_message(layout: Layout, index: int) -> int:
    """Static tokens after segment ``index`` inside the last user message (``index`` sits in it)."""
    at = layout.segments[index].message_index
    return sum(
        s.tokens
        for s in layout.segments[index + 1 :]
        if s.static and s.is_last_user_message and s.message_index == at and s.text.strip(_FILLER)
    )


def history_tokens_after(layout: Layout, index: int) -> int:
    return sum(s.tokens for s in layout.segments[index + 1 :] if s.kind is DynamicKind.HISTORY)


def impact_at(layout: Layout, index: int, settings: Settings, *, price_history: bool = False) -> Impact:
    """The impact of a cache-breaking value at segment ``index`` of ``layout``.

    ``tokens_lost`` counts the static tokens after it (plus, with ``price_history``, the history
    that follows, as an estimate). The minimum comes from the provider's rules for the model.
    """
    try:
        rules = get_provider(layout.provider).rules_for(layout.model)
    except ValueError:
        rules = get_provider(settings.provider).rules_for(settings.model)
    prefix = layout.tokens_before(index)
    lost = static_tokens_lost(layout, index)
    history = layout.history_after(index)
    exact = layout.tokens_exact
    if price_history:
        lost += history_tokens_after(layout, index)
        exact = False
    return Impact(
        tokens_lost=lost,
        prefix_tokens=prefix,
        reaches_minimum=rules.reaches_minimum(prefix),
        minimum=rules.min_cacheable_tokens,
        exact=exact,
        encoding=rules.encoding,
        history_priced=history and not price_history,
        history_follows=history,
    )


def breaking_values(layout: Layout, min_confidence: float = 0.5) -> Iterator[tuple[int, Segment]]:
    """Dynamic values that change between requests and do not sit in the last user message."""
    seen: set[object] = set()
    for i, seg in enumerate(layout.segments):
        if seg.static or seg.kind is DynamicKind.HISTORY or seg.kind is None:
            continue
        if seg.confidence < min_confidence:
            continue
        in_last = seg.is_last_user_message
        if in_last and static_after_in_last_message(layout, i) < LAST_MESSAGE_MIN_STATIC_TOKENS:
            continue
        key = (seg.location, seg.kind, seg.timing)
        if key in seen:
            continue
        seen.add(key)
        yield i, seg
