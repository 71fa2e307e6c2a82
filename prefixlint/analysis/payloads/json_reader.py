"""A JSON reader that keeps positions: every value's span in the file, by its JSON path.

``json.loads`` (C) parses and words syntax errors; one more pass over the (then valid) text records the
start and end offset of every value under its path (``messages[2].content[0]``, ``tools[3]``,
``system[0].cache_control``). Paths use ``.key`` for identifier-like keys and ``["key"]`` otherwise,
as the payload pieces name them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring
from typing import Any

from prefixlint.model.json_text import LineIndex, string_char_offset
from prefixlint.model.layout import SourceLocation

_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|NaN|-?Infinity")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class JsonSyntaxError(ValueError):
    """Malformed JSON: the message of :func:`json.loads` and where it stopped (1-based line, 0-based col)."""

    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(f"{message} (line {line}, column {col + 1})")
        self.reason = message
        self.line = line
        self.col = col


def child_path(parent: str, key: str) -> str:
    """The path of ``key`` inside the object at ``parent``."""
    if _IDENT.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def index_path(parent: str, index: int) -> str:
    return f"{parent}[{index}]"


@dataclass
class JsonDocument:
    """One parsed JSON value of a file, with the span of every value inside it.

    ``spans`` maps a path to ``(start, end)`` offsets into ``text`` (the whole file: one file holds
    several documents in JSON Lines). ``lines`` converts offsets to lines and columns.
    """

    value: Any
    text: str
    lines: LineIndex
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    start: int = 0

    def location(self, path: str, file: str) -> SourceLocation | None:
        """Where the value at ``path`` starts and ends in ``file``, or None when there is none."""
        span = self.spans.get(path)
        if span is None:
            return None
        line, col = self.lines.position(span[0])
        end_line, end_col = self.lines.position(span[1])
        return SourceLocation(file, line, col, end_line, end_col)

    def char_location(self, path: str, start: int, end: int, file: str) -> SourceLocation | None:
        """Where characters ``[start, end)`` of the string at ``path`` sit in ``file``.

        Escapes are followed, so the column is the one an editor shows. A value that is not a string
        gives its own location.
        """
        span = self.spans.get(path)
        if span is None:
            return None
        if self.text[span[0]] != '"':
            return self.location(path, file)
        a = string_char_offset(self.text, span[0], start)
        b = string_char_offset(self.text, span[0], end)
        line, col = self.lines.position(a)
        end_line, end_col = self.lines.position(b)
        return SourceLocation(file, line, col, end_line, end_col)


def read_json(
    text: str, start: int = 0, end: int | None = None, lines: LineIndex | None = None
) -> JsonDocument:
    """Parse ``text[start:end]`` as one JSON value and record every value's span.

    Raises :class:`JsonSyntaxError` with the line and column (in ``text``) where parsing stopped.
    """
    stop = len(text) if end is None else end
    if start == 0 and text.startswith("\ufeff"):  # a byte order mark: JSON parsers may ignore it
        start = 1
    lines = lines or LineIndex(text)
    try:
        value = json.loads(text[start:stop])
    except json.JSONDecodeError as exc:
        line, col = lines.position(start + exc.pos)
        raise JsonSyntaxError(exc.msg, line, col) from None
    except RecursionError:
        line, col = lines.position(start)
        raise JsonSyntaxError("too deeply nested", line, col) from None
    first = _WS.match(text, start).end()
    return JsonDocument(value, text, lines, _spans(text, first), first)


def _spans(text: str, pos: int) -> dict[str, tuple[int, int]]:
    """Span of every value of the valid JSON value starting at ``pos``, by path (iterative)."""
    spans: dict[str, tuple[int, int]] = {}
    ws = _WS.match
    # open containers: [is_object, path, start offset, next index]
    stack: list[list[Any]] = []
    path = ""
    while True:
        c = text[pos]
        closed = False
        if c == "{" or c == "[":
            stack.append([c == "{", path, pos, 0])
            pos = ws(text, pos + 1).end()
            if text[pos] not in "}]":  # else empty: the loop below closes it
                if c == "{":
                    key, pos = scanstring(text, pos + 1)
                    pos = ws(text, ws(text, pos).end() + 1).end()  # past ':'
                    path = child_path(path, key)
                else:
                    path = index_path(path, 0)
                continue
        elif c == '"':
            _, end = scanstring(text, pos + 1)
            spans[path] = (pos, end)
            pos = end
        else:
            m = _SCALAR.match(text, pos)
            end = m.end() if m else pos + 1
            spans[path] = (pos, end)
            pos = end
        # after a value (or an empty container): close containers until one continues
        while True:
            if closed:
                pos += 1
                top = stack.pop()
                spans[top[1]] = (top[2], pos)
                closed = False
            pos = ws(text, pos).end()
            if not stack:
                return spans
            top = stack[-1]
            if text[pos] == ",":
                pos = ws(text, pos + 1).end()
                if top[0]:
                    key, pos = scanstring(text, pos + 1)
                    pos = ws(text, ws(text, pos).end() + 1).end()
                    path = child_path(top[1], key)
                else:
                    top[3] += 1
                    path = index_path(top[1], top[3])
                break
            closed = True


def read_json_lines(text: str) -> list[JsonDocument | JsonSyntaxError]:
    """Each non-blank line of ``text`` as a document (or the error that line has), in order."""
    lines = LineIndex(text)
    out: list[JsonDocument | JsonSyntaxError] = []
    pos = 0
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        stop = n if nl < 0 else nl
        if text[pos:stop].strip():
            try:
                out.append(read_json(text, pos, stop, lines))
            except JsonSyntaxError as exc:
                out.append(exc)
        pos = stop + 1
    return out
