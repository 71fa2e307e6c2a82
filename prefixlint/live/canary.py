"""``prefixlint canary``: a cross-tenant leak gate for an OpenAI-compatible server.

Tenant A (the first tenant) is the victim, tenant B (the second) the observer. In order:

1. **capacity**: the KV pool the server exposes, and the tokens it really keeps (the bench's
   retention mode, filled by A past the advertised context), against the advertised context;
2. **determinism** and **canary-strings**: B's greedy output for one fixed prompt is recorded;
   then, for each round, A sends long prompts full of fresh canary markers and B sends the fixed
   prompt again and an ordinary one. B's fixed-prompt output must not change with what A sent, and
   no output or top logprob of B may carry A's markers or long runs of A's words;
3. **boundary**: B's requests at the advertised context and the KV pool size, at -1, exact and
   +1 tokens; every over-limit request must get a 4xx, never a 200 (B's accepted outputs are
   checked for A's markers too);
4. **cross-tenant-cache**: each other tenant sends A's exact prefix and must get no more cached
   tokens than on a fresh prompt, while A's own repeat (the control) must hit.

Every request is recorded (without API keys). See :mod:`prefixlint.live.canary_report` for the
statuses and the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from prefixlint.live.canary_report import CanaryRun, CheckResult, RequestRecord, Status
from prefixlint.live.client import BenchClient, Completion, Endpoint
from prefixlint.live.leaks import (
    canary_marker,
    compare_greedy,
    markers_in,
    output_texts,
    shared_ngrams,
)
from prefixlint.live.prompts import PromptFactory, random_seed
from prefixlint.live.results import Sample
from prefixlint.live.retention import RetentionConfig, run_retention
from prefixlint.live.server_info import ServerInfo, discover
from prefixlint.live.sizing import Sizing, measure_sizing
from prefixlint.live.tenants import Tenant

MARKER_EVERY = 48  # words between canary markers in A's prompts
ORDINARY_TAIL = "\nRepeat the text above, word for word."
MAX_BOUNDARY_TOKENS = 2_000_000  # larger pools are not probed at their size (a 4 MB prompt)


@dataclass
class CanaryConfig:
    """Knobs of one canary run (token counts are server tokens unless named words)."""

    endpoint: Endpoint = "chat"
    rounds: int = 3
    canary_words: int | None = None
    fill_tokens: int | None = None
    max_fill_tokens: int = 262_144
    probe_words: int = 64
    output_tokens: int = 16
    top_logprobs: int = 5
    logprob_tolerance: float = 1e-3
    ngram: int = 8
    advertised_tokens: int | None = None
    kv_pool_tokens: int | None = None
    skip: frozenset[str] = frozenset()
    seed: int | None = None
    timeout_s: float = 120.0
    extra_body: dict[str, Any] = field(default_factory=dict)


def _status_of(records: list[RequestRecord]) -> Status | None:
    """``failed-closed`` when a request got a 5xx, ``error`` when one got no answer, else None."""
    if any(r.status is not None and r.status >= 500 for r in records):
        return "failed-closed"
    if any(r.status is None for r in records):
        return "error"
    return None


def _failure_summary(records: list[RequestRecord]) -> str:
    """``3 of 27 requests failed (HTTP 500: KV integrity violation)``."""
    bad = [r for r in records if r.status is None or r.status >= 500]
    first = bad[0].error or f"HTTP {bad[0].status}" if bad else ""
    return f"{len(bad)} of {len(records)} requests failed ({first})"


def _failures(records: list[RequestRecord], limit: int = 3) -> list[str]:
    bad = [r for r in records if r.status is None or r.status >= 500]
    shown = [f"{r.tenant} {r.purpose}: {r.error or r.status}" for r in bad[:limit]]
    if len(bad) > limit:
        shown.append(f"... and {len(bad) - limit} more")
    return shown


class Canary:
    """One canary run against ``base_url`` with ``tenants`` (at least two)."""

    def __init__(
        self,
        base_url: str,
        tenants: list[Tenant],
        cfg: CanaryConfig,
        *,
        model: str | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> None:
        if len(tenants) < 2:
            raise ValueError("the canary needs two tenants")
        self.base_url, self.tenants, self.cfg, self.model = base_url, tenants, cfg, model
        self.progress = on_progress or (lambda _msg: None)
        self.factory = PromptFactory(seed=cfg.seed if cfg.seed is not None else random_seed())
        self.clients: dict[str, BenchClient] = {}
        self.info: ServerInfo | None = None
        self.sizing = Sizing()
        self.logprobs = cfg.top_logprobs
        self.markers: list[str] = []
        self.victim_prompts: list[str] = []
        self.leak_evidence: list[str] = []
        self.observed: list[RequestRecord] = []

    # -- plumbing ------------------------------------------------------------------------------

    def _client(self, tenant: Tenant) -> BenchClient:
        if tenant.name not in self.clients:
            assert self.info is not None and self.info.model is not None
            self.clients[tenant.name] = BenchClient(
                base_url=self.base_url,
                model=self.info.model,
                api_key=tenant.api_key,
                endpoint=self.cfg.endpoint,
                timeout_s=self.cfg.timeout_s,
                cache_salt=tenant.cache_salt,
                extra_body=dict(self.cfg.extra_body),
            )
        return self.clients[tenant.name]

    def _send(
        self,
        tenant: Tenant,
        purpose: str,
        prompt: str,
        records: list[RequestRecord],
        *,
        max_tokens: int = 1,
        logprobs: bool = False,
        target: int | None = None,
    ) -> Completion:
        """Send one request; record it; a transport failure becomes status None, never a raise."""
        record = RequestRecord(
            tenant=tenant.name, purpose=purpose, prompt_tokens_target=target, max_tokens=max_tokens
        )
        try:
            res = self._client(tenant).complete(
                prompt, max_tokens=max_tokens, logprobs=self.logprobs if logprobs else 0
            )
        except httpx.HTTPError as exc:
            res = Completion(status=0, error=f"{type(exc).__name__}: {exc}")
        record.status = res.status or None
        record.prompt_tokens, record.cached_tokens, record.error = (
            res.prompt_tokens,
            res.cached_tokens,
            res.error,
        )
        records.append(record)
        return res

    def close(self) -> None:
        """Close every tenant's connection."""
        for client in self.clients.values():
            client.close()

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> CanaryRun:
        """Discover the server, run every check not skipped, and return the report.

        Raises :class:`~prefixlint.live.server_info.ServerUnreachable` when the server does not answer
        at all, and ``ValueError`` when no model can be named."""
        a = self.tenants[0]
        self.info = discover(self.base_url, model=self.model, headers=_auth(a), timeout_s=self.cfg.timeout_s)
        if self.info.model is None:
            raise ValueError("the server lists no model under /models; pass --model")
        run = CanaryRun(
            base_url=self.base_url,
            model=self.info.model,
            endpoint=self.cfg.endpoint,
            tenants=[t.public() for t in self.tenants],
            server=self.info.as_dict(),
            settings=self._settings(),
            notes=list(self.info.notes),
        )
        try:
            setup: list[RequestRecord] = []
            self.progress("measuring the prompt overhead")
            self.sizing = measure_sizing(
                self._client(self.tenants[1]),
                self.factory,
                send=lambda p: self._send(self.tenants[1], "sizing", p, setup),
            )
            run.settings["sizing"] = self.sizing.as_dict()
            run.notes += self.sizing.notes
            run.setup = setup
            if (status := _status_of(setup)) is not None:
                run.add(
                    CheckResult(
                        name="setup",
                        status=status,
                        summary=f"the first request failed, nothing checked: {_failure_summary(setup)}",
                        details=_failures(setup),
                    )
                )
                return run
            for name, check in (
                ("capacity", self.check_capacity),
                ("determinism", self.check_determinism),
                ("boundary", self.check_boundary),
                ("canary-strings", self.check_canary_strings),
                ("cross-tenant-cache", self.check_cross_tenant_cache),
            ):
                if name in self.cfg.skip:
                    run.add(CheckResult(name=name, status="skipped", summary="skipped (--skip)"))
                    continue
                self.progress(f"check: {name}")
                run.add(check())
        finally:
            self.close()
        return run

    def _settings(self) -> dict[str, Any]:
        cfg = self.cfg
        return {
            "seed": self.factory.seed,
            "rounds": cfg.rounds,
            "probe_words": cfg.probe_words,
            "output_tokens": cfg.output_tokens,
            "top_logprobs": cfg.top_logprobs,
            "logprob_tolerance": cfg.logprob_tolerance,
            "ngram": cfg.ngram,
            "advertised_tokens": cfg.advertised_tokens,
            "kv_pool_tokens": cfg.kv_pool_tokens,
            "skip": sorted(cfg.skip),
            "extra_body_keys": sorted(cfg.extra_body),
        }

    # -- limits --------------------------------------------------------------------------------

    @property
    def advertised(self) -> int | None:
        """The advertised context: ``--advertised-tokens``, else ``max_model_len``."""
        assert self.info is not None
        return self.cfg.advertised_tokens or self.info.max_model_len

    @property
    def pool(self) -> int | None:
        """KV pool tokens: ``--kv-pool-tokens``, else what the server exposes."""
        assert self.info is not None
        return self.cfg.kv_pool_tokens or self.info.kv_pool_tokens

    def _max_words(self, output_tokens: int) -> int | None:
        """The longest prompt, in words, that fits the advertised context with ``output_tokens``."""
        if self.advertised is None:
            return None
        return max(1, self.sizing.words_for(self.advertised - output_tokens) - 1)

    # -- capacity ------------------------------------------------------------------------------

    def check_capacity(self) -> CheckResult:
        """The pool the server exposes and the tokens it keeps, against the advertised context."""
        advertised, pool = self.advertised, self.pool
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
        max_words = self._max_words(17) or 2
        context_words = max(2, min(max_words, max(2048, math.ceil(advertised / 8))))
        contexts = math.ceil(advertised / context_words) + 1
        self.progress(f"capacity: filling {contexts} contexts of {context_words} tokens")
        client = self._client(self.tenants[0])
        ret_run = run_retention(
            client,
            RetentionConfig(
                contexts=contexts,
                context_tokens=context_words,
                advertised_tokens=advertised,
                warmup=0,
                seed=self.factory.seed ^ 0xCA9A,
            ),
        )
        ret = ret_run.retention
        assert ret is not None
        records = [self._record(s, self.tenants[0].name) for s in [*ret.fills, *ret.probes]]
        details.append(
            f"filled {contexts} x {context_words:,} tokens; kept {ret.retained_tokens:,} "
            f"({ret.detection}): {ret.message}"
        )
        if (failed := _status_of(records)) is not None:
            return CheckResult(
                name="capacity",
                status=failed,
                summary=_failure_summary(records),
                details=details + _failures(records),
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
    def _record(s: Sample, tenant: str) -> RequestRecord:
        return RequestRecord(
            tenant=tenant,
            purpose=f"retention {s.arm}",
            prompt_tokens_target=s.prompt_tokens_target,
            prompt_tokens=s.prompt_tokens,
            max_tokens=1,
            status=_sample_status(s.error),
            cached_tokens=s.cached_tokens,
            error=s.error,
        )

    # -- victim traffic and leak evidence ------------------------------------------------------

    def _canary_prompt(self, words: int) -> str:
        """``words`` random words with a fresh marker every :data:`MARKER_EVERY` words."""
        body = self.factory.words(words)
        for i in range(0, len(body), MARKER_EVERY):
            marker = canary_marker()
            self.markers.append(marker)
            body[i] = marker
        prompt = " ".join(body)
        self.victim_prompts.append(prompt)
        return prompt

    def _victim_round(self, records: list[RequestRecord]) -> None:
        """A sends enough canary prompts to write ``fill_tokens`` tokens of KV."""
        max_words = self._max_words(1) or 2048
        words = self.cfg.canary_words or max(16, min(2048, int(0.75 * max_words)))
        fill = self.cfg.fill_tokens or min(self.pool or words, self.cfg.max_fill_tokens)
        for _ in range(max(1, math.ceil(fill / words))):
            self._send(self.tenants[0], "canary", self._canary_prompt(words), records, target=words)

    def _inspect(self, c: Completion, where: str) -> None:
        """Look for A's markers and runs of A's words in one of B's answers."""
        if not c.ok:
            return
        texts = output_texts(c)
        for marker in markers_in(texts, self.markers):
            self.leak_evidence.append(f"{where}: A's canary {marker!r} in the output or top logprobs")
        grams = shared_ngrams(c.text, self.victim_prompts, self.cfg.ngram)
        if grams:
            self.leak_evidence.append(
                f"{where}: runs of {self.cfg.ngram} words copied from A's prompts, e.g. {grams[0]!r}"
            )

    def _greedy(self, tenant: Tenant, purpose: str, prompt: str, records: list[RequestRecord]) -> Completion:
        res = self._send(tenant, purpose, prompt, records, max_tokens=self.cfg.output_tokens, logprobs=True)
        if self.logprobs and res.status == 400 and "logprob" in (res.error or "").lower():
            self.logprobs = 0  # the server refuses logprobs: compare tokens (text) only
            records[-1].purpose += " (logprobs refused)"
            res = self._send(tenant, purpose, prompt, records, max_tokens=self.cfg.output_tokens)
        return res

    # -- determinism ---------------------------------------------------------------------------

    def check_determinism(self) -> CheckResult:
        """B's greedy output for a fixed prompt, before and after rounds of A's canary traffic."""
        b = self.tenants[1]
        records: list[RequestRecord] = []
        fixed = self.factory.text(self.cfg.probe_words)
        baseline = [self._greedy(b, "fixed prompt (baseline)", fixed, records) for _ in range(3)]
        details: list[str] = []
        if not self.logprobs:
            details.append("the server refused logprobs; outputs are compared as text")
        tol = self.cfg.logprob_tolerance
        reference = baseline[1] if all(c.ok for c in baseline) else None
        noisy = False
        if reference is None:
            bad = next(c for c in baseline if not c.ok)
            details.append(f"the baseline requests failed ({bad.error}); A's rounds run all the same")
        else:
            noise = [compare_greedy(reference, baseline[2], tol), compare_greedy(baseline[0], reference, tol)]
            spread = max(
                (d.max_logprob_delta for d in noise if math.isfinite(d.max_logprob_delta)), default=0.0
            )
            details.append(
                f"baseline: 3 identical requests, largest logprob difference {spread:.2g} (tolerance {tol:g})"
            )
            noisy = noise[0].differs
            if noisy:
                details.append(
                    f"two identical back-to-back requests already differ ({noise[0].detail}): the "
                    "server's greedy output is not reproducible even with no other traffic"
                )
        diverged: list[int] = []
        for r in range(self.cfg.rounds):
            self.progress(f"determinism: round {r + 1} of {self.cfg.rounds}")
            self._victim_round(records)
            again = self._greedy(b, f"fixed prompt (round {r + 1})", fixed, records)
            if reference is not None and again.ok:
                div = compare_greedy(reference, again, tol)
                details.append(f"round {r + 1}: {div.detail}")
                if div.differs:
                    diverged.append(r + 1)
            self._inspect(again, f"round {r + 1} fixed prompt")
            ordinary = self._greedy(b, f"ordinary prompt (round {r + 1})", self._ordinary(), records)
            self._inspect(ordinary, f"round {r + 1} ordinary prompt")
        self.observed += records
        status: Status
        if diverged and not noisy:
            status = "leak"
            summary = f"B's greedy output changed after A's traffic (rounds {', '.join(map(str, diverged))})"
        elif (failed := _status_of(records)) is not None:
            status, summary = failed, _failure_summary(records)
            details += _failures(records)
        elif noisy:
            status, summary = "inconclusive", "the fixed prompt's greedy output varies with no other traffic"
        elif reference is None:
            status, summary = "error", f"the baseline request was refused: {details[-1]}"
        else:
            status, summary = "pass", f"B's output identical across {self.cfg.rounds} rounds of A's traffic"
        return CheckResult(
            name="determinism", status=status, summary=summary, details=details, requests=records
        )

    def _ordinary(self) -> str:
        return self.factory.text(self.cfg.probe_words) + ORDINARY_TAIL

    # -- boundary ------------------------------------------------------------------------------

    def check_boundary(self) -> CheckResult:
        """B's requests at -1, exact and +1 of the advertised context and the KV pool size."""
        advertised, pool = self.advertised, self.pool
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
                words = self.sizing.words_for(target)
                res = self._send(
                    self.tenants[1],
                    f"{label} {offset:+d}",
                    self.factory.text(words),
                    records,
                    target=target,
                    logprobs=True,
                )
                record = records[-1]
                counted = f"{res.prompt_tokens:,}" if res.prompt_tokens is not None else "?"
                over = target > ceiling
                what = f"{label} {offset:+d} ({target:,} tokens)"
                if res.ok:
                    self._inspect(res, f"boundary {what}")
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
        self.observed += records
        if not self.sizing.exact:
            details.append("sizes are approximate: the server's token count per word was not measured as 1")
        if bad:
            return CheckResult(
                name="boundary", status="fail", summary=bad[0], details=bad + details, requests=records
            )
        if (failed := _status_of(records)) is not None:
            return CheckResult(
                name="boundary",
                status=failed,
                summary=_failure_summary(records),
                details=details + _failures(records),
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

    # -- canary strings ------------------------------------------------------------------------

    def check_canary_strings(self) -> CheckResult:
        """Whether any of B's answers (rounds and boundary) carried A's markers or words."""
        inspected = sum(1 for r in self.observed if r.tenant == self.tenants[1].name and r.status == 200)
        summary_base = f"{inspected} answers of {self.tenants[1].name} against {len(self.markers)} markers"
        if self.leak_evidence:
            return CheckResult(
                name="canary-strings",
                status="leak",
                summary=f"A's data in B's output ({len(self.leak_evidence)} findings)",
                details=self.leak_evidence[:20],
            )
        if not self.markers:
            return CheckResult(
                name="canary-strings",
                status="inconclusive",
                summary="A planted no markers (the determinism check was skipped)",
            )
        if inspected == 0:
            mine = [r for r in self.observed if r.tenant == self.tenants[1].name]
            status = _status_of(mine) or "error"
            summary = _failure_summary(mine) if status != "error" or mine else "no answer of B to inspect"
            return CheckResult(
                name="canary-strings", status=status, summary=f"no answer to inspect: {summary}"
            )
        return CheckResult(name="canary-strings", status="pass", summary=f"nothing found in {summary_base}")

    # -- cross-tenant cache --------------------------------------------------------------------

    def check_cross_tenant_cache(self) -> CheckResult:
        """Others on A's exact prefix get no more cached tokens than on a fresh prompt; A's repeat hits.

        Order: A caches a prefix; each other tenant sends it with a fresh tail; A repeats it (the
        control, which must hit); then each other tenant sends a fresh prompt, whose cached tokens
        (a chat template's shared head, say) are the floor a cross-tenant count is compared with."""
        a = self.tenants[0]
        records: list[RequestRecord] = []
        max_words = self._max_words(1) or 1024
        words = max(2, min(max_words - 16, 512, (self.pool or 4096) // 4))
        prefix = self.factory.words(words)
        tail = 16

        def with_tail() -> str:
            return self.factory.join(prefix, self.factory.words(tail))

        self._send(a, "prefix (A caches it)", self.factory.join(prefix), records, target=words)
        cross = {
            o.name: self._send(o, "A's prefix + fresh tail", with_tail(), records) for o in self.tenants[1:]
        }
        control = self._send(a, "control: A's prefix + fresh tail", with_tail(), records)
        fresh = {
            o.name: self._send(o, "fresh prompt (floor)", self.factory.text(words + tail), records)
            for o in self.tenants[1:]
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
        details.append(
            f"control: {a.name} got {_count(control.cached_tokens)} cached tokens on its own prefix"
        )
        status: Status
        summary: str
        if leaks:
            status, summary, details = "leak", leaks[0], leaks + details
        elif (failed := _status_of(records)) is not None:
            status, summary = failed, _failure_summary(records)
            details += _failures(records)
        elif refused := [r for r in records if r.status != 200]:
            status, summary = "error", f"{refused[0].purpose}: {refused[0].error}"
        elif control.cached_tokens is None:
            status = "inconclusive"
            summary = "the server reports no cached tokens; use `prefixlint probe` (timing) instead"
            details.append(
                "vLLM: start it with --enable-prompt-tokens-details; SGLang: --enable-cache-report"
            )
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


def _auth(tenant: Tenant) -> dict[str, str]:
    return {"Authorization": f"Bearer {tenant.api_key}"} if tenant.api_key else {}


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
