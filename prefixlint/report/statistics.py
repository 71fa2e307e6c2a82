"""``--statistics``: how many findings of each code, and how many are fixable."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from prefixlint.model.findings import Finding
from prefixlint.report.context import ReportContext


def statistics_rows(findings: Sequence[Finding], ctx: ReportContext) -> list[dict[str, object]]:
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for i, f in enumerate(findings) if i in ctx.fixable)
    names = {f.code: f.rule_name for f in findings}
    return [
        {"code": code, "name": names.get(code, ""), "count": n, "fixable": fixable.get(code, 0)}
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


STATISTICS_FORMATS = ("text", "concise", "json", "json-lines")


def render_statistics(findings: Sequence[Finding], ctx: ReportContext, fmt: str = "text") -> str:
    """ruff's ``--statistics`` table (text, concise), a JSON list, or one JSON object per line.

    SARIF and GitHub annotations have no place for counts: the command refuses them
    (:data:`STATISTICS_FORMATS`), and so does this function.
    """
    rows = statistics_rows(findings, ctx)
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    if fmt == "json-lines":
        return "".join(json.dumps(r) + "\n" for r in rows)
    if fmt not in STATISTICS_FORMATS:
        raise ValueError(f"--statistics cannot be shown in the {fmt} output format")
    width = max((len(str(r["count"])) for r in rows), default=1)
    lines = []
    for r in rows:
        mark = "[*]" if r["fixable"] else "   "
        lines.append(f"{r['count']!s:>{width}}\t{r['code']}\t{mark} {r['name']}")
    return "\n".join(lines) + ("\n" if lines else "")
