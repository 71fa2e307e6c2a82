"""Plain-text summary of a bench run, the findings a ``--strict`` run fails on, and the failed
requests every run fails on (an outage is never a pass)."""

from __future__ import annotations

import re

from prefixlint.live.results import BenchRun, Sample


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.1f}"


def all_samples(run: BenchRun) -> list[Sample]:
    """Every request of the run: each length's samples, and retention's fills and probes."""
    out = [s for r in run.lengths for s in r.samples]
    if run.retention:
        out += [*run.retention.fills, *run.retention.probes]
    return out


def _error_kind(error: str) -> str:
    m = re.search(r"HTTP (\d{3})", error)
    if m:
        return f"HTTP {m.group(1)}"
    return error.split(":", 1)[0] or "error"


def errors(run: BenchRun) -> list[str]:
    """One line per kind of failed request (with counts); empty when every request was answered."""
    every = all_samples(run)
    failed = [s for s in every if s.error]
    if not failed:
        return []
    counts: dict[str, int] = {}
    for s in failed:
        kind = _error_kind(s.error or "")
        counts[kind] = counts.get(kind, 0) + 1
    kinds = ", ".join(f"{n} x {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return [f"{len(failed)} of {len(every)} requests failed ({kinds}); first: {failed[0].error}"]


def findings(run: BenchRun) -> list[str]:
    """Where the server's claims disagree with what was measured."""
    out = []
    for r in run.lengths:
        c = r.calibration
        if c.disagreements:
            extra = f" ({c.undecidable} more undecidable, see the note)" if c.undecidable else ""
            out.append(
                f"{r.prompt_tokens} tokens: {c.reported_hit_slow} reported hits with miss-like TTFT{extra}, "
                f"{c.reported_miss_fast} reported misses with hit-like TTFT"
            )
    if run.metrics and run.metrics.mismatch:
        for chk in run.metrics.checks:
            if not chk.agrees:
                out.append(
                    f"metrics: {chk.name} grew by {chk.delta:,.0f}, requests reported {chk.reported:,.0f}"
                )
    if run.retention and run.retention.verdict == "fewer-than-advertised":
        out.append(f"retention: {run.retention.message}")
    return out


def summary_text(run: BenchRun) -> str:
    """Tables of the run, then warnings and findings."""
    lines = [f"{run.kind} bench: {run.model} @ {run.base_url} ({run.endpoint}, tokenizer {run.tokenizer})"]
    if run.lengths:
        head = (
            f"{'tokens':>7} {'prefix':>7} | {'hit p50':>8} {'p90':>8} {'p99':>8} | {'miss p50':>8} "
            f"{'p90':>8} {'p99':>8} | {'speedup':>7} | {'cached hit/miss':>15} | {'thr':>7} "
            f"{'KS p':>8} {'disagree':>8}"
        )
        lines += ["TTFT in ms; speedup = miss p50 / hit p50", head, "-" * len(head)]
        for r in run.lengths:
            c = r.calibration
            cached = (
                f"{r.hit.cached_tokens_mean or 0:.0f}/{r.miss.cached_tokens_mean or 0:.0f}"
                if c.reporting != "none"
                else "not reported"
            )
            speed = f"{r.speedup_p50:.2f}x" if r.speedup_p50 else "-"
            ks = f"{c.ks_pvalue:.2g}" if c.ks_pvalue is not None else "-"
            lines.append(
                f"{r.prompt_tokens:>7} {r.shared_prefix_tokens:>7} | "
                f"{_ms(r.hit.p50_s):>8} {_ms(r.hit.p90_s):>8} {_ms(r.hit.p99_s):>8} | "
                f"{_ms(r.miss.p50_s):>8} {_ms(r.miss.p90_s):>8} {_ms(r.miss.p99_s):>8} | "
                f"{speed:>7} | {cached:>15} | {_ms(c.threshold_s):>7} {ks:>8} {c.disagreements:>8}"
            )
            lines += [f"    note: {n}" for n in c.notes]
    if run.retention:
        ret = run.retention
        if ret.verdict != "error":
            lines.append(
                f"retention: filled {ret.contexts} x {ret.context_tokens:,} tokens; still hit "
                f"(newest first): {ret.retained_contexts} contexts, {ret.retained_tokens:,} tokens "
                f"({ret.detection})"
            )
        lines.append(f"verdict: {ret.verdict}: {ret.message}")
    if run.metrics:
        m = run.metrics
        if not m.available:
            lines.append(f"metrics: none at {m.url}")
        for chk in m.checks:
            lines.append(
                f"metrics: {chk.name} delta {chk.delta:,.0f} vs reported {chk.reported:,.0f}: "
                f"{'agrees' if chk.agrees else 'MISMATCH'}"
            )
        lines += [f"metrics note: {n}" for n in m.notes]
    lines += [f"warning: {w}" for w in run.warnings]
    failed = errors(run)
    lines += [f"ERROR: {e}" for e in failed]
    found = findings(run)
    if found:
        lines += [f"FINDING: {f}" for f in found]
    elif not failed:
        lines.append("no disagreement between reports and timing")
    return "\n".join(lines)
