"""Where two requests first differ: the shared prefix in tokens, the payload path and short excerpts.

Every comparison of two requests (the pytest helper, ``prefixlint diff``, sample alignment, the log
audit) goes through :func:`first_divergence`, so they all count the same prefix the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prefixlint.model.images import ImageText
from prefixlint.model.pieces import SKETCH_BLOCK, Piece, common_blocks
from prefixlint.model.tokens import Tokenizer

EXCERPT_BEFORE, EXCERPT_AFTER = 20, 40


@dataclass(frozen=True)
class SharedPrefix:
    """How much of two requests' prefix is identical, and where they first differ.

    ``tokens`` is the shared prefix. Without a tokenizer it is exact up to the diverging piece and
    then counts whole blocks of :data:`SKETCH_BLOCK` tokens; with one, it is the index of the first
    token that differs (``exact``). ``path`` names the diverging piece of the second request
    (``path_a`` of the first); ``char`` is the first differing character of the two pieces' texts, and
    ``excerpt_a``/``excerpt_b`` show both around it, the difference starting at ``excerpt_at``.
    """

    tokens: int
    total_a: int
    total_b: int
    path: str | None = None
    excerpt_a: str | None = None
    excerpt_b: str | None = None
    path_a: str | None = None
    index_a: int | None = None  # the diverging piece's index in each request (None: past the end)
    index_b: int | None = None
    char: int = 0
    excerpt_at: int = 0
    exact: bool = False

    @property
    def diverges(self) -> bool:
        """False when neither request has anything the other lacks."""
        return self.path is not None or self.path_a is not None


def first_divergence(
    pa: Sequence[Piece], pb: Sequence[Piece], tokenizer: Tokenizer | None = None
) -> SharedPrefix:
    """Compare two requests' pieces (cut with ``keep_text=True``) in prefix order.

    The shared prefix ends at the first piece whose chained hash differs, or that is not stable. Inside
    that piece, ``tokenizer`` (the one the pieces were counted with) finds the first differing token;
    without it, whole sketch blocks that still agree are counted as shared. When one request is a
    prefix of the other, the divergence is the first piece the longer one adds.
    """
    shared = 0
    total_a, total_b = (pa[-1].end if pa else 0), (pb[-1].end if pb else 0)
    for k, (x, y) in enumerate(zip(pa, pb, strict=False)):
        if x.chain != y.chain or not x.stable:
            start = shared
            tx, ty = x.text or "", y.text or ""
            i = _common_chars(tx, ty)
            exact = tokenizer is not None and x.stable and y.stable and x.role == y.role
            if exact:
                shared = start + _within(x, tx, ty, i, tokenizer)  # type: ignore[arg-type]
            elif x.stable and y.stable:
                shared = start + common_blocks(x.sketch, y.sketch) * SKETCH_BLOCK
            lo = max(0, i - EXCERPT_BEFORE)
            return SharedPrefix(
                shared,
                total_a,
                total_b,
                y.path,
                tx[lo : i + EXCERPT_AFTER],
                ty[lo : i + EXCERPT_AFTER],
                x.path,
                k,
                k,
                i,
                i - lo,
                tokenizer is not None,
            )
        shared = x.end
    n = min(len(pa), len(pb))
    if len(pa) == len(pb):
        return SharedPrefix(shared, total_a, total_b, exact=tokenizer is not None)
    longer = pa if len(pa) > n else pb
    extra = longer[n]
    excerpt = (extra.text or "")[:EXCERPT_AFTER]
    return SharedPrefix(
        shared,
        total_a,
        total_b,
        extra.path if longer is pb else None,
        excerpt if longer is pa else "",
        excerpt if longer is pb else "",
        extra.path if longer is pa else None,
        n if longer is pa else None,
        n if longer is pb else None,
        exact=tokenizer is not None,
    )


def _within(x: Piece, tx: str, ty: str, chars: int, tokenizer: Tokenizer) -> int:
    """Tokens of the diverging piece ``x`` that the other piece shares: its message overhead, then
    the leading tokens both texts encode to alike (none of two different images)."""
    if isinstance(tx, ImageText) or isinstance(ty, ImageText):
        return max(0, x.tokens - tx.tokens) if isinstance(tx, ImageText) else 0
    overhead = max(0, x.tokens - tokenizer.count(tx))
    return overhead + shared_tokens(tokenizer, tx, ty, chars)


def shared_tokens(tokenizer: Tokenizer, a: str, b: str, chars: int | None = None) -> int:
    """Leading tokens that ``a`` and ``b`` share: their common token-id prefix with a real encoding,
    else the estimate of their common characters (``chars`` when already known)."""
    if chars is None:
        chars = _common_chars(a, b)
    if tokenizer._encoding is None:
        return tokenizer.count(a[:chars]) if chars < len(a) else tokenizer.count(a)
    return common_blocks(tokenizer.encode(a), tokenizer.encode(b))  # leading equal ids


def _common_chars(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # binary search on slices: C comparisons instead of a loop per character
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
