"""Suppression comments inside templates: ``{# prefixlint: ignore[PFX101] #}``.

A directive in a comment that shares its line with template content suppresses findings on that
line; a comment alone on its line suppresses the next line. ``prefixlint: ignore-file[...]``
anywhere suppresses the whole file (key 0). No codes means every code. Jinja and prompty use
``{# ... #}``, mustache ``{{! ... }}``; formats without comments (``.format``, plain prompt files,
``$``, ``%``) take the directive on any line, e.g. in a ``<!-- ... -->`` or ``# ...`` line.
"""

from __future__ import annotations

import re

from prefixlint.analysis.templates.files import normalize_newlines

DIRECTIVE = re.compile(r"prefixlint:\s*(?P<what>ignore-file|ignore)\b(?:\[(?P<codes>[^\]]*)\])?", re.I)
_MUSTACHE_COMMENT = re.compile(r"\{\{!(?P<body>.*?)\}\}", re.S)
_COMMENT_PUNCT = " \t#<>!-/*{}"


def _codes(raw: str | None) -> set[str] | None:
    if raw is None:
        return None
    codes = {c.strip().upper() for c in re.split(r"[,\s]+", raw) if c.strip()}
    return codes or None


def _add(out: dict[int, set[str] | None], line: int, codes: set[str] | None) -> None:
    if line in out and out[line] is None:
        return
    if codes is None:
        out[line] = None
    else:
        out[line] = (out.get(line) or set()) | codes


def _comments(text: str, style: str) -> list[tuple[int, int, bool, str]]:
    """``(first_line, last_line, alone_on_its_lines, body)`` of each comment that may hold a directive."""
    lines = text.split("\n")
    spans: list[tuple[int, int, int, int, str]] = []
    if style in ("jinja", "prompty"):
        from prefixlint.analysis.templates.jinja_parse import parse_jinja

        spans = [(s.line, s.col, s.end_line, s.end_col, body) for s, body in parse_jinja(text).comments]
    elif style == "mustache":
        from prefixlint.analysis.templates.emit import LineIndex

        index = LineIndex(text)
        for m in _MUSTACHE_COMMENT.finditer(text):
            (line, col), (end_line, end_col) = index.position(m.start()), index.position(m.end())
            spans.append((line, col, end_line, end_col, m.group("body")))
    else:
        found = []
        for number, line in enumerate(lines, start=1):
            m = DIRECTIVE.search(line)
            if m:
                alone = not (line[: m.start()] + line[m.end() :]).strip(_COMMENT_PUNCT)
                found.append((number, number, alone, m.group(0)))
        return found
    out = []
    for line, col, end_line, end_col, body in spans:  # positions in ``text``: its lines hold them
        before = lines[line - 1][:col]
        after = lines[end_line - 1][end_col:]
        out.append((line, end_line, not before.strip() and not after.strip(), body))
    return out


def template_suppressions(text: str, style: str) -> dict[int, set[str] | None]:
    """Line (1-based; 0 = whole file) -> suppressed codes (None = all codes)."""
    out: dict[int, set[str] | None] = {}
    for line, end_line, alone, body in _comments(normalize_newlines(text), style):
        m = DIRECTIVE.search(body)
        if m is None:
            continue
        codes = _codes(m.group("codes"))
        if m.group("what").lower() == "ignore-file":
            _add(out, 0, codes)
        elif alone:
            _add(out, end_line + 1, codes)
        else:
            for number in range(line, end_line + 1):
                _add(out, number, codes)
    return out
