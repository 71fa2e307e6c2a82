"""Source text of the files prefixlint lints: decoding (UTF-8 or PEP 263), lines, and writing fixes back.

Fix offsets index the decoded text, so nothing here translates newlines; a fixed file is written
in its own encoding with its permissions kept.

Lines are split one way everywhere (findings, suppressions, snippets, ``--add-ignore``): at ``\r\n``,
``\r`` and ``\n``, as Python's tokenizer, libcst and jinja2 do. ``str.splitlines`` also breaks at a
form feed, ``\v``, ``\x1c``-``\x1e``, ``\x85`` and ``\u2028``/``\u2029``, which Python code may hold
inside a line; :func:`split_lines` and :class:`LineIndex` do not.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from prefixlint.model.files import write_atomic
from prefixlint.model.findings import Finding, error_finding

PYTHON_SUFFIXES = (".py", ".pyi")


# Texts that stand in for files on disk while a run looks at them: the fixed text of a file during
# ``--diff``'s rounds, and standard input. Keyed by real path; empty outside such a run.
_OVERLAY: dict[str, str] = {}


@contextmanager
def source_overlay(texts: Mapping[str, str]) -> Iterator[None]:
    """Read ``texts`` (path -> text) instead of those files on disk while the block runs."""
    saved = dict(_OVERLAY)
    _OVERLAY.update({os.path.realpath(p): t for p, t in texts.items()})
    try:
        yield
    finally:
        _OVERLAY.clear()
        _OVERLAY.update(saved)


def overlay_text(path: str) -> str | None:
    """The text standing in for ``path`` in this run (see :func:`source_overlay`), or None."""
    return _OVERLAY.get(os.path.realpath(path)) if _OVERLAY else None


def read_source(path: str) -> tuple[str | None, Finding | None]:
    """The text of ``path`` (or its stand-in, see :func:`source_overlay`), or a PFX001 finding."""
    if _OVERLAY:
        stand_in = overlay_text(path)
        if stand_in is not None:
            return stand_in, None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return None, error_finding(path, f"Cannot read file: {exc.strerror or exc}")
    return decode_source(path, data)


def source_encoding(path: str, data: bytes) -> str:
    """UTF-8, or the PEP 263 ``coding:`` declaration of a Python file.

    Raises SyntaxError for a declaration CPython rejects (unknown codec, BOM with another codec).
    """
    if not path.endswith(PYTHON_SUFFIXES) or b"coding" not in data[:400]:
        return "utf-8"
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return "utf-8" if encoding == "utf-8-sig" else encoding


def decode_source(path: str, data: bytes) -> tuple[str | None, Finding | None]:
    """Decode file bytes (UTF-8 or the declared encoding) without newline translation.

    Fix offsets index this text, and the fixer writes it back with the same encoding.
    """
    if b"\x00" in data[:8192]:
        return None, error_finding(path, "Binary file (contains NUL bytes); not analysed")
    try:
        encoding = source_encoding(path, data)
    except SyntaxError as exc:
        return None, error_finding(path, f"Bad source encoding declaration: {exc}", 1, 0)
    try:
        return data.decode(encoding), None
    except LookupError:
        return None, error_finding(path, f"Unknown source encoding {encoding!r}")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        name = "UTF-8" if encoding == "utf-8" else encoding
        return None, error_finding(
            path, f"File is not valid {name} ({exc.reason} at byte {exc.start})", line, col
        )


def write_source(path: str, text: str) -> None:
    """Replace a source file with ``text`` in the file's own encoding, keeping its permissions."""
    try:
        with open(path, "rb") as fh:
            encoding = source_encoding(path, fh.read(400))
    except (OSError, SyntaxError):
        encoding = "utf-8"
    write_atomic(path, text.encode(encoding), keep_mode=True)


_NEWLINE = re.compile(r"\r\n?|\n")


def line_starts(text: str) -> list[int]:
    """Offsets where each line of ``text`` starts (line 1 at offset 0)."""
    if "\r" not in text:
        starts = [0]
        find = text.find
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        return starts
    return [0, *(m.end() for m in _NEWLINE.finditer(text))]


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of ``text`` split as Python's tokenizer does (like ``str.splitlines`` otherwise)."""
    starts = line_starts(text)
    if starts[-1] == len(text):  # a final line break ends the last line; no empty line after it
        starts.pop()
    if not starts:
        return []
    ends = [*starts[1:], len(text)]
    if keepends:
        return [text[a:b] for a, b in zip(starts, ends, strict=True)]
    out = []
    for a, b in zip(starts, ends, strict=True):
        line = text[a:b]
        if line.endswith("\n"):
            line = line[:-2] if line.endswith("\r\n") else line[:-1]
        elif line.endswith("\r"):
            line = line[:-1]
        out.append(line)
    return out


class LineIndex:
    """Converts between character offsets and (1-based line, 0-based column) in one text."""

    __slots__ = ("starts",)

    def __init__(self, text: str) -> None:
        self.starts = line_starts(text)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and 0-based column of ``offset``."""
        line = bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1]

    def offset(self, line: int, col: int = 0) -> int:
        """The offset of ``line`` (clamped to the text's lines) and ``col``."""
        return self.starts[min(max(line, 1), len(self.starts)) - 1] + col
