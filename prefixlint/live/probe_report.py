"""The result of ``prefixlint probe``: per sharing level, whether caching is visible in timing.

Verdicts: ``isolated`` (caching visible within one tenant and ruled out across tenants),
``shared`` (visible across tenants: a timing side channel), ``per-key-only`` (one tenant given:
an audit, not a gate), ``inconclusive`` (a level undecided, the budget spent, or no caching
visible even within one tenant), ``error`` (requests failed).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

from prefixlint.live.run_file import ServerRun, StrictModel

PROBE_SCHEMA_ID = "prefixlint.probe/v1"

# detected / ruled-out: decided at a look; not-detected: the per-key level at max_samples;
# undecided: a level across tenants at max_samples, or any level when the budget ran out first.
Decision = Literal["detected", "ruled-out", "not-detected", "undecided", "not-run"]
Verdict = Literal["isolated", "shared", "per-key-only", "inconclusive", "error"]


class ProbeSample(StrictModel):
    """One timed attacker request (the victim's requests are not timed)."""

    level: str
    arm: Literal["hit", "miss"]
    ttft_s: float | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    error: str | None = None


class LookRecord(StrictModel):
    """One look at a level: samples per arm and the two p-values."""

    n: int
    p_detect: float
    p_rule_out: float | None = None


class LevelResult(StrictModel):
    """One sharing level: who primes the cache (victim), who is timed (attacker)."""

    level: str
    victim: str
    attacker: str
    decision: Decision = "not-run"
    n_hit: int = 0
    n_miss: int = 0
    hit_p50_s: float | None = None
    miss_p50_s: float | None = None
    p_value: float | None = Field(None, description="one-sided KS p that hits are faster, at the last look")
    p_rule_out: float | None = Field(None, description="KS p that hits are slower than same-tenant hits")
    alpha_look: float | None = None
    stopped_early: bool = False
    hit_cached_tokens_mean: float | None = None
    miss_cached_tokens_mean: float | None = None
    errors: int = 0
    looks: list[LookRecord] = Field(default_factory=list)


class ProbeRun(ServerRun):
    """One run of the probe; the top-level JSON object."""

    schema_id: str = PROBE_SCHEMA_ID
    plan: dict[str, Any] = Field(default_factory=dict)
    levels: list[LevelResult] = Field(default_factory=list)
    verdict: Verdict = "inconclusive"
    sharing_level: str | None = Field(None, description="the widest level at which caching is detected")
    requests_sent: int = 0
    prompt_tokens_sent: int = 0
    elapsed_s: float = 0.0
    budget_exhausted: str | None = None
    failed_requests: int = 0
    notes: list[str] = Field(default_factory=list)
    samples: list[ProbeSample] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True for ``isolated`` and ``per-key-only``."""
        return self.verdict in ("isolated", "per-key-only")

    def to_json(self, *, samples: bool = True) -> str:
        """Pretty JSON; ``samples=False`` drops the per-request list."""
        data = self.model_dump(mode="json")
        if not samples:
            data["samples"] = []
        return json.dumps(data, indent=2)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.1f}"


def _p(v: float | None) -> str:
    return "-" if v is None else f"{v:.2g}"


VERDICT_LINES = {
    "isolated": "ISOLATED: caching is visible within one tenant and ruled out across tenants",
    "shared": "SHARED: another tenant's cache is visible in timing (a timing side channel)",
    "per-key-only": "AUDIT: one tenant only; nothing across tenants was tested",
    "inconclusive": "INCONCLUSIVE: the probe could not decide",
    "error": "ERROR: requests failed; the probe is not a pass",
}


def probe_text(run: ProbeRun) -> str:
    """A table per level, notes, and the verdict line."""
    tenants = ", ".join(f"{t['name']} ({t['kind']})" for t in run.tenants)
    s = run.settings
    lines = [
        f"probe: {run.model} @ {run.base_url} ({run.endpoint}); tenants: {tenants}",
        f"prompts of {s.get('prompt_tokens')} tokens, {s.get('shared_prefix_tokens')} shared by a hit; "
        f"alpha {s.get('alpha')}, {s.get('min_samples')}..{s.get('max_samples')} samples per arm",
        "",
        f"{'level':<13} {'decision':<18} {'n hit/miss':>10} {'hit p50':>8} {'miss p50':>8} "
        f"{'KS p':>8} {'rule-out p':>10}  cached hit/miss",
    ]
    lines.append("-" * len(lines[-1]))
    for lv in run.levels:
        cached = (
            f"{lv.hit_cached_tokens_mean:.0f}/{lv.miss_cached_tokens_mean or 0:.0f}"
            if lv.hit_cached_tokens_mean is not None
            else "not reported"
        )
        early = " (early)" if lv.stopped_early else ""
        lines.append(
            f"{lv.level:<13} {lv.decision + early:<18} {f'{lv.n_hit}/{lv.n_miss}':>10} "
            f"{_ms(lv.hit_p50_s):>8} {_ms(lv.miss_p50_s):>8} {_p(lv.p_value):>8} "
            f"{_p(lv.p_rule_out):>10}  {cached}"
        )
    lines.append("TTFT in ms; KS p: one-sided two-sample Kolmogorov-Smirnov that hits are faster")
    lines.append(
        "who: " + "; ".join(f"{lv.level}: {lv.victim} primes, {lv.attacker} is timed" for lv in run.levels)
    )
    looks = s.get("looks") or []
    if looks:
        lines.append(
            f"each look (up to {len(looks)}, at {', '.join(map(str, looks))} samples per arm) tested at "
            f"{s.get('alpha', 0) / len(looks):.2g}"
        )
    lines += [f"note: {n}" for n in run.notes]
    if run.budget_exhausted:
        lines.append(f"note: stopped early: {run.budget_exhausted}")
    lines.append(
        f"{run.requests_sent} requests, {run.prompt_tokens_sent:,} prompt tokens, {run.elapsed_s:.1f} s; "
        f"{run.failed_requests} failed"
    )
    if run.sharing_level:
        lines.append(f"caching detectable at: {run.sharing_level}")
    lines.append(VERDICT_LINES[run.verdict])
    return "\n".join(lines)
