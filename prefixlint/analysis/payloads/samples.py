"""Alignment samples: a request's pieces cut into units (tokens, or words when counts are estimates).

A piece's role markers (its message overhead) become units too, so they align like text. Character
offsets of the units are worked out per piece only when a span's text is shown or located.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from prefixlint.analysis.payloads.documents import Payload
from prefixlint.model.images import ImageText
from prefixlint.model.layout import SourceLocation
from prefixlint.model.pieces import Piece
from prefixlint.model.tokens import Tokenizer
from prefixlint.model.tools import tool_name

SHINGLE = 8  # units per shingle of the template fingerprint

_WORDS = re.compile(r"\w+|\s+|[^\w\s]")
_ROLES = {"system": 1, "developer": 2, "user": 3, "assistant": 4, "tool": 5, "function": 6}


class _Offsets:
    """Character offsets of a sample's units, worked out per piece on first use (-1: a role marker).

    Alignment needs only token ids; offsets cost a decode, so only the pieces whose text is shown or
    located get one.
    """

    def __init__(self, sample: Sample, index: int) -> None:
        self.sample, self.index = sample, index

    def __getitem__(self, k: int | slice) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self.sample.keys)))]
        offsets = self.sample._offsets
        if offsets[k] is None:
            self.sample._fill(self.sample.piece_of[k])
        return offsets[k][self.index]  # type: ignore[index]


@dataclass
class Sample:
    """One payload (or rendered prompt) cut into pieces with text, and into alignment units.

    A unit is a token (or, with an estimating tokenizer, a word weighted as its estimated tokens); a
    piece's message overhead becomes units too, so role markers align like text.
    """

    label: str
    pieces: list[Piece]
    payload: Payload | None = None
    tools: tuple[str, ...] = ()
    keys: list[Any] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    piece_of: list[int] = field(default_factory=list)
    first_unit: list[int] = field(default_factory=list)  # per piece, then the total
    _offsets: list[tuple[int, int] | None] = field(default_factory=list, repr=False)
    _encoding: Any = field(default=None, repr=False)
    _shingles: frozenset[int] | None = field(default=None, repr=False)

    @property
    def char_start(self) -> _Offsets:
        return _Offsets(self, 0)

    @property
    def char_end(self) -> _Offsets:
        return _Offsets(self, 1)

    def _fill(self, piece: int) -> None:
        """Offsets of the units of ``piece`` from its token ids."""
        lo, hi = self.first_unit[piece], self.first_unit[piece + 1]
        text = self.pieces[piece].text or ""
        own = [u for u in range(lo, hi) if self.keys[u] is not None and not _is_marker(self.keys[u])]
        starts = _token_starts(self._encoding, [self.keys[u] for u in own], text)
        ends = [*starts[1:], len(text)]
        for u in range(lo, hi):
            self._offsets[u] = (-1, -1)
        for u, a, b in zip(own, starts, ends, strict=True):
            self._offsets[u] = (a, b)

    @property
    def total(self) -> int:
        return self.pieces[-1].end if self.pieces else 0

    def last_user_piece(self) -> int | None:
        """Index of the first piece of the last user message (None without one)."""
        idx = [i for i, p in enumerate(self.pieces) if p.role == "user"]
        if not idx:
            return None
        msg = self.pieces[idx[-1]].message_index
        return next(i for i in idx if self.pieces[i].message_index == msg)

    def head_end(self) -> int:
        """The first unit of the last user message (the end of the request's head)."""
        last = self.last_user_piece()
        return self.first_unit[last] if last is not None else len(self.keys)

    def shingles(self) -> frozenset[int]:
        """Hashes of the head's runs of :data:`SHINGLE` units: a cheap, shift-proof fingerprint."""
        if self._shingles is None:
            keys = self.keys[: self.head_end()]
            self._shingles = frozenset(
                hash(tuple(keys[i : i + SHINGLE])) for i in range(len(keys) - SHINGLE + 1)
            )
        return self._shingles

    def text_of(self, start: int, stop: int) -> str:
        """The text of units ``[start, stop)`` (overhead units have none)."""
        parts = []
        starts, ends = self.char_start, self.char_end
        for u in range(start, stop):
            a = starts[u]
            if a >= 0:
                parts.append((self.pieces[self.piece_of[u]].text or "")[a : ends[u]])
        return "".join(parts)

    def locate(self, piece: int, start: int, end: int) -> SourceLocation | None:
        """Where characters ``[start, end)`` of piece ``piece``'s text sit in the sample's file."""
        if self.payload is None or not 0 <= piece < len(self.pieces):  # an empty request has no pieces
            return None
        return self.payload.locate_text(self.pieces[piece].path, start, end)


def _is_marker(key: Any) -> bool:
    return type(key) is int and key < 0


def make_sample(
    label: str, pieces: list[Piece], tokenizer: Tokenizer, payload: Payload | None = None
) -> Sample:
    """A sample with its alignment units (``pieces`` cut with ``keep_text=True``)."""
    tools: tuple[str, ...] = ()
    if payload is not None and isinstance(payload.body.get("tools"), list):
        tools = tuple(tool_name(t) for t in payload.body["tools"])
    s = Sample(label, pieces, payload, tools, _encoding=tokenizer._encoding)
    enc = tokenizer._encoding
    last_msg: int | None = -1
    for i, p in enumerate(pieces):
        s.first_unit.append(len(s.keys))
        text = p.text or ""
        keys, weights, offsets = _own_units(text, tokenizer)
        first_of_message = p.message_index is not None and p.message_index != last_msg
        last_msg = p.message_index if p.message_index is not None else last_msg
        overhead = max(0, round(p.tokens - sum(weights))) if first_of_message else 0
        marker = -1 - _ROLES.get(p.role or "", 9)
        s.keys.extend([marker] * overhead + keys)
        s.weights.extend([1.0] * overhead + weights)
        s.piece_of.extend([i] * (overhead + len(keys)))
        # token ids get their offsets on first use (a decode), and the markers with them
        lazy = enc is not None and not isinstance(text, ImageText)
        s._offsets.extend([None if lazy else (-1, -1)] * overhead + offsets)
    s.first_unit.append(len(s.keys))
    return s


def _own_units(text: str, tokenizer: Tokenizer) -> tuple[list[Any], list[float], list[Any]]:
    """A piece text's own alignment units: keys, weights and character offsets (None: worked out
    from the token ids when needed). An image is one unit weighing its estimated tokens; a text is
    its token ids, or with an estimating tokenizer its words weighted as their estimated tokens."""
    if isinstance(text, ImageText):
        return [str(text)], [float(text.tokens)], [(0, len(text))]  # no ids to decode
    if tokenizer._encoding is not None:
        ids = tokenizer.encode(text)
        return ids, [1.0] * len(ids), [None] * len(ids)
    words = [(m.group(), len(m.group()) / 4, m.start(), m.end()) for m in _WORDS.finditer(text)]
    return [w[0] for w in words], [w[1] for w in words], [(a, b) for _, _, a, b in words]


def _token_starts(enc: Any, ids: list[int], text: str) -> list[int]:
    """Character offset of each token of ``text`` (tiktoken's offsets when they decode back to it)."""
    if not ids:
        return []
    decoded, offsets = enc.decode_with_offsets(ids)
    if decoded == text:
        return list(offsets)
    step = len(text) / len(ids)  # undecodable bytes: spread the tokens evenly
    return [int(k * step) for k in range(len(ids))]
