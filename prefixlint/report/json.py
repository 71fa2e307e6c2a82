"""JSON and JSON-lines output: every field of a finding, including fix applicability, impact and chain.

Beyond ruff's fields: ``severity``, ``blocking`` (whether it fails the run; informational findings
do not), ``impact`` (tokens lost and at stake), ``value`` (kind, timing, granularity and cardinality
of the dynamic value, where the rule is about one), ``also`` (the other values of the same cause in
the same prompt) and ``alternative_fixes`` (shown, never applied).
"""

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
            "history_follows": i.history_follows,
            "can_reach_minimum": i.can_reach_minimum,
            "at_stake": i.at_stake,
            "description": i.describe(),
        }
    value = None
    if "timing" in f.extra:
        value = {k: f.extra.get(k) for k in ("kind", "timing", "granularity", "cardinality", "conditional")}
    return {
        "code": f.code,
        "name": f.rule_name,
        "message": f.message,
        "severity": f.severity.value,
        "blocking": f.blocking,
        "filename": display_path(loc.path),
        "location": _loc(loc.line, loc.col),
        "end_location": _loc(loc.end_line or loc.line, loc.end_col if loc.end_col is not None else loc.col),
        "fix": fix,
        "impact": impact,
        "chain": [{"filename": display_path(c.path), "location": _loc(c.line, c.col)} for c in f.chain],
        "confidence": f.confidence,
        "snippet": f.snippet,
        "value": value,
        "also": [
            {
                "filename": display_path(a["path"]),
                "location": _loc(a["line"], a["col"]),
                "label": a["label"],
                "kind": a["kind"],
            }
            for a in f.also
        ],
        "alternative_fixes": list(f.extra.get("alternative_fixes", ())),
    }


def render_json(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return json.dumps([finding_json(f, i in ctx.fixable) for i, f in enumerate(findings)], indent=2) + "\n"


def render_json_lines(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return "".join(json.dumps(finding_json(f, i in ctx.fixable)) + "\n" for i, f in enumerate(findings))
