"""SARIF 2.1.0 output, for GitHub code scanning and other SARIF viewers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefixlint import __version__
from prefixlint.model.findings import Finding, Severity
from prefixlint.model.layout import SourceLocation
from prefixlint.report.context import ReportContext, display_path

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFO_URI = "https://github.com/prefixlint/prefixlint"
_LEVEL = {Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "note", Severity.INFO: "note"}


def _uri(path: str) -> str:
    shown = display_path(path)
    return Path(shown).as_posix() if not Path(shown).is_absolute() else Path(shown).as_uri()


def _region(loc: SourceLocation) -> dict[str, int]:
    region = {"startLine": max(1, loc.line), "startColumn": loc.col + 1}
    if loc.end_line is not None:
        region["endLine"] = max(loc.end_line, region["startLine"])
    if loc.end_col is not None and (loc.end_line or loc.line) >= loc.line:
        region["endColumn"] = max(loc.end_col + 1, 1)
        if (
            region.get("endLine", loc.line) == region["startLine"]
            and region["endColumn"] < region["startColumn"]
        ):
            del region["endColumn"]
    return region


def _physical(loc: SourceLocation) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": _uri(loc.path)}, "region": _region(loc)}}


def _rule_descriptor(code: str) -> dict[str, Any]:
    from prefixlint.rules.base import get_rule

    rule = get_rule(code)
    if rule is None:
        return {"id": code, "shortDescription": {"text": code}}
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary() or rule.name},
        "fullDescription": {"text": rule.documentation() or rule.summary() or rule.name},
        "help": {"text": rule.documentation() or rule.summary() or rule.name},
        "defaultConfiguration": {"level": _LEVEL[rule.default_severity]},
        "properties": {"fix": rule.fix_applicability.value if rule.fix_applicability else "none"},
    }


def sarif_log(findings: Sequence[Finding], ctx: ReportContext | None = None) -> dict[str, Any]:
    """The SARIF log object for ``findings``."""
    codes = sorted({f.code for f in findings})
    index = {c: i for i, c in enumerate(codes)}
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [_physical(f.location)],
        }
        related = [
            {"id": i, **_physical(c), "message": {"text": "value flows through here"}}
            for i, c in enumerate(f.chain)
        ]
        for a in f.also:
            loc = SourceLocation(a["path"], a["line"], a["col"])
            text = f"also ahead of static text: `{a['label']}`"
            related.append({"id": len(related), **_physical(loc), "message": {"text": text}})
        if related:
            result["relatedLocations"] = related
        props: dict[str, Any] = {"severity": f.severity.value, "blocking": f.blocking}
        if f.impact is not None:
            props["tokensLost"] = f.impact.tokens_lost
            props["prefixTokens"] = f.impact.prefix_tokens
            props["impact"] = f.impact.describe()
        result["properties"] = props
        if f.fix is not None and f.fix.edits:
            result["fixes"] = [_sarif_fix(f)]
        results.append(result)
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "prefixlint",
                        "version": __version__,
                        "informationUri": INFO_URI,
                        "rules": [_rule_descriptor(c) for c in codes],
                    }
                },
                "results": results,
            }
        ],
    }


def _sarif_fix(f: Finding) -> dict[str, Any]:
    assert f.fix is not None
    return {
        "description": {"text": f"{f.fix.message} ({f.fix.applicability.value})"},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": _uri(f.fix.path or f.location.path)},
                "replacements": [
                    {
                        "deletedRegion": {"charOffset": e.start, "charLength": e.end - e.start},
                        "insertedContent": {"text": e.content},
                    }
                    for e in f.fix.edits
                ],
            }
        ],
    }


def render_sarif(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return json.dumps(sarif_log(findings, ctx), indent=2) + "\n"
