"""Positions in JSON text: offsets to lines and columns, and a string value's characters to offsets.

A payload segment knows where its JSON string starts; a rule that finds something inside the decoded
string (a timestamp at character 40) maps that character back to the file with
:func:`string_char_offset`, through the escapes (``\\n``, ``\\u00e9``, surrogate pairs).
"""

from __future__ import annotations

import re
from bisect import bisect_right

from prefixlint.model.layout import SourceLocation

_NEWLINE = re.compile(r"\n")
_ESCAPE = re.compile(r'[\\"]')


class LineIndex:
    """Line starts of a text: offset <-> (1-based line, 0-based column)."""

    __slots__ = ("starts",)

    def __init__(self, text: str) -> None:
        self.starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def position(self, offset: int) -> tuple[int, int]:
        """``(line, col)`` of ``offset``: line 1-based, column 0-based (as ruff stores them)."""
        line = bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1]

    def offset(self, line: int, col: int) -> int:
        """The offset of ``line`` (1-based) and ``col`` (0-based)."""
        return self.starts[min(max(line, 1), len(self.starts)) - 1] + col


def string_char_offset(text: str, quote: int, index: int) -> int:
    """Offset in ``text`` of decoded character ``index`` of the JSON string whose ``"`` is at ``quote``.

    An ``index`` past the end gives the offset of the closing quote. A ``\\uD83D\\uDE00`` pair decodes
    to one character, as :func:`json.loads` decodes it.
    """
    pos = quote + 1
    seen = 0
    while True:
        m = _ESCAPE.search(text, pos)
        stop = m.start() if m else len(text)
        if seen + (stop - pos) > index:  # the character lies in this run of plain characters
            return pos + (index - seen)
        seen += stop - pos
        if m is None or text[stop] == '"':
            return stop
        if seen == index:
            return stop
        esc = text[stop + 1 : stop + 2]
        if esc == "u":
            width = 6
            pair = text[stop + 6 : stop + 8] == "\\u"
            if pair and _is_surrogate_pair(text[stop + 2 : stop + 6], text[stop + 8 : stop + 12]):
                width = 12
        else:
            width = 2
        seen += 1
        pos = stop + width


def _is_surrogate_pair(high: str, low: str) -> bool:
    try:
        return 0xD800 <= int(high, 16) <= 0xDBFF and 0xDC00 <= int(low, 16) <= 0xDFFF
    except ValueError:
        return False


def locate_in_string(source: str, at: SourceLocation, start: int, end: int) -> SourceLocation | None:
    """Where characters ``[start, end)`` of the JSON string that begins at ``at`` sit in ``source``.

    None when no JSON string begins there (the location is not a string's opening quote).
    """
    lines = LineIndex(source)
    quote = lines.offset(at.line, at.col)
    if source[quote : quote + 1] != '"':
        return None
    a, b = string_char_offset(source, quote, start), string_char_offset(source, quote, end)
    (line, col), (end_line, end_col) = lines.position(a), lines.position(b)
    return SourceLocation(at.path, line, col, end_line, end_col)
