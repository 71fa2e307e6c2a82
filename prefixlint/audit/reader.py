"""Read log files as a stream of records: JSONL or JSON, plain or gzip, or standard input.

Nothing is loaded whole: JSONL is read line by line, a JSON array item by item. Every line that
cannot be used becomes a :class:`Problem` with its file and line number; ``strict`` raises on the
first one instead.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from prefixlint.audit.records import FieldMap, LogRecord, RecordError, to_record

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20
_CONTAINER_KEYS = ("records", "requests", "data", "items", "logs")


@dataclass(frozen=True)
class Problem:
    """A record that was not used, and why."""

    source: str
    line: int
    kind: str  # malformed-json, unknown-shape, missing-field, bad-field, not-utf8
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.kind}: {self.message}"


class InputError(Exception):
    """Raised in strict mode on the first problem, and for input that cannot be opened at all."""

    def __init__(self, message: str, problem: Problem | None = None) -> None:
        super().__init__(message)
        self.problem = problem


@dataclass
class InputStats:
    """Records read, used and not used (with the first ``keep`` problems kept for the report)."""

    keep: int = 20
    read: int = 0
    used: int = 0
    problems: list[Problem] = field(default_factory=list)
    by_kind: Counter[str] = field(default_factory=Counter)

    @property
    def malformed(self) -> int:
        return sum(self.by_kind.values())

    def add(self, problem: Problem, strict: bool) -> None:
        if strict:
            raise InputError(str(problem), problem)
        self.by_kind[problem.kind] += 1
        if len(self.problems) < self.keep:
            self.problems.append(problem)

    def merge(self, other: InputStats) -> None:
        self.read += other.read
        self.used += other.used
        self.by_kind.update(other.by_kind)
        for p in other.problems:
            if len(self.problems) < self.keep:
                self.problems.append(p)

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "used": self.used,
            "malformed": self.malformed,
            "by_kind": dict(sorted(self.by_kind.items())),
            "shown": [
                {"source": p.source, "line": p.line, "kind": p.kind, "message": p.message}
                for p in self.problems
            ],
        }


def open_binary(path: str) -> tuple[IO[bytes], str]:
    """A binary stream of ``path`` (``-``: standard input), gunzipped when it starts with gzip's magic."""
    if path == "-":
        raw: IO[bytes] = sys.stdin.buffer
        name = "<stdin>"
    else:
        try:
            raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from exc
        name = path
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=buffered), name  # type: ignore[return-value]
    return buffered, name


def iter_raw(path: str) -> Iterator[tuple[str, int, Any, Problem | None]]:
    """(source, line, parsed entry or None, problem or None) for every entry of one input."""
    stream, name = open_binary(path)
    try:
        first = _first_byte(stream)
        if first == b"[":
            yield from _json_array(stream, name)
        else:
            yield from _json_lines(stream, name)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"{name}: cannot read: {exc}") from exc
    finally:
        if path != "-":
            stream.close()


def _first_byte(stream: IO[bytes]) -> bytes:
    peek = stream.peek(4096) if hasattr(stream, "peek") else b""  # type: ignore[attr-defined]
    text = peek.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text[:1]


