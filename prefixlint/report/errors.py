"""A run that fails (exit 2) in a machine-readable output format: the error as that format says it.

``prefixlint check --output-format json`` always prints a report on stdout, even when the run cannot
start (a bad config, a bad path, an unknown option): a consumer that parses stdout never meets an
empty string. Text formats print nothing here; the message is on stderr in every format.

- ``json``: a list with one object shaped like a finding, ``"code": null`` (as ruff reports a syntax
  error), ``"fatal": true`` and the location when the error has one (a line of a config file);
- ``json-lines``: that object on one line;
- ``sarif``: a log whose invocation failed (``executionSuccessful: false``), the error as a
  ``toolExecutionNotification``;
- ``github``: an ``::error`` workflow command.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from prefixlint.report.context import display_path

_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True)
class RunError:
    """Why a run stopped: the message, and where when known."""

    message: str
    path: str | None = None
    line: int | None = None
    column: int | None = None  # 1-based
    exit_code: int = 2

    @classmethod
    def from_message(cls, message: str, path: str | None = None, exit_code: int = 2) -> RunError:
        """An error whose location is read from a TOML parser message (``(at line 3, column 7)``)."""
        m = _TOML_AT.search(message) if path else None
        if m:
            return cls(message, path, int(m.group(1)), int(m.group(2)), exit_code)
        if path and "(at end of document)" in message:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().splitlines()
            except OSError:
                lines = []
            return cls(message, path, max(1, len(lines)), len(lines[-1]) + 1 if lines else 1, exit_code)
        return cls(message, path, 1 if path else None, 1 if path else None, exit_code)


def _object(err: RunError) -> dict[str, Any]:
    where = {"row": err.line, "column": err.column or 1} if err.line is not None else None
    return {
        "code": None,
        "name": "fatal-error",
        "message": err.message,
        "severity": "error",
        "filename": display_path(err.path) if err.path else None,
        "location": where,
        "end_location": where,
        "fix": None,
        "impact": None,
        "chain": [],
        "confidence": None,
        "snippet": "",
        "fatal": True,
        "exit_code": err.exit_code,
    }


def render_error(fmt: str, err: RunError) -> str | None:
    """The error in output format ``fmt``, or None for the text formats (stderr says it)."""
    if fmt == "json":
        return json.dumps([_object(err)], indent=2) + "\n"
    if fmt == "json-lines":
        return json.dumps(_object(err)) + "\n"
    if fmt == "sarif":
        return json.dumps(_sarif(err), indent=2) + "\n"
    if fmt == "github":
        props = "title=prefixlint"
        if err.path:
            props += f",file={_escape(display_path(err.path), True)}"
            if err.line is not None:
                props += f",line={err.line},col={err.column or 1}"
        return f"::error {props}::{_escape(err.message, False)}\n"
    return None


def _escape(text: str, prop: bool) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def _sarif(err: RunError) -> dict[str, Any]:
    from prefixlint.report.sarif import sarif_log

    log = sarif_log([])
    note: dict[str, Any] = {"level": "error", "message": {"text": err.message}}
    if err.path:
        region = {"startLine": err.line or 1, "startColumn": err.column or 1}
        note["locations"] = [
            {"physicalLocation": {"artifactLocation": {"uri": display_path(err.path)}, "region": region}}
        ]
    log["runs"][0]["invocations"] = [
        {"executionSuccessful": False, "exitCode": err.exit_code, "toolExecutionNotifications": [note]}
    ]
    return log
