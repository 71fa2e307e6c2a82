"""Reporters: turn findings into text, JSON, SARIF, GitHub annotations, statistics and the rules table.

Every reporter takes the findings of a run and returns a string; the CLI decides where it goes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from prefixlint.diagnostics import Finding

OUTPUT_FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github")


@dataclass
class ReportContext:
    """What a reporter needs besides the findings."""

    fixable: set[int] = field(default_factory=set)  # indexes of findings fixable in this run
    hidden_unsafe: int = 0  # fixes that --unsafe-fixes would enable
    fixed: int = 0  # findings fixed by --fix in this run
    show_fixes: bool = False
    applied: Sequence[Finding] = ()
    color: bool = False
    quiet: bool = False  # findings only, no summary


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it is below it (ruff prints relative paths)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


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
