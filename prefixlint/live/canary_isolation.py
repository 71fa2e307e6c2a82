"""The canary's isolation checks: whatever tenant A sends must not reach tenant B.

* **determinism**: B's greedy answer to one fixed prompt, before and after rounds of A's canary
  traffic, must not change (this catches a leak even from a model whose text means nothing);
* **canary-strings**: none of B's answers or top logprobs may carry A's markers or runs of A's words;
* **cross-tenant-cache**: another tenant on A's exact prefix gets no more cached tokens than on a
  fresh prompt, while A's own repeat (the control) hits.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from prefixlint.live.canary_report import (
    CheckResult,
    RequestRecord,
    Status,
    failure_lines,
    failure_summary,
    status_of,
)
from prefixlint.live.client import Completion
from prefixlint.live.leaks import Divergence, compare_greedy

if TYPE_CHECKING:
    from prefixlint.live.canary import Canary


def check_determinism(canary: Canary) -> CheckResult:
    """B's greedy output for a fixed prompt, before and after rounds of A's canary traffic."""
    b = canary.tenants[1]
    records: list[RequestRecord] = []
    fixed = canary.factory.text(canary.cfg.probe_words)
    baseline = [canary.greedy(b, "fixed prompt (baseline)", fixed, records) for _ in range(3)]
    details: list[str] = []
    if not canary.logprobs:
        details.append("the server refused logprobs; outputs are compared as text")
    tol = canary.cfg.logprob_tolerance
    reference = baseline[1] if all(c.ok for c in baseline) else None
    noisy = False
    if reference is None:
        bad = next(c for c in baseline if not c.ok)
        details.append(f"the baseline requests failed ({bad.error}); A's rounds run all the same")
    else:
        noise = [compare_greedy(reference, baseline[2], tol), compare_greedy(baseline[0], reference, tol)]
        spread = max((d.max_logprob_delta for d in noise if math.isfinite(d.max_logprob_delta)), default=0.0)
        details.append(
            f"baseline: 3 identical requests, largest logprob difference {spread:.2g} (tolerance {tol:g})"
        )
        noisy = noise[0].differs
        if noise[1].differs and not noisy:
            details.append(
                f"the first (uncached) and second (cached) baseline answers differ ({noise[1].detail}): "
                "each round is compared with the baseline answer of its own path, cached or not"
            )
        if noisy:
            details.append(
                f"two identical back-to-back requests already differ ({noise[0].detail}): the "
                "server's greedy output is not reproducible even with no other traffic"
            )
    diverged: list[int] = []
    for r in range(canary.cfg.rounds):
        canary.progress(f"determinism: round {r + 1} of {canary.cfg.rounds}")
        canary.victim_round(records)
        again = canary.greedy(b, f"fixed prompt (round {r + 1})", fixed, records)
        if reference is not None and again.ok:
            div = _compare_with_baseline(baseline, again, tol)
            details.append(f"round {r + 1}: {div.detail}")
            if div.differs:
                diverged.append(r + 1)
        canary.inspect(again, f"round {r + 1} fixed prompt")
        ordinary = canary.greedy(b, f"ordinary prompt (round {r + 1})", canary.ordinary(), records)
        canary.inspect(ordinary, f"round {r + 1} ordinary prompt")
    canary.observed += records
    status: Status
    if diverged and not noisy:
        status = "leak"
        summary = f"B's greedy output changed after A's traffic (rounds {', '.join(map(str, diverged))})"
    elif (failed := status_of(records)) is not None:
        status, summary = failed, failure_summary(records)
        details += failure_lines(records)
    elif noisy:
        status, summary = "inconclusive", "the fixed prompt's greedy output varies with no other traffic"
    elif reference is None:
        status, summary = "error", f"the baseline request was refused: {details[-1]}"
    else:
        status, summary = "pass", f"B's output identical across {canary.cfg.rounds} rounds of A's traffic"
    return CheckResult(name="determinism", status=status, summary=summary, details=details, requests=records)


def _same_path(a: Completion, b: Completion) -> bool | None:
    """Whether both answers were computed over a cached prefix, or both not (None: not reported)."""
    if a.cached_tokens is None or b.cached_tokens is None:
        return None
    return (a.cached_tokens > 0) == (b.cached_tokens > 0)


def _compare_with_baseline(baseline: list[Completion], again: Completion, tol: float) -> Divergence:
    """``again`` against the baseline answers of its own path (a cached prefix or not, as reported);
    where the server reports no cached tokens, against the closest baseline answer."""
    candidates = [b for b in baseline if _same_path(b, again)] or baseline
    divs = [compare_greedy(b, again, tol) for b in candidates]
    return min(divs, key=lambda d: (d.differs, d.max_logprob_delta))


def check_canary_strings(canary: Canary) -> CheckResult:
    """Whether any of B's answers (rounds and boundary) carried A's markers or words."""
    inspected = sum(1 for r in canary.observed if r.tenant == canary.tenants[1].name and r.status == 200)
    summary_base = f"{inspected} answers of {canary.tenants[1].name} against {len(canary.markers)} markers"
    if canary.leak_evidence:
        return CheckResult(
            name="canary-strings",
            status="leak",
            summary=f"A's data in B's output ({len(canary.leak_evidence)} findings)",
            details=canary.leak_evidence[:20],
        )
    if not canary.markers:
        return CheckResult(
            name="canary-strings",
            status="inconclusive",
            summary="A planted no markers (the determinism check was skipped)",
        )
    if inspected == 0:
        mine = [r for r in canary.observed if r.tenant == canary.tenants[1].name]
        status = status_of(mine) or "error"
        summary = failure_summary(mine) if status != "error" or mine else "no answer of B to inspect"
        return CheckResult(name="canary-strings", status=status, summary=f"no answer to inspect: {summary}")
    return CheckResult(name="canary-strings", status="pass", summary=f"nothing found in {summary_base}")


def check_cross_tenant_cache(canary: Canary) -> CheckResult:
    """Others on A's exact prefix get no more cached tokens than on a fresh prompt; A's repeat hits.

    Order: A caches a prefix; each other tenant sends it with a fresh tail; A repeats it (the
    control, which must hit); then each other tenant sends a fresh prompt, whose cached tokens
    (a chat template's shared head, say) are the floor a cross-tenant count is compared with."""
    a = canary.tenants[0]
    records: list[RequestRecord] = []
    max_words = canary.max_words(1) or 1024
    words = max(2, min(max_words - 16, 512, (canary.pool or 4096) // 4))
    prefix = canary.factory.words(words)
    tail = 16

    def with_tail() -> str:
        return canary.factory.join(prefix, canary.factory.words(tail))

    canary.send(a, "prefix (A caches it)", canary.factory.join(prefix), records, target=words)
    cross = {
        o.name: canary.send(o, "A's prefix + fresh tail", with_tail(), records) for o in canary.tenants[1:]
    }
    control = canary.send(a, "control: A's prefix + fresh tail", with_tail(), records)
    fresh = {
        o.name: canary.send(o, "fresh prompt (floor)", canary.factory.text(words + tail), records)
        for o in canary.tenants[1:]
    }
    details: list[str] = []
    leaks: list[str] = []
    for name, c in cross.items():
        f = fresh[name]
        details.append(
            f"{name}: {_count(c.cached_tokens)} cached tokens on A's prefix, "
            f"{_count(f.cached_tokens)} on a fresh prompt"
        )
        floor = f.cached_tokens or 0
        if c.ok and f.ok and c.cached_tokens is not None and c.cached_tokens > floor:
            leaks.append(
                f"{name} got {c.cached_tokens} cached tokens on A's {words}-token prefix ({floor} fresh)"
            )
    details.append(f"control: {a.name} got {_count(control.cached_tokens)} cached tokens on its own prefix")
    status: Status
    summary: str
    if leaks:
        status, summary, details = "leak", leaks[0], leaks + details
    elif (failed := status_of(records)) is not None:
        status, summary = failed, failure_summary(records)
        details += failure_lines(records)
    elif refused := [r for r in records if r.status != 200]:
        status, summary = "error", f"{refused[0].purpose}: {refused[0].error}"
    elif control.cached_tokens is None:
        status = "inconclusive"
        summary = "the server reports no cached tokens; use `prefixlint probe` (timing) instead"
        details.append("vLLM: start it with --enable-prompt-tokens-details; SGLang: --enable-cache-report")
    elif control.cached_tokens <= max((f.cached_tokens or 0) for f in fresh.values()):
        status = "inconclusive"
        summary = "the same-tenant control did not hit: caching is off or evicted, so nothing is shown"
    else:
        status = "pass"
        summary = f"no cross-tenant hit; the control hit {control.cached_tokens} of {words} tokens"
        if any(c.cached_tokens is None for c in cross.values()):
            details.append("the server omitted cached_tokens on a cross-tenant request; read as 0")
    return CheckResult(
        name="cross-tenant-cache", status=status, summary=summary, details=details, requests=records
    )


def _count(value: int | None) -> str:
    return "no field" if value is None else str(value)
