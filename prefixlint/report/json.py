"""JSON and JSON-lines output: every field of a finding, including fix applicability, impact and chain."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from prefixlint.model.findings import Finding
from prefixlint.report.context import ReportContext, display_path


def _loc(line: int, col: int | None) -> dict[str, int]:
    return {"row": line, "column": (col or 0) + 1}


def finding_json(f: Finding, fixable: bool) -> dict[str, Any]:
    """One finding as a JSON object (ruff's field names where they exist)."""
    loc = f.location
    fix = None
    if f.fix is not None:
        fix = {
            "applicability": f.fix.applicability.value,
            "message": f.fix.message,
            "purpose": f.fix.purpose,
            "path": display_path(f.fix.path or loc.path),
            "applies_in_this_run": fixable,
            "edits": [{"start": e.start, "end": e.end, "content": e.content} for e in f.fix.edits],
        }
    impact = None
    if f.impact is not None:
        i = f.impact
        impact = {
            "tokens_lost": i.tokens_lost,
            "prefix_tokens": i.prefix_tokens,
            "reaches_minimum": i.reaches_minimum,
            "minimum": i.minimum,
            "exact": i.exact,
            "encoding": i.encoding,
            "history_priced": i.history_priced,
            "description": i.describe(),
        }
    return {
        "code": f.code,
        "name": f.rule_name,
        "message": f.message,
        "severity": f.severity.value,
        "filename": display_path(loc.path),
        "location": _loc(loc.line, loc.col),
        "end_location": _loc(loc.end_line or loc.line, loc.end_col if loc.end_col is not None else loc.col),
        "fix": fix,
        "impact": impact,
        "chain": [{"filename": display_path(c.path), "location": _loc(c.line, c.col)} for c in f.chain],
        "confidence": f.confidence,
        "snippet": f.snippet,
    }


def render_json(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return json.dumps([finding_json(f, i in ctx.fixable) for i, f in enumerate(findings)], indent=2) + "\n"


def render_json_lines(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return "".join(json.dumps(finding_json(f, i in ctx.fixable)) + "\n" for i, f in enumerate(findings))
