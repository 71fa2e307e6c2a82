"""The canary's limit checks: the KV capacity a server keeps, and its answers at the boundaries.

* **capacity**: the pool the server exposes must hold the advertised context, and the tokens it
  really keeps (the bench's retention mode, filled by tenant A) must reach it;
* **boundary**: tenant B's prompts at -1, exact and +1 tokens of the advertised context and of the
  pool size. Every request over the smaller limit must get a 4xx, never a 200; one inside must be
  answered; at exactly the limit either is fine (vLLM counts the output token, this engine not).
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
from prefixlint.live.results import Sample
from prefixlint.live.retention import RetentionConfig, run_retention

if TYPE_CHECKING:
    from prefixlint.live.canary import Canary

MAX_BOUNDARY_TOKENS = 2_000_000  # larger pools are not probed at their size (a 4 MB prompt)


def check_capacity(canary: Canary) -> CheckResult:
    """The pool the server exposes and the tokens it keeps, against the advertised context."""
    advertised, pool = canary.advertised, canary.pool
    if advertised is None:
        return CheckResult(
            name="capacity",
            status="inconclusive",
            summary="the server lists no max_model_len; pass --advertised-tokens",
        )
    details: list[str] = []
    status: Status = "pass"
    if pool is None:
        details.append("the server exposes no KV pool size (/health, /metrics); pass --kv-pool-tokens")
    elif pool < advertised:
        status = "fail"
        details.append(f"the KV pool holds {pool:,} tokens, fewer than the advertised {advertised:,}")
    else:
        details.append(f"the KV pool holds {pool:,} tokens, at least the advertised {advertised:,}")
    max_words = canary.max_words(17) or 2
    context_words = max(2, min(max_words, max(2048, math.ceil(advertised / 8))))
    contexts = math.ceil(advertised / context_words) + 1
    canary.progress(f"capacity: filling {contexts} contexts of {context_words} tokens")
    client = canary.client(canary.tenants[0])
    ret_run = run_retention(
        client,
        RetentionConfig(
            contexts=contexts,
            context_tokens=context_words,
            advertised_tokens=advertised,
            warmup=0,
            seed=canary.factory.seed ^ 0xCA9A,
        ),
    )
    ret = ret_run.retention
    assert ret is not None
    records = [_record(sample, canary.tenants[0].name) for sample in [*ret.fills, *ret.probes]]
    details.append(
        f"filled {contexts} x {context_words:,} tokens; kept {ret.retained_tokens:,} "
        f"({ret.detection}): {ret.message}"
    )
    if (failed := status_of(records)) is not None:
        return CheckResult(
            name="capacity",
            status=failed,
            summary=failure_summary(records),
            details=details + failure_lines(records),
            requests=records,
        )
    if ret.verdict == "fewer-than-advertised":
        status = "fail"
    elif ret.verdict in ("inconclusive", "no-claim") and status == "pass":
        status = "inconclusive"
    summary = {
        "pass": f"keeps {ret.retained_tokens:,} tokens; advertised {advertised:,}",
        "fail": "keeps fewer tokens than the advertised context",
        "inconclusive": ret.message,
    }[status]
    return CheckResult(name="capacity", status=status, summary=summary, details=details, requests=records)


@staticmethod
def _record(sample: Sample, tenant: str) -> RequestRecord:
    return RequestRecord(
        tenant=tenant,
        purpose=f"retention {sample.arm}",
        prompt_tokens_target=sample.prompt_tokens_target,
        prompt_tokens=sample.prompt_tokens,
        max_tokens=1,
        status=_sample_status(sample.error),
        cached_tokens=sample.cached_tokens,
        error=sample.error,
    )


def check_boundary(canary: Canary) -> CheckResult:
    """B's requests at -1, exact and +1 of the advertised context and the KV pool size."""
    advertised, pool = canary.advertised, canary.pool
    limits: list[tuple[str, int]] = []
    if advertised is not None:
        limits.append(("context", advertised))
    details: list[str] = []
    if pool is not None and pool != advertised:
        if pool > MAX_BOUNDARY_TOKENS:
            details.append(
                f"KV pool of {pool:,} tokens not probed at its size (over {MAX_BOUNDARY_TOKENS:,})"
            )
        else:
            limits.append(("KV pool", pool))
    if not limits:
        return CheckResult(
            name="boundary",
            status="inconclusive",
            summary="no advertised context or pool size to probe; pass --advertised-tokens",
        )
    ceiling = min(v for v in (advertised, pool) if v is not None)
    records: list[RequestRecord] = []
    bad: list[str] = []
    refused_inside: list[str] = []
    for label, limit in limits:
        for offset in (-1, 0, 1):
            target = limit + offset
            words = canary.sizing.words_for(target)
            res = canary.send(
                canary.tenants[1],
                f"{label} {offset:+d}",
                canary.factory.text(words),
                records,
                target=target,
                logprobs=True,
            )
            record = records[-1]
            counted = f"{res.prompt_tokens:,}" if res.prompt_tokens is not None else "?"
            over = target > ceiling
            what = f"{label} {offset:+d} ({target:,} tokens)"
            if res.ok:
                canary.inspect(res, f"boundary {what}")
                if res.prompt_tokens is not None and res.prompt_tokens != target:
                    details.append(f"{what}: the server counted {counted} tokens")
                if over:
                    bad.append(f"{what}: over the limit, answered HTTP 200")
                details.append(f"{what}: 200 (counted {counted})")
            elif record.status is not None and 400 <= record.status < 500:
                details.append(f"{what}: {record.status} ({(res.error or '')[:120]})")
                if target < ceiling:
                    refused_inside.append(f"{what}: inside the limit, refused with {record.status}")
            else:
                details.append(f"{what}: {res.error}")
    canary.observed += records
    if not canary.sizing.exact:
        details.append("sizes are approximate: the server's token count per word was not measured as 1")
    if bad:
        return CheckResult(
            name="boundary", status="fail", summary=bad[0], details=bad + details, requests=records
        )
    if (failed := status_of(records)) is not None:
        return CheckResult(
            name="boundary",
            status=failed,
            summary=failure_summary(records),
            details=details + failure_lines(records),
            requests=records,
        )
    if refused_inside:
        return CheckResult(
            name="boundary",
            status="fail",
            summary=refused_inside[0],
            details=refused_inside + details,
            requests=records,
        )
    return CheckResult(
        name="boundary",
        status="pass",
        summary=f"every over-limit request got a 4xx ({len(limits)} limits x 3 sizes)",
        details=details,
        requests=records,
    )


def _sample_status(error: str | None) -> int | None:
    """The HTTP status behind a streamed sample: 200, the status in ``HTTP 400 from ...``, 500 for
    an error event inside the stream, None when no answer came."""
    if not error:
        return 200
    if "HTTP " in error:
        tail = error.split("HTTP ", 1)[1][:3]
        if tail.isdigit():
            return int(tail)
    return 500 if "server error in stream" in error else None
