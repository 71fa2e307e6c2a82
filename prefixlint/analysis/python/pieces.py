"""Where each character of a template written as several string literals sits in the source.

``("Answer with the context.\\n\\n" "Context:\\n{context}\\n" f"{RULES}")`` is one template whose text
comes from several literals (and f-string constants) on several lines. A placeholder's place in the
joined text is not a fixed distance from the first literal, so each piece is recorded with its text
offset and source position, and a location computed from the text alone is moved onto the piece.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import replace

import libcst as cst

from prefixlint.analysis.python.collect import ModuleInfo, evaluated
from prefixlint.model.layout import Segment, SourceLocation, evolve

# (offset in the joined text, 0-based source line, column) of each piece's first character, and
# whether its text's newlines are escapes written on one source line (``"a\\nb"``)
Piece = tuple[int, int, int, bool]


def string_pieces(
    node: cst.BaseExpression, mod: ModuleInfo, constant: Callable[[cst.BaseExpression], str | None]
) -> tuple[str, tuple[Piece, ...]] | None:
    """The text of a concatenation of literals and f-strings with constant values, and its pieces.

    ``constant`` gives the text of an f-string's expression when it is a constant (None otherwise).
    """
    text: list[str] = []
    pieces: list[Piece] = []
    size = 0

    def add(value: str, at: tuple[int, int] | None, source: str = "") -> None:
        nonlocal size
        if at is not None:
            pieces.append((size, at[0] - 1, at[1], "\n" not in source))
        text.append(value)
        size += len(value)

    def walk(part: cst.BaseExpression) -> bool:
        if isinstance(part, cst.ConcatenatedString):
            return walk(part.left) and walk(part.right)
        if isinstance(part, cst.SimpleString):
            value = evaluated(part)
            if not isinstance(value, str):
                return False
            at = mod.start(part)
            body = part.value[len(part.prefix) + len(part.quote) :]
            if at is not None and body.startswith("\\\n"):
                at = (at[0] + 1, 0)
            elif at is not None:
                at = (at[0], at[1] + len(part.prefix) + len(part.quote))
            add(value, at, body)
            return True
        if isinstance(part, cst.FormattedString):
            for item in part.parts:
                if isinstance(item, cst.FormattedStringText):
                    add(_unescape(item.value, part), mod.start(item), item.value)
                elif isinstance(item, cst.FormattedStringExpression) and item.format_spec is None:
                    value = constant(item.expression)
                    if value is None:
                        return False
                    add(value, None)  # text from elsewhere: it stays with the piece before it
                else:
                    return False
            return True
        return False

    if not isinstance(node, (cst.ConcatenatedString, cst.FormattedString)) or not walk(node):
        return None
    return "".join(text), tuple(pieces)


def _unescape(raw: str, node: cst.FormattedString) -> str:
    """An f-string's literal text as Python reads it (``{{`` is ``{``, ``\\n`` a newline)."""
    prefix = node.start[: -len(node.end)].replace("f", "").replace("F", "")
    return decode_literal(raw, prefix, node.end, "r" in prefix.lower())


def decode_literal(value: str, prefix: str, quote: str, raw: bool) -> str:
    """The text of an f-string's literal part as Python reads it: ``{{`` is ``{``, and escapes are
    decoded unless the string is raw (``prefix`` without the ``f``, ``quote`` its quotes)."""
    value = value.replace("{{", "{").replace("}}", "}")
    if raw or "\\" not in value:
        return value
    try:
        out = ast.literal_eval(f"{prefix}{quote}{value}{quote}")
    except (SyntaxError, ValueError):
        return value
    return out.decode("utf-8", "replace") if isinstance(out, bytes) else str(out)


def relocate(
    segs: list[Segment], text: str, path: str, start: tuple[int, int], pieces: tuple[Piece, ...]
) -> list[Segment]:
    """``segs`` rendered from ``text`` as if it started at ``start`` (0-based line, column), with
    each location in ``path`` moved onto the literal piece that holds it."""
    if not pieces:
        return segs
    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    offsets = [p[0] for p in pieces]
    out = []

    def move(loc: SourceLocation | None) -> SourceLocation | None:
        if loc is None or loc.path != path:
            return loc
        return _moved(loc, text, start, line_starts, offsets, pieces) or loc

    for seg in segs:
        out.append(evolve(seg, location=move(seg.location), chain=tuple(move(c) for c in seg.chain)))
    return out


def _moved(
    loc: SourceLocation,
    text: str,
    start: tuple[int, int],
    line_starts: list[int],
    offsets: list[int],
    pieces: tuple[Piece, ...],
) -> SourceLocation | None:
    line = loc.line - start[0] - 1  # 0-based line of the joined text
    if not 0 <= line < len(line_starts):
        return None
    col = loc.col - (start[1] if line == 0 else 0)
    offset = line_starts[line] + max(col, 0)
    if bisect_right(offsets, offset) < 1 or offset > len(text):
        return None
    _, line0, new_col, _ = position(text, start, pieces, offset)
    new_line = line0 + 1
    width = None
    if loc.end_line == loc.line and loc.end_col is not None:
        width = loc.end_col - loc.col
    return replace(
        loc,
        line=new_line,
        col=new_col,
        end_line=new_line if width is not None else loc.end_line,
        end_col=new_col + width if width is not None else loc.end_col,
    )


def position(text: str, start: tuple[int, int], pieces: tuple[Piece, ...], offset: int) -> Piece:
    """Where character ``offset`` of a template's ``text`` sits: ``(offset, 0-based line, column,
    one_line)``, from its pieces, or from ``start`` for a text written as one literal."""
    if not pieces or offset < pieces[0][0]:
        within = text[:offset]
        newlines = within.count("\n")
        if newlines:
            return offset, start[0] + newlines, offset - within.rfind("\n") - 1, False
        return offset, start[0], start[1] + offset, False
    base, line, col, one_line = pieces[bisect_right([p[0] for p in pieces], offset) - 1]
    within = text[base:offset]
    if one_line:  # each escape (``\\n``, ``\\t``) is two source characters
        return offset, line, col + len(within) + sum(within.count(c) for c in "\n\t\\"), True
    newlines = within.count("\n")
    if newlines:
        return offset, line + newlines, len(within) - within.rfind("\n") - 1, False
    return offset, line, col + len(within), False


def replaced_pieces(
    text: str, start: tuple[int, int], pieces: tuple[Piece, ...], old: str, new: str
) -> tuple[str, tuple[Piece, ...]]:
    """``text.replace(old, new)`` and the pieces of the result: each kept run of the old text stays
    where it was written; the text put in comes from elsewhere and stays with the piece before it."""
    out: list[str] = []
    made: list[Piece] = []
    size = at = 0
    while True:
        found = text.find(old, at)
        end = len(text) if found < 0 else found
        if end > at:
            _, line, col, one_line = position(text, start, pieces, at)
            made.append((size, line, col, one_line))
            out.append(text[at:end])
            size += end - at
        if found < 0:
            return "".join(out), tuple(made)
        out.append(new)
        size += len(new)
        at = found + len(old)
