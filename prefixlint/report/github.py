"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` annotation per finding."""

from __future__ import annotations

from collections.abc import Sequence

from prefixlint.model.findings import Finding, Severity
from prefixlint.report.context import ReportContext, display_path

_LEVEL = {
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "warning",
    Severity.INFO: "notice",
}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(findings: Sequence[Finding], ctx: ReportContext) -> str:
    lines = []
    for f in findings:
        loc = f.location
        props = [
            f"title={_escape_property(f'prefixlint ({f.code})')}",
            f"file={_escape_property(display_path(loc.path))}",
            f"line={loc.line}",
            f"col={loc.col + 1}",
            f"endLine={loc.end_line or loc.line}",
            f"endColumn={(loc.end_col if loc.end_col is not None else loc.col) + 1}",
        ]
        msg = f"{f.code} {f.message}"
        if f.impact is not None:
            msg += f" ({f.impact.describe()})"
        lines.append(f"::{_LEVEL[f.severity]} {','.join(props)}::{_escape_data(msg)}\n")
    return "".join(lines)
