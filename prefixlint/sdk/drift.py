"""Drift: the part of a prompt the application meant to keep stable changed.

The **stable part** of a request is what comes before its last user turn, up to the first
volatile value. What is compared depends on what groups requests:

* a conversation (``prefixlint_conversation``): the whole stable part, so rewritten or reordered
  history is drift, while a conversation that grows (or is cut back at its end) is not;
* a template (``prefixlint_template``, or by default the call site): the template's head (tools,
  response formats, system prompt or instructions, leading system/developer messages), extended to
  the last ``cache_control`` breakpoint the caller marked before the last user turn. The messages
  after it belong to different conversations and are not compared.

Two stable parts agree when they are equal over their common length (chained hashes: one
comparison). A named template or conversation drifts as soon as its stable part disagrees with the
previous request's. A call site may serve several prompts, so it keeps the last few stable parts it
saw: one it has seen is not drift, and a new one is drift only when the previous request of that call
site also brought a new one (the prefix changes on every request, as a timestamp makes it do).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from operator import attrgetter

from prefixlint.model.layout import Section
from prefixlint.model.pieces import SKETCH_BLOCK, Piece, common_blocks
from prefixlint.model.verdict import Divergence

_STABLE = attrgetter("stable")
SITE_VARIANTS = 8


def stable_end(pieces: list[Piece]) -> int:
    """Number of leading pieces before the last user turn and before the first volatile piece.

    What follows the last user turn (an assistant prefill, tool calls and results) is cut with it, as
    :func:`prefixlint.audit.sessions.stable_end` cuts it.
    """
    end = len(pieces)
    for i in range(end - 1, -1, -1):
        p = pieces[i]
        if p.role == "user" and p.section is Section.MESSAGES:
            end = i
            while end > 0 and pieces[end - 1].message_index == p.message_index:
                end -= 1
            break
    flags = list(map(_STABLE, pieces[:end]))
    return flags.index(False) if False in flags else end


def template_end(pieces: list[Piece], end: int, caller_marks: bool) -> int:
    """The compared part of a template: the head, or up to the caller's last breakpoint before ``end``."""
    head = 0
    while head < end and pieces[head].section is not Section.MESSAGES:
        head += 1
    if caller_marks:
        for i in range(end - 1, head - 1, -1):
            if pieces[i].ttl:
                return i + 1
    return head


@dataclass
class _Seen:
    variants: list[list[Piece]] = field(default_factory=list)  # newest last
    changed: bool = False  # the previous request brought a new stable part (call sites only)
    requests: int = 0


def _agree(a: list[Piece], b: list[Piece]) -> bool:
    m = min(len(a), len(b))
    return m == 0 or a[m - 1].chain == b[m - 1].chain


def _shared(a: list[Piece], b: list[Piece]) -> int:
    k = 0
    for x, y in zip(a, b, strict=False):
        if x.chain != y.chain:
            break
        k += 1
    return k


class DriftWatch:
    """Remembers stable parts per key and says where a request's stable part drifted. Thread-safe."""

    def __init__(self, max_keys: int = 10_000) -> None:
        self.max_keys = max_keys
        self._lock = threading.Lock()
        self._seen: dict[str, _Seen] = {}

    def check(
        self, key: str, kind: str, part: list[Piece], pieces: list[Piece], excerpt_chars: int = 0
    ) -> Divergence | None:
        """``kind``: ``conversation``, ``template`` or ``site``; ``part`` the compared stable part."""
        with self._lock:
            seen = self._seen.get(key)
            if seen is None:
                if len(self._seen) >= self.max_keys:
                    self._seen.clear()
                seen = self._seen[key] = _Seen()
            seen.requests += 1
            if not seen.variants:
                seen.variants.append(part)
                return None
            if kind != "site":
                prev, seen.variants[-1] = seen.variants[-1], part
                return None if _agree(part, prev) else _divergence(prev, pieces, excerpt_chars)
            known = next((i for i, v in enumerate(seen.variants) if _agree(part, v)), None)
            if known is not None:
                v = seen.variants.pop(known)
                seen.variants.append(part if len(part) >= len(v) else v)
                seen.changed = False
                return None
            was_changed, seen.changed = seen.changed, seen.requests > 1
            closest = max(seen.variants, key=lambda v: _shared(v, part))
            seen.variants.append(part)
            del seen.variants[:-SITE_VARIANTS]
            return _divergence(closest, pieces, excerpt_chars) if was_changed else None

    def forget(self) -> None:
        with self._lock:
            self._seen.clear()


def _divergence(prev: list[Piece], pieces: list[Piece], excerpt_chars: int) -> Divergence:
    """Where ``pieces`` first differ from the stable part ``prev``."""
    k = _shared(prev, pieces)  # below both lengths: the parts disagree over their common length
    old, new = prev[k], pieces[k]
    start = pieces[k - 1].end if k else 0
    before = after = None
    offset = common_blocks(old.sketch, new.sketch) * SKETCH_BLOCK
    if excerpt_chars and old.text is not None and new.text is not None:
        i = 0
        for x, y in zip(old.text, new.text, strict=False):
            if x != y:
                break
            i += 1
        lo = max(0, i - excerpt_chars // 3)
        before = old.text[lo : lo + excerpt_chars]
        after = new.text[lo : lo + excerpt_chars]
    return Divergence(start + offset, new.path, old.path, before, after)
