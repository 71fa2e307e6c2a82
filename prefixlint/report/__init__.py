"""Reporters: turn findings into text, JSON, SARIF, GitHub annotations, statistics and the rules table.

Takes the findings of a run (and rule metadata for SARIF and the rules table); gives a string. The
command decides where it goes.
"""

from __future__ import annotations

from collections.abc import Sequence

from prefixlint.model.findings import Finding
from prefixlint.report.context import ReportContext, display_path

__all__ = ["OUTPUT_FORMATS", "ReportContext", "display_path", "render"]

OUTPUT_FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github")


def render(fmt: str, findings: Sequence[Finding], ctx: ReportContext) -> str:
    """The report of ``findings`` in output format ``fmt``."""
    if fmt in ("text", "concise"):
        from prefixlint.report.text import render_text

        return render_text(findings, ctx, concise=fmt == "concise")
    if fmt == "json":
        from prefixlint.report.json import render_json

        return render_json(findings, ctx)
    if fmt == "json-lines":
        from prefixlint.report.json import render_json_lines

        return render_json_lines(findings, ctx)
    if fmt == "sarif":
        from prefixlint.report.sarif import render_sarif

        return render_sarif(findings, ctx)
    if fmt == "github":
        from prefixlint.report.github import render_github

        return render_github(findings, ctx)
    raise ValueError(f"unknown output format {fmt!r}")
