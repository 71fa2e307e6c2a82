"""``prefixlint probe``: a timing audit of prompt-cache sharing (Gu et al., ICML 2025).

For each sharing level, a *victim* tenant primes the cache and an *attacker* tenant is timed:

* hit procedure: the victim sends a fresh prompt; the attacker sends a prompt that shares
  ``shared_prefix`` of it, then a fresh tail;
* miss procedure: the victim sends a fresh prompt; the attacker sends a fresh prompt of the same
  length (the victim's request is sent here too, so the two procedures differ only in the sharing).

Trials of all levels run interleaved in random order, one request at a time, ``max_tokens=1``,
streamed. Levels: ``per-key`` (victim and attacker are the same tenant: is caching visible at
all?), ``organisation`` (two keys of one ``--org``) and ``global`` (two unrelated tenants). The
decisions are group-sequential one-sided KS tests (:mod:`prefixlint.live.sequential`). Every
request is paced and counted against a :class:`~prefixlint.live.pacing.Budget`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from prefixlint.live.calibrate import percentile
from prefixlint.live.client import BenchClient, BenchClientError, Completion, Endpoint
from prefixlint.live.pacing import Budget
from prefixlint.live.probe_report import LevelResult, LookRecord, ProbeRun, ProbeSample
from prefixlint.live.prompts import PromptFactory, random_seed
from prefixlint.live.sequential import decide, look_points
from prefixlint.live.server_info import ServerInfo, discover
from prefixlint.live.sizing import PROBE_WORDS, Sizing, fit_lengths, measure_sizing
from prefixlint.live.tenants import Tenant

LEVEL_ORDER = ("per-key", "organisation", "global")


@dataclass
class ProbeConfig:
    """Knobs of one probe run."""

    endpoint: Endpoint = "chat"
    prompt_tokens: int = 1024
    shared_prefix: float = 0.9
    alpha: float = 0.01
    min_samples: int = 8
    max_samples: int = 32
    warmup: int = 2
    rate: float | None = 5.0
    max_requests: int | None = None
    max_prompt_tokens: int | None = None
    max_time_s: float | None = 900.0
    seed: int | None = None
    timeout_s: float = 120.0
    extra_body: dict[str, Any] = field(default_factory=dict)


@dataclass
class Level:
    """A sharing level under test, and its samples so far."""

    name: str
    victim: Tenant
    attacker: Tenant
    hits: list[float] = field(default_factory=list)
    misses: list[float] = field(default_factory=list)
    attempted: int = 0
    decision: str | None = None
    looks: list[LookRecord] = field(default_factory=list)
    alpha_look: float | None = None
    stopped_early: bool = False


def build_levels(tenants: list[Tenant]) -> list[Level]:
    """``per-key`` on the first tenant, then ``organisation`` and ``global`` where tenants allow."""
    first = tenants[0]
    levels = [Level("per-key", first, first)]
    for name in ("organisation", "global"):
        for other in tenants[1:]:
            same_org = first.org is not None and other.org == first.org
            if (name == "organisation") == same_org:
                levels.append(Level(name, first, other))
                break
    return levels


@dataclass
class Plan:
    """What the probe will send at most (before sizing cuts prompts to the server's limit)."""

    requests: int
    prompt_tokens: int
    levels: list[str]
    min_seconds: float | None

    def describe(self, base_url: str) -> str:
        """One line for the confirmation prompt."""
        time_part = f", at least {self.min_seconds:.0f} s at the rate limit" if self.min_seconds else ""
        return (
            f"probe will send at most {self.requests:,} requests ({self.prompt_tokens:,} prompt tokens"
            f"{time_part}) to {base_url}, levels: {', '.join(self.levels)}"
        )


class Probe:
    """One probe run against ``base_url`` with ``tenants`` (one or more)."""

    def __init__(
        self,
        base_url: str,
        tenants: list[Tenant],
        cfg: ProbeConfig,
        *,
        model: str | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> None:
        self.base_url, self.tenants, self.cfg, self.model = base_url, tenants, cfg, model
        self.progress = on_progress or (lambda _msg: None)
        self.factory = PromptFactory(seed=cfg.seed if cfg.seed is not None else random_seed())
        self.order = random.Random(self.factory.seed ^ 0x0B5E)
        self.levels = build_levels(tenants)
        self.info: ServerInfo | None = None
        self.clients: dict[str, BenchClient] = {}
        self.samples: list[ProbeSample] = []
        self.failed = 0

    # -- before sending ------------------------------------------------------------------------

    def discover(self) -> ServerInfo:
        """Read the server's model and limits (GET only). Raises ``ServerUnreachable``."""
        first = self.tenants[0]
        headers = {"Authorization": f"Bearer {first.api_key}"} if first.api_key else {}
        self.info = discover(self.base_url, model=self.model, headers=headers, timeout_s=self.cfg.timeout_s)
        if self.info.model is None:
            raise ValueError("the server lists no model under /models; pass --model")
        return self.info

    def plan(self) -> Plan:
        """The most this run will send: sizing, warm-up, and every trial of every level."""
        cfg = self.cfg
        trials = sum(4 * cfg.max_samples for _ in self.levels)
        warm = cfg.warmup * len({lv.attacker.name for lv in self.levels} | {self.tenants[0].name})
        requests = len(PROBE_WORDS) + warm + trials
        tokens = sum(PROBE_WORDS) + (warm + trials) * (cfg.prompt_tokens + 64)
        if cfg.max_requests is not None:
            requests = min(requests, cfg.max_requests)
        if cfg.max_prompt_tokens is not None:
            tokens = min(tokens, cfg.max_prompt_tokens)
        return Plan(
            requests=requests,
            prompt_tokens=tokens,
            levels=[lv.name for lv in self.levels],
            min_seconds=requests / cfg.rate if cfg.rate else None,
        )

    # -- sending -------------------------------------------------------------------------------

    def _client(self, tenant: Tenant) -> BenchClient:
        if tenant.name not in self.clients:
            assert self.info is not None and self.info.model is not None
            self.clients[tenant.name] = BenchClient(
                base_url=self.base_url,
                model=self.info.model,
                api_key=tenant.api_key,
                endpoint=self.cfg.endpoint,
                max_tokens=1,
                timeout_s=self.cfg.timeout_s,
                cache_salt=tenant.cache_salt,
                extra_body=dict(self.cfg.extra_body),
            )
        return self.clients[tenant.name]

    def _send(self, budget: Budget, tenant: Tenant, prompt: str, tokens: int) -> tuple[Any, str | None]:
        """One paced request; ``(StreamResult or None, error or None)``."""
        budget.pace(tokens)
        try:
            return self._client(tenant).send(prompt), None
        except (BenchClientError, httpx.HTTPError) as exc:
            self.failed += 1
            return None, f"{type(exc).__name__}: {exc}"

    def _trial(self, budget: Budget, level: Level, arm: str, words: int, prefix: int) -> None:
        """Victim sends a fresh prompt; the attacker's (timed) prompt shares its prefix or nothing."""
        victim_words = self.factory.words(words)
        self._send(budget, level.victim, self.factory.join(victim_words), words)
        if arm == "hit":
            prompt = self.factory.join(victim_words[:prefix], self.factory.words(words - prefix))
        else:
            prompt = self.factory.text(words)
        res, error = self._send(budget, level.attacker, prompt, words)
        sample = ProbeSample(level=level.name, arm=arm, error=error)  # type: ignore[arg-type]
        if res is not None:
            sample.ttft_s, sample.prompt_tokens, sample.cached_tokens = (
                res.ttft_s,
                res.prompt_tokens,
                res.cached_tokens,
            )
            (level.hits if arm == "hit" else level.misses).append(res.ttft_s)
        self.samples.append(sample)

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> ProbeRun:
        """Size prompts, warm up, then interleave trials until every level is decided or the budget
        is spent. Call :meth:`discover` first."""
        if self.info is None:
            self.discover()
        assert self.info is not None
        cfg = self.cfg
        plan = self.plan()
        budget = Budget(
            max_requests=plan.requests,
            max_prompt_tokens=plan.prompt_tokens,
            max_time_s=cfg.max_time_s,
            rate=cfg.rate,
        )
        budget.start()
        run = ProbeRun(
            base_url=self.base_url,
            model=self.info.model,
            endpoint=cfg.endpoint,
            tenants=[t.public() for t in self.tenants],
            server=self.info.as_dict(),
            plan={"requests": plan.requests, "prompt_tokens": plan.prompt_tokens, "levels": plan.levels},
            notes=list(self.info.notes),
        )
        try:
            words, prefix = self._size(budget, run)
            run.settings = {
                "seed": self.factory.seed,
                "prompt_tokens": words,
                "shared_prefix_tokens": prefix,
                "alpha": cfg.alpha,
                "min_samples": cfg.min_samples,
                "max_samples": cfg.max_samples,
                "looks": look_points(cfg.min_samples, cfg.max_samples),
                "rate": cfg.rate,
                "max_time_s": cfg.max_time_s,
                "extra_body_keys": sorted(cfg.extra_body),
            }
            warm = {lv.attacker.name: lv.attacker for lv in self.levels}
            warm.setdefault(self.tenants[0].name, self.tenants[0])
            for tenant in warm.values():
                for _ in range(cfg.warmup):
                    if budget.allows(1, words):
                        self._send(budget, tenant, self.factory.text(words), words)
            self._loop(budget, words, prefix)
        finally:
            for client in self.clients.values():
                client.close()
        self._finish(run, budget)
        return run

    def _size(self, budget: Budget, run: ProbeRun) -> tuple[int, int]:
        """Prompt words and shared prefix, cut to the server's ``max_model_len``."""
        assert self.info is not None
        cfg = self.cfg
        client = self._client(self.tenants[0])
        sizing = Sizing()

        def send(prompt: str) -> Completion:
            budget.pace(len(prompt.split()))
            return client.complete(prompt, max_tokens=1)

        try:
            sizing = measure_sizing(client, self.factory, send=send)
        except httpx.HTTPError as exc:
            run.notes.append(f"could not measure the prompt overhead: {type(exc).__name__}: {exc}")
        run.notes += sizing.notes
        (words,), notes = fit_lengths([cfg.prompt_tokens], self.info.max_model_len, sizing, 1)
        run.notes += notes
        prefix = max(1, min(words - 1, round(words * cfg.shared_prefix)))
        return words, prefix

    def _loop(self, budget: Budget, words: int, prefix: int) -> None:
        cfg = self.cfg
        points = look_points(cfg.min_samples, cfg.max_samples)
        alpha_look = cfg.alpha / len(points)
        per_key = self.levels[0]
        for target in points:
            active = [lv for lv in self.levels if lv.decision is None]
            if not active:
                return
            pairs: list[list[tuple[Level, str]]] = []
            for lv in active:
                for _ in range(target - lv.attempted):
                    pair = [(lv, "hit"), (lv, "miss")]
                    self.order.shuffle(pair)
                    pairs.append(pair)
                lv.attempted = target
            self.order.shuffle(pairs)
            names = ", ".join(lv.name for lv in active)
            self.progress(f"{len(pairs) * 4} requests to reach {target} samples per arm ({names})")
            for pair in pairs:
                for lv, arm in pair:
                    if not budget.allows(2, 2 * words):
                        return
                    self._trial(budget, lv, arm, words, prefix)
            for lv in active:
                same = per_key.hits if lv is not per_key and per_key.decision == "detected" else None
                look = decide(lv.hits, lv.misses, alpha_look, same)
                lv.alpha_look = alpha_look
                lv.looks.append(LookRecord(n=look.n, p_detect=look.p_detect, p_rule_out=look.p_rule_out))
                if look.decision is not None:
                    lv.decision = look.decision
                    lv.stopped_early = target < points[-1]

    def _finish(self, run: ProbeRun, budget: Budget) -> None:
        run.requests_sent = budget.requests
        run.prompt_tokens_sent = budget.prompt_tokens
        run.elapsed_s = round(budget.elapsed_s, 3)
        run.budget_exhausted = budget.exhausted
        run.failed_requests = self.failed
        run.samples = self.samples
        for lv in self.levels:
            if lv.decision is None:
                every_look = len(lv.looks) == len(look_points(self.cfg.min_samples, self.cfg.max_samples))
                if not lv.looks:
                    lv.decision = "not-run"
                elif lv.name == "per-key" and every_look:
                    lv.decision = "not-detected"  # at max_samples: caching not visible in timing
                else:
                    lv.decision = "undecided"  # across tenants at max_samples, or the budget ran out
            mine = [s for s in self.samples if s.level == lv.name]
            cached_hit = [s.cached_tokens for s in mine if s.arm == "hit" and s.cached_tokens is not None]
            cached_miss = [s.cached_tokens for s in mine if s.arm == "miss" and s.cached_tokens is not None]
            last = lv.looks[-1] if lv.looks else None
            run.levels.append(
                LevelResult(
                    level=lv.name,
                    victim=lv.victim.name,
                    attacker=lv.attacker.name,
                    decision=lv.decision,  # type: ignore[arg-type]
                    n_hit=len(lv.hits),
                    n_miss=len(lv.misses),
                    hit_p50_s=percentile(lv.hits, 50),
                    miss_p50_s=percentile(lv.misses, 50),
                    p_value=last.p_detect if last else None,
                    p_rule_out=last.p_rule_out if last else None,
                    alpha_look=lv.alpha_look,
                    stopped_early=lv.stopped_early,
                    hit_cached_tokens_mean=sum(cached_hit) / len(cached_hit) if cached_hit else None,
                    miss_cached_tokens_mean=sum(cached_miss) / len(cached_miss) if cached_miss else None,
                    errors=sum(1 for s in mine if s.error),
                    looks=lv.looks,
                )
            )
        detected = [lv.level for lv in run.levels if lv.decision == "detected"]
        run.sharing_level = max(detected, key=LEVEL_ORDER.index) if detected else None
        cross = [lv for lv in run.levels if lv.level != "per-key"]
        per_key = run.levels[0]
        if any(lv.decision == "detected" for lv in cross):
            run.verdict = "shared"
        elif self.failed:
            run.verdict = "error"
        elif not cross:
            run.verdict = "per-key-only"
        elif per_key.decision != "detected":
            run.verdict = "inconclusive"
            run.notes.append(
                "caching is not visible in timing even within one tenant, so nothing can be said "
                "across tenants: use longer prompts (--prompt-tokens) or more samples"
            )
        elif all(lv.decision == "ruled-out" for lv in cross):
            run.verdict = "isolated"
        else:
            run.verdict = "inconclusive"
            run.notes.append("a level across tenants is neither detected nor ruled out: raise --max-samples")
        if self.failed:
            run.notes.append(f"{self.failed} requests failed; their samples are left out")