def _json_lines(stream: IO[bytes], name: str) -> Iterator[tuple[str, int, Any, Problem | None]]:
    """JSON Lines; a pretty-printed object (``{`` alone on a line, ``}`` at column 0 closing it) is
    read as one entry. A line that starts at column 0 with ``{`` while such an object is open ends
    it as malformed, so one truncated line never swallows the lines after it."""
    pending: list[str] = []
    start = 0
    loads = json.loads
    for number, raw in enumerate(stream, 1):
        if not pending and len(raw) > 8 and raw[:1] == b"{":  # the common case: one object a line
            try:
                obj = loads(raw)  # bytes: decoded (and checked) as UTF-8 by json itself
            except UnicodeDecodeError as exc:
                yield name, number, None, Problem(name, number, "not-utf8", str(exc))
            except json.JSONDecodeError as exc:
                msg = f"{exc.msg} (column {exc.colno})"
                yield name, number, None, Problem(name, number, "malformed-json", msg)
            else:
                yield from _entries(name, number, obj)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield name, number, None, Problem(name, number, "not-utf8", str(exc))
            continue
        if pending:
            if text.startswith("{"):
                yield name, start, None, Problem(name, start, "malformed-json", "unterminated JSON object")
                pending = []
            else:
                pending.append(text)
                if text.startswith("}"):
                    try:
                        obj = loads("".join(pending))
                    except json.JSONDecodeError as exc:
                        yield name, start, None, Problem(name, start, "malformed-json", exc.msg)
                    else:
                        yield from _entries(name, start, obj)
                    pending = []
                continue
        stripped = text.strip()
        if not stripped:
            continue
        if stripped in ("{", "[") and not text[0].isspace():
            pending, start = [text], number
            continue
        try:
            obj = loads(stripped)
        except json.JSONDecodeError as exc:
            msg = f"{exc.msg} (column {exc.colno})"
            yield name, number, None, Problem(name, number, "malformed-json", msg)
            continue
        yield from _entries(name, number, obj)
    if pending:
        yield (
            name,
            start,
            None,
            Problem(name, start, "malformed-json", "unterminated JSON object at end of file"),
        )


def _entries(name: str, line: int, obj: Any) -> Iterator[tuple[str, int, Any, Problem | None]]:
    """A document that wraps its records (``{"records": [...]}``) yields each of them."""
    if isinstance(obj, dict):
        for key in _CONTAINER_KEYS:
            items = obj.get(key)
            wrapper = not any(k in obj for k in ("messages", "input", "request", "body"))
            if wrapper and isinstance(items, list) and items and all(isinstance(i, dict) for i in items):
                for item in items:
                    yield name, line, item, None
                return
    yield name, line, obj, None


def _json_array(stream: IO[bytes], name: str) -> Iterator[tuple[str, int, Any, Problem | None]]:
    """Items of a top-level JSON array, decoded one at a time from a sliding buffer."""
    decoder = json.JSONDecoder()
    reader = io.TextIOWrapper(stream, encoding="utf-8", errors="strict")  # type: ignore[arg-type]
    buf = ""
    line = 1
    eof = False

    def more() -> bool:
        nonlocal buf, eof
        try:
            chunk = reader.read(_CHUNK)
        except UnicodeDecodeError as exc:
            raise InputError(f"{name}: not UTF-8: {exc}") from exc
        if not chunk:
            eof = True
            return False
        buf += chunk
        return True

    more()
    pos = buf.index("[") + 1
    line += buf.count("\n", 0, pos)
    while True:
        while True:  # skip whitespace and one comma
            while pos < len(buf) and buf[pos] in " \t\r\n,":
                if buf[pos] == "\n":
                    line += 1
                pos += 1
            if pos < len(buf) or not more():
                break
        if pos >= len(buf):
            yield name, line, None, Problem(name, line, "malformed-json", "unterminated JSON array")
            return
        if buf[pos] == "]":
            return
        while True:
            try:
                obj, end = decoder.raw_decode(buf, pos)
                break
            except json.JSONDecodeError as exc:
                if not eof and more():
                    continue
                yield (
                    name,
                    line,
                    None,
                    Problem(name, line, "malformed-json", f"{exc.msg}; the rest is not read"),
                )
                return
        yield name, line, obj, None
        line += buf.count("\n", pos, end)
        buf = buf[end:]
        pos = 0


def read_records(
    paths: list[str], fields: FieldMap, stats: InputStats, strict: bool = False
) -> Iterator[LogRecord]:
    """Usable records of every input, in file order; problems go to ``stats``."""
    for path in paths:
        for source, line, raw, problem in iter_raw(path):
            stats.read += 1
            if problem is not None:
                stats.add(problem, strict)
                continue
            try:
                rec = to_record(raw, source, line, fields)
            except RecordError as exc:
                stats.add(Problem(source, line, exc.kind, str(exc)), strict)
                continue
            yield rec
