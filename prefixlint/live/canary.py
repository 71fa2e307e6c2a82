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

This module holds the session (tenants, clients, prompts, what A planted) and runs the checks, which
live in :mod:`prefixlint.live.canary_limits` (capacity, boundary) and
:mod:`prefixlint.live.canary_isolation` (determinism, canary strings, cross-tenant cache). Every
request is recorded (without API keys); :mod:`prefixlint.live.canary_report` has the statuses and
the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from prefixlint.live.canary_isolation import check_canary_strings, check_cross_tenant_cache, check_determinism
from prefixlint.live.canary_limits import check_boundary, check_capacity
from prefixlint.live.canary_report import (
    CanaryRun,
    CheckResult,
    RequestRecord,
    failure_lines,
    failure_summary,
    status_of,
)
from prefixlint.live.client import BenchClient, Completion, Endpoint
from prefixlint.live.leaks import canary_marker, markers_in, output_texts, shared_ngrams
from prefixlint.live.prompts import PromptFactory, random_seed
from prefixlint.live.server_info import ServerInfo, discover
from prefixlint.live.sizing import Sizing, measure_sizing
from prefixlint.live.tenants import Tenant

MARKER_EVERY = 48  # words between canary markers in A's prompts
ORDINARY_TAIL = "\nRepeat the text above, word for word."


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

    def client(self, tenant: Tenant) -> BenchClient:
        """The tenant's own connection (its key and salt on every request)."""
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

    def send(
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
            res = self.client(tenant).complete(
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
                self.client(self.tenants[1]),
                self.factory,
                send=lambda p: self.send(self.tenants[1], "sizing", p, setup),
            )
            run.settings["sizing"] = self.sizing.as_dict()
            run.notes += self.sizing.notes
            run.setup = setup
            if (status := status_of(setup)) is not None:
                run.add(
                    CheckResult(
                        name="setup",
                        status=status,
                        summary=f"the first request failed, nothing checked: {failure_summary(setup)}",
                        details=failure_lines(setup),
                    )
                )
                return run
            for name, check in (
                ("capacity", check_capacity),
                ("determinism", check_determinism),
                ("boundary", check_boundary),
                ("canary-strings", check_canary_strings),
                ("cross-tenant-cache", check_cross_tenant_cache),
            ):
                if name in self.cfg.skip:
                    run.add(CheckResult(name=name, status="skipped", summary="skipped (--skip)"))
                    continue
                self.progress(f"check: {name}")
                run.add(check(self))
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

    def max_words(self, output_tokens: int) -> int | None:
        """The longest prompt, in words, that fits the advertised context with ``output_tokens``."""
        if self.advertised is None:
            return None
        return max(1, self.sizing.words_for(self.advertised - output_tokens) - 1)

    # -- victim traffic and leak evidence ------------------------------------------------------

    def ordinary(self) -> str:
        """A fresh prompt of B's that asks a real model to show what it holds."""
        return self.factory.text(self.cfg.probe_words) + ORDINARY_TAIL

    def canary_prompt(self, words: int) -> str:
        """``words`` random words with a fresh marker every :data:`MARKER_EVERY` words."""
        body = self.factory.words(words)
        for i in range(0, len(body), MARKER_EVERY):
            marker = canary_marker()
            self.markers.append(marker)
            body[i] = marker
        prompt = " ".join(body)
        self.victim_prompts.append(prompt)
        return prompt

    def victim_round(self, records: list[RequestRecord]) -> None:
        """A sends enough canary prompts to write ``fill_tokens`` tokens of KV."""
        max_words = self.max_words(1) or 2048
        words = self.cfg.canary_words or max(16, min(2048, int(0.75 * max_words)))
        fill = self.cfg.fill_tokens or min(self.pool or words, self.cfg.max_fill_tokens)
        for _ in range(max(1, math.ceil(fill / words))):
            self.send(self.tenants[0], "canary", self.canary_prompt(words), records, target=words)

    def inspect(self, c: Completion, where: str) -> None:
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

    def greedy(self, tenant: Tenant, purpose: str, prompt: str, records: list[RequestRecord]) -> Completion:
        """A greedy answer of ``output_tokens`` with top logprobs; once the server refuses logprobs,
        the rest of the run asks for text only."""
        res = self.send(tenant, purpose, prompt, records, max_tokens=self.cfg.output_tokens, logprobs=True)
        if self.logprobs and res.status == 400 and "logprob" in (res.error or "").lower():
            self.logprobs = 0  # the server refuses logprobs: compare tokens (text) only
            records[-1].purpose += " (logprobs refused)"
            res = self.send(tenant, purpose, prompt, records, max_tokens=self.cfg.output_tokens)
        return res


def _auth(tenant: Tenant) -> dict[str, str]:
    return {"Authorization": f"Bearer {tenant.api_key}"} if tenant.api_key else {}
