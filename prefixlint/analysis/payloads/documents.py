"""Payload files: a JSON request body, a JSON Lines file of them, or batch files that wrap them.

Each request found becomes a :class:`Payload`: the body, its request shape (``chat``, ``responses`` or
``messages``), and the positions of its values in the file. Malformed JSON and documents that are not
requests become analysis errors with a line and column; nothing here raises for bad input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint.analysis.payloads.json_reader import (
    JsonDocument,
    JsonSyntaxError,
    child_path,
    index_path,
    read_json,
    read_json_lines,
)
from prefixlint.analysis.payloads.shapes import detect_api, is_request_body
from prefixlint.analysis.payloads.sniff import JSONL_SUFFIXES
from prefixlint.analysis.result import AnalysisError
from prefixlint.model.layout import SourceLocation

# Keys of a line in a batch or log file that hold the request body.
_WRAPPERS = ("body", "params", "request")


@dataclass
class Payload:
    """One request body inside a payload file."""

    body: dict[str, Any]
    api: str
    doc: JsonDocument
    file: str
    prefix: str = ""  # the path of the body inside its document ("", "body", "params", "[3]")
    number: int = 1  # 1-based position of the request in its file
    shared: bool = False  # the file holds other requests too

    @property
    def line(self) -> int:
        """The line the request starts on."""
        span = self.doc.spans.get(self.prefix)
        return self.doc.lines.position(span[0] if span else self.doc.start)[0]

    @property
    def label(self) -> str:
        """``name.json``, or ``name.jsonl:7`` for a request that shares its file with others."""
        name = Path(self.file).name
        return f"{name}:{self.line}" if self.shared else name

    def full_path(self, path: str) -> str:
        """The path of a body value inside the document (``messages[0]`` -> ``body.messages[0]``)."""
        if not self.prefix:
            return path
        if not path:
            return self.prefix
        return f"{self.prefix}{path}" if path.startswith("[") else f"{self.prefix}.{path}"

    def locate(self, path: str) -> SourceLocation | None:
        """Where the value at ``path`` (a path inside the body) sits in the file."""
        return self.doc.location(self.full_path(path), self.file)

    def locate_piece(self, path: str) -> SourceLocation | None:
        """Where a piece sits: the string holding its text (``path``, or ``path.text`` for a content
        block), else the value at ``path``."""
        text_path = self.full_path(f"{path}.text")
        span = self.doc.spans.get(text_path)
        if span is not None and self.doc.text[span[0]] == '"':
            return self.doc.location(text_path, self.file)
        return self.locate(path)

    def locate_text(self, path: str, start: int, end: int) -> SourceLocation | None:
        """Where characters ``[start, end)`` of a piece's text sit: in the string at ``path`` (or at
        ``path.text`` for a content block), else the value at ``path`` as a whole."""
        for candidate in (path, f"{path}.text"):
            full = self.full_path(candidate)
            span = self.doc.spans.get(full)
            if span is not None and self.doc.text[span[0]] == '"':
                return self.doc.char_location(full, start, end, self.file)
        return self.locate(path)


@dataclass
class PayloadFile:
    """The requests of one file, and what could not be read."""

    path: str
    text: str
    payloads: list[Payload] = field(default_factory=list)
    errors: list[AnalysisError] = field(default_factory=list)


def read_payload_file(path: str, text: str, shape: str = "auto") -> PayloadFile:
    """The requests in ``text`` (a file named ``path``); ``shape`` forces the request shape."""
    out = PayloadFile(path, text)
    docs: list[JsonDocument | JsonSyntaxError]
    if path.endswith(JSONL_SUFFIXES):
        docs = read_json_lines(text)
    else:
        try:
            docs = [read_json(text)]
        except JsonSyntaxError as exc:
            # JSON Lines saved as .json: a first value, then more on the next lines
            docs = read_json_lines(text) if exc.reason == "Extra data" and exc.col == 0 else [exc]
    not_requests: list[int] = []
    for doc in docs:
        if isinstance(doc, JsonSyntaxError):
            out.errors.append(
                AnalysisError(SourceLocation(path, doc.line, doc.col), f"Malformed JSON: {doc.reason}")
            )
            continue
        found = list(_requests(doc))
        if not found:
            not_requests.append(doc.lines.position(doc.start)[0])
        for prefix, body in found:
            api = shape if shape != "auto" else detect_api(body)
            out.payloads.append(Payload(body, api, doc, path, prefix, len(out.payloads) + 1))
    if not_requests:
        out.errors.append(_not_a_request(path, not_requests, len(docs)))
    if len(out.payloads) > 1:
        for p in out.payloads:
            p.shared = True
    return out


def _requests(doc: JsonDocument) -> list[tuple[str, dict[str, Any]]]:
    """``(path, body)`` of each request in a document: the document itself, a wrapped body, or a list."""
    value = doc.value
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            out.extend((child, body) for child, body in _unwrap(item, index_path("", i)))
        return out
    return _unwrap(value, "")


def _unwrap(value: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
    if not isinstance(value, dict):
        return []
    if is_request_body(value):
        return [(path, value)]
    for key in _WRAPPERS:
        inner = value.get(key)
        if isinstance(inner, dict) and is_request_body(inner):
            return [(child_path(path, key), inner)]
    return []


def _not_a_request(path: str, lines: list[int], total: int) -> AnalysisError:
    expected = (
        "expected `messages` (chat completions, Anthropic messages) or `input` (responses), "
        "or a batch line whose `body` or `params` holds one"
    )
    if total == 1:
        message = f"Not a request payload: {expected}"
    else:
        message = (
            f"{len(lines)} of {total} lines are not request payloads (first: line {lines[0]}); {expected}"
        )
    return AnalysisError(SourceLocation(path, lines[0], 0), message)
