"""Exact token ids of long texts, from a byte-bounded LRU cache of their line-aligned chunks.

A request log repeats most of its text below the message level too: a system prompt whose first
line holds the date, retrieved documents drawn from one corpus. :class:`ChunkCache` cuts a long text
into chunks that end at a line break, encodes each distinct chunk once with the model's real
encoding, and joins the chunks' ids.

Why the join is exact. tiktoken's encodings (``cl100k_base``, ``o200k_base``) first split a text
into pre-tokens with a regular expression and then merge bytes only inside a pre-token, so the ids
of a text are the ids of its pre-tokens in order. A chunk is cut only between a ``\\n`` and a
character that is neither whitespace nor ``/``. In both patterns the only pre-tokens that hold a
``\\n`` are runs of whitespace and punctuation followed by ``[\\r\\n]*`` (``[\\r\\n/]*`` in o200k),
so none can hold a ``\\n`` followed by such a character: the cut is a pre-token boundary of the
whole text. The patterns have no look-behind and their only look-ahead, ``\\s+(?!\\S)``, is never
reached for a run of whitespace that ends in ``\\n`` (``\\s*[\\r\\n]+`` comes first), so each side of
the cut splits into the same pre-tokens on its own. ``tests/test_payload_chunks.py`` checks this
with hypothesis against the real encodings. Encodings not listed in :data:`CHUNKED_ENCODINGS` are
never cut (their counts stay whole-text counts).

Memory: chunks are kept in least-recently-used order and evicted when their estimated size (the
chunk's text, its ids at 4 bytes each and a fixed per-entry overhead) passes ``max_bytes``.
"""

from __future__ import annotations

import re
import sys
from array import array
from collections import OrderedDict
from collections.abc import Callable

# Encodings whose pre-tokenizer makes a cut at :data:`_CUT` exact (see the module docstring).
CHUNKED_ENCODINGS = frozenset(("cl100k_base", "o200k_base"))
MIN_TEXT = 1024  # characters; shorter texts are encoded whole (cutting would cost more than it saves)
MIN_CHUNK = 64  # characters; consecutive short lines are kept together in one chunk
MAX_BYTES = 16 << 20  # default memory bound of one cache
_ENTRY_OVERHEAD = 200  # bytes of dict slot, array header and bookkeeping per chunk (estimate)

# A line break followed by a character that starts a pre-token in every chunked encoding.
_CUT = re.compile(r"(?<=\n)(?=[^\s/])")


def split_chunks(text: str, min_chunk: int = MIN_CHUNK) -> list[str]:
    """``text`` cut at safe line breaks; a line shorter than ``min_chunk`` joins the lines after it
    while they are short too, so a long line always starts its own chunk (a short volatile line,
    such as a date at the top, never takes the static text below it along)."""
    lines = _CUT.split(text)
    if len(lines) == 1 or min_chunk <= 1:
        return lines
    out: list[str] = []
    held = ""
    for line in lines:
        if held and len(line) >= min_chunk:
            out.append(held)
            held = line
        else:
            held += line
        if len(held) >= min_chunk:
            out.append(held)
            held = ""
    if held:
        out.append(held)
    return out


class ChunkCache:
    """Token ids of chunks, keyed by the chunk's text, least recently used first out.

    ``encode`` must be the encoding's exact ``encode`` (special-token text as plain text).
    """

    def __init__(
        self, encode: Callable[[str], list[int]], max_bytes: int = MAX_BYTES, min_chunk: int = MIN_CHUNK
    ) -> None:
        self._encode = encode
        self.max_bytes = max_bytes
        self.min_chunk = min_chunk
        self._chunks: OrderedDict[str, array[int]] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._chunks)

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``: equal to ``encode(text)``, with each distinct chunk encoded once."""
        chunks = split_chunks(text, self.min_chunk)
        if len(chunks) == 1:
            return self._encode(text)
        ids: list[int] = []
        found = self._chunks
        for chunk in chunks:
            got = found.get(chunk)
            if got is None:
                got = self._add(chunk)
            else:
                found.move_to_end(chunk)
                self.hits += 1
            ids.extend(got)
        return ids

    def _add(self, chunk: str) -> array[int]:
        self.misses += 1
        got = array("I", self._encode(chunk))
        size = sys.getsizeof(chunk) + 4 * len(got) + _ENTRY_OVERHEAD
        self._chunks[chunk] = got
        self._sizes[chunk] = size
        self.bytes += size
        while self.bytes > self.max_bytes and self._chunks:
            old, _ = self._chunks.popitem(last=False)
            self.bytes -= self._sizes.pop(old)
        return got
