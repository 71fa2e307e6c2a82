"""Two runs side by side (``prefixlint bench ttft --compare A.json B.json``)."""

from __future__ import annotations

from typing import Any

from prefixlint.live.results import BenchRun


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.1f}"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _name(run: BenchRun, fallback: str) -> str:
    return run.label or f"{fallback}: {run.model} @ {run.base_url}"


def compare_rows(a: BenchRun, b: BenchRun) -> list[dict[str, Any]]:
    """One row per prompt length present in either run (ttft runs)."""
    by_a = {r.prompt_tokens: r for r in a.lengths}
    by_b = {r.prompt_tokens: r for r in b.lengths}
    rows = []
    for n in sorted(set(by_a) | set(by_b)):
        ra, rb = by_a.get(n), by_b.get(n)
        row: dict[str, Any] = {"prompt_tokens": n}
        for tag, r in (("a", ra), ("b", rb)):
            row[f"{tag}_hit_p50_s"] = r.hit.p50_s if r else None
            row[f"{tag}_miss_p50_s"] = r.miss.p50_s if r else None
            row[f"{tag}_hit_p90_s"] = r.hit.p90_s if r else None
            row[f"{tag}_miss_p90_s"] = r.miss.p90_s if r else None
            row[f"{tag}_speedup_p50"] = r.speedup_p50 if r else None
            row[f"{tag}_disagreements"] = r.calibration.disagreements if r else None
        sa, sb = row["a_speedup_p50"], row["b_speedup_p50"]
        row["speedup_ratio_b_over_a"] = sb / sa if sa and sb else None
        rows.append(row)
    return rows


def compare_json(a: BenchRun, b: BenchRun) -> dict[str, Any]:
    """Machine-readable comparison."""
    out: dict[str, Any] = {
        "a": {"label": _name(a, "A"), "created_at": a.created_at, "kind": a.kind},
        "b": {"label": _name(b, "B"), "created_at": b.created_at, "kind": b.kind},
        "lengths": compare_rows(a, b),
    }
    if a.retention or b.retention:
        out["retention"] = {
            tag: (r.retention.model_dump(exclude={"probes", "fills"}) if r.retention else None)
            for tag, r in (("a", a), ("b", b))
        }
    return out


def compare_text(a: BenchRun, b: BenchRun) -> str:
    """A plain-text table of the two runs."""
    lines = [f"A = {_name(a, 'A')} ({a.created_at})", f"B = {_name(b, 'B')} ({b.created_at})", ""]
    rows = compare_rows(a, b)
    if rows:
        head = (
            f"{'tokens':>7}  {'A hit p50':>10} {'A miss p50':>10} {'A speedup':>9}  "
            f"{'B hit p50':>10} {'B miss p50':>10} {'B speedup':>9}  {'B/A':>6}"
        )
        lines += [head + "   (ms)", "-" * len(head)]
        for r in rows:
            lines.append(
                f"{r['prompt_tokens']:>7}  {_ms(r['a_hit_p50_s']):>10} {_ms(r['a_miss_p50_s']):>10} "
                f"{_x(r['a_speedup_p50']):>9}  {_ms(r['b_hit_p50_s']):>10} {_ms(r['b_miss_p50_s']):>10} "
                f"{_x(r['b_speedup_p50']):>9}  {_x(r['speedup_ratio_b_over_a']):>6}"
            )
    for tag, run in (("A", a), ("B", b)):
        if run.retention:
            r = run.retention
            lines.append(f"{tag} retention: {r.verdict}: {r.message}")
    return "\n".join(lines)
