"""The result of ``prefixlint canary``: one status per check, a verdict, JSON and a text table.

Statuses, worst first (the verdict is the worst status of any check):

* ``leak``: another tenant's data showed up (canary string, copied n-grams, an output that
  changed with what another tenant sent, a cache hit across tenants);
* ``fail``: a limit is not kept (an over-limit request got a 200, a pool smaller than the
  advertised context, a request inside the limit refused);
* ``failed-closed``: requests failed with a server error (5xx) and no leak was seen: the server
  refused to serve rather than leak, which is still not a pass;
* ``error``: requests could not be sent or answered otherwise;
* ``inconclusive``: the check could not decide (no control hit, no cached-token field);
* ``pass`` and ``skipped``.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field

from prefixlint.live.run_file import ServerRun, StrictModel

CANARY_SCHEMA_ID = "prefixlint.canary/v1"

Status = Literal["leak", "fail", "failed-closed", "error", "inconclusive", "pass", "skipped"]
SEVERITY: dict[str, int] = {
    "leak": 6,
    "fail": 5,
    "failed-closed": 4,
    "error": 3,
    "inconclusive": 2,
    "pass": 1,
    "skipped": 0,
}
CHECKS = ("capacity", "boundary", "canary-strings", "determinism", "cross-tenant-cache")


class RequestRecord(StrictModel):
    """One request of a check, as sent and answered (never the API key)."""

    tenant: str
    purpose: str
    prompt_tokens_target: int | None = None
    prompt_tokens: int | None = None
    max_tokens: int | None = None
    status: int | None = Field(None, description="HTTP status; None when no answer came")
    cached_tokens: int | None = None
    error: str | None = None


class CheckResult(StrictModel):
    """One check of the canary."""

    name: str
    status: Status
    summary: str
    details: list[str] = Field(default_factory=list)
    requests: list[RequestRecord] = Field(default_factory=list)

    @property
    def failed_requests(self) -> int:
        """Requests of this check that got a 5xx or no answer."""
        return sum(1 for r in self.requests if r.status is None or r.status >= 500)


class CanaryRun(ServerRun):
    """One run of the canary; the top-level JSON object."""

    schema_id: str = CANARY_SCHEMA_ID
    setup: list[RequestRecord] = Field(default_factory=list, description="sizing requests")
    checks: list[CheckResult] = Field(default_factory=list)
    verdict: Status = "pass"
    notes: list[str] = Field(default_factory=list)

    def add(self, check: CheckResult) -> CheckResult:
        """Record ``check`` and fold its status into the verdict."""
        self.checks.append(check)
        if SEVERITY[check.status] > SEVERITY[self.verdict]:
            self.verdict = check.status
        return check

    @property
    def passed(self) -> bool:
        """True when every check passed or was skipped."""
        return self.verdict in ("pass", "skipped")

    @property
    def request_count(self) -> int:
        """Requests sent by all checks."""
        return len(self.setup) + sum(len(c.requests) for c in self.checks)

    @property
    def failed_requests(self) -> int:
        """Requests that got a 5xx or no answer."""
        setup = sum(1 for r in self.setup if r.status is None or r.status >= 500)
        return setup + sum(c.failed_requests for c in self.checks)

    def to_json(self, *, requests: bool = True) -> str:
        """Pretty JSON; ``requests=False`` drops the per-request lists."""
        data = self.model_dump(mode="json")
        if not requests:
            data["setup"] = []
            for check in data["checks"]:
                check["requests"] = []
        return json.dumps(data, indent=2)


def status_of(records: list[RequestRecord]) -> Status | None:
    """``failed-closed`` when a request got a 5xx, ``error`` when one got no answer, else None."""
    if any(r.status is not None and r.status >= 500 for r in records):
        return "failed-closed"
    if any(r.status is None for r in records):
        return "error"
    return None


def failure_summary(records: list[RequestRecord]) -> str:
    """``3 of 27 requests failed (HTTP 500: KV integrity violation)``."""
    bad = [r for r in records if r.status is None or r.status >= 500]
    first = bad[0].error or f"HTTP {bad[0].status}" if bad else ""
    return f"{len(bad)} of {len(records)} requests failed ({first})"


def failure_lines(records: list[RequestRecord], limit: int = 3) -> list[str]:
    """One line per request that got a 5xx or no answer (at most ``limit``, then a count)."""
    bad = [r for r in records if r.status is None or r.status >= 500]
    shown = [f"{r.tenant} {r.purpose}: {r.error or r.status}" for r in bad[:limit]]
    if len(bad) > limit:
        shown.append(f"... and {len(bad) - limit} more")
    return shown


VERDICT_LINES = {
    "pass": "PASS: no cross-tenant leak, every limit kept",
    "leak": "LEAK: another tenant's data reached a response",
    "fail": "FAIL: a limit is not kept",
    "failed-closed": "FAILED CLOSED: requests failed with server errors instead of answering (no leak seen)",
    "error": "ERROR: requests failed; the canary could not check the server",
    "inconclusive": "INCONCLUSIVE: a check could not decide",
    "skipped": "PASS: every check skipped",
}


def canary_text(run: CanaryRun) -> str:
    """The pass/fail table, each check's details, and the verdict line."""
    tenants = ", ".join(f"{t['name']} ({t['kind']})" for t in run.tenants)
    lines = [f"canary: {run.model} @ {run.base_url} ({run.endpoint}); tenants: {tenants}"]
    srv = run.server
    lines.append(
        f"server: max_model_len {srv.get('max_model_len') or 'not listed'}, KV pool "
        + (
            f"{srv['kv_pool_tokens']:,} tokens (block size {srv.get('block_size') or '?'}, "
            f"from {srv.get('pool_source')})"
            if srv.get("kv_pool_tokens")
            else "not exposed"
        )
    )
    width = max(len(c.name) for c in run.checks) if run.checks else 10
    lines.append("")
    lines.append(f"{'check':<{width}}  {'status':<13}  {'requests':>8}  summary")
    lines.append("-" * (width + 40))
    for c in run.checks:
        lines.append(f"{c.name:<{width}}  {c.status.upper():<13}  {len(c.requests):>8}  {c.summary}")
    for c in run.checks:
        if c.details:
            lines.append("")
            lines.append(f"{c.name}:")
            lines += [f"  {d}" for d in c.details]
    if run.notes:
        lines.append("")
        lines += [f"note: {n}" for n in run.notes]
    lines.append("")
    failed = run.failed_requests
    lines.append(
        f"{run.request_count} requests, {failed} failed (5xx or no answer)"
        + (f"; {_status_counts(run)}" if failed else "")
    )
    lines.append(VERDICT_LINES[run.verdict])
    return "\n".join(lines)


def _status_counts(run: CanaryRun) -> str:
    counts: dict[str, int] = {}
    for records in [run.setup, *(c.requests for c in run.checks)]:
        for r in records:
            if r.status is None or r.status >= 500:
                key = "no answer" if r.status is None else f"HTTP {r.status}"
                counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n} x {k}" for k, n in sorted(counts.items()))
