"""Where two requests first differ: the shared prefix in tokens, the payload path and short excerpts.

Every comparison of two requests (the pytest helper, ``prefixlint diff``, the log audit) goes
through :func:`first_divergence`, so they all count the same prefix the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prefixlint.model.pieces import SKETCH_BLOCK, Piece, common_blocks

EXCERPT_BEFORE, EXCERPT_AFTER = 20, 40


@dataclass(frozen=True)
class SharedPrefix:
    """How much of two requests' prefix is identical, and where they first differ."""

    tokens: int
    total_a: int
    total_b: int
    path: str | None = None
    excerpt_a: str | None = None
    excerpt_b: str | None = None


def first_divergence(pa: Sequence[Piece], pb: Sequence[Piece]) -> SharedPrefix:
    """Compare two requests' pieces (cut with ``keep_text=True``) in prefix order.

    The shared prefix ends at the first piece whose chained hash differs, or that is not stable;
    inside that piece, whole sketch blocks that still agree are counted as shared.
    """
    shared = 0
    for x, y in zip(pa, pb, strict=False):
        if x.chain != y.chain or not x.stable:
            start = shared
            if x.stable and y.stable:
                shared = start + common_blocks(x.sketch, y.sketch) * SKETCH_BLOCK
            tx, ty = x.text or "", y.text or ""
            i = _common_chars(tx, ty)
            return SharedPrefix(
                shared,
                pa[-1].end,
                pb[-1].end,
                y.path,
                tx[max(0, i - EXCERPT_BEFORE) : i + EXCERPT_AFTER],
                ty[max(0, i - EXCERPT_BEFORE) : i + EXCERPT_AFTER],
            )
        shared = x.end
    return SharedPrefix(shared, pa[-1].end if pa else 0, pb[-1].end if pb else 0)


def _common_chars(a: str, b: str) -> int:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return i
