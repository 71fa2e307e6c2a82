"""A request as the prefix cache sees it: pieces in prefix order, each with chained hashes.

Sources (the payload analyzer, the SDK) cut requests into pieces; the prefix-cache model compares them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prefixlint.model.layout import Section

# Tokens per block of a piece's sketch (block hashes used to measure partial matches).
SKETCH_BLOCK = 16


@dataclass(slots=True)
class Piece:
    """One cacheable unit of a request: a tool, a system block, a message or a content block.

    ``digest`` hashes the content, ``chain`` hashes the content and everything before it, ``end`` is
    the token position where the piece ends. ``sketch`` holds one hash per full block of
    :data:`SKETCH_BLOCK` tokens (no text). ``text`` is kept only when the caller asks for it.
    ``estimated``: the count comes from a rule, not a tokenizer (an image, by its size in pixels).
    """

    path: str
    section: Section
    role: str | None
    tokens: int
    digest: bytes
    chain: bytes = b""
    end: int = 0
    sketch: tuple[int, ...] = ()
    stable: bool = True
    ttl: str | None = None
    message_index: int | None = None
    text: str | None = None
    estimated: bool = False  # ``tokens`` is an estimate whatever the tokenizer (an image's)


def common_blocks(a: Iterable[int], b: Iterable[int]) -> int:
    """Number of leading sketch blocks two pieces share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
