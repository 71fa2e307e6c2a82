"""The TTFT benchmark: warm-up, interleaved hit and miss arms, percentiles and speedup.

For each prompt length:

1. ``warmup`` fresh prompts (unmeasured) warm the connection and the server;
2. one *prime* request sends the shared prefix plus a fresh suffix, so the prefix is cached;
3. ``samples`` pairs follow, each a *hit* (shared prefix + fresh suffix) and a *miss* (a prompt of the
   same length, fresh from its first token), in a seeded random order inside each pair so that drift
   in server load hits both arms alike.

Prometheus counters, when the server has them, are scraped before and after the whole run.

Given the server's ``max_model_len`` (from ``/v1/models``), two short requests first measure the
tokens the server adds around a prompt (its chat template), and every requested length is cut to
what the server accepts; the run's warnings say which lengths were cut and why.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import httpx

from prefixlint.live.calibrate import DEFAULT_ALPHA, calibrate, percentile
from prefixlint.live.client import BenchClient, BenchClientError
from prefixlint.live.metrics import compare_counters, metrics_url_for, scrape
from prefixlint.live.prompts import PromptFactory, SharedPrefix, random_seed, split_lengths
from prefixlint.live.results import Arm, ArmStats, BenchRun, LengthResult, Sample
from prefixlint.live.server_info import ServerInfo
from prefixlint.live.sizing import fit_lengths, measure_sizing


@dataclass
class TTFTConfig:
    """Knobs of one TTFT run."""

    prompt_tokens: list[int] = field(default_factory=lambda: [1024, 2048, 4096])
    shared_prefix: float = 0.9
    new_suffix_tokens: int | None = None
    samples: int = 20
    warmup: int = 3
    seed: int | None = None
    threshold_method: str = "ks"
    alpha: float = DEFAULT_ALPHA
    sleep_s: float = 0.0
    metrics_url: str | None = None
    check_metrics: bool = True
    label: str | None = None


def send_sample(
    client: BenchClient, prompt: str, arm: Arm, target: int, expected: int, context: int | None = None
) -> Sample:
    """Send ``prompt`` and turn the outcome (or the error) into a :class:`Sample`."""
    sample = Sample(arm=arm, prompt_tokens_target=target, expected_cached_tokens=expected, context=context)
    try:
        res = client.send(prompt)
    except (BenchClientError, httpx.HTTPError) as exc:
        sample.error = f"{type(exc).__name__}: {exc}"
        return sample
    sample.ttft_s = res.ttft_s
    sample.total_s = res.total_s
    sample.prompt_tokens = res.prompt_tokens
    sample.cached_tokens = res.cached_tokens
    sample.cached_field = res.cached_field
    return sample


def arm_stats(samples: Sequence[Sample]) -> ArmStats:
    """Percentiles of TTFT and the reported cached tokens of one arm."""
    times = [s.ttft_s for s in samples if s.error is None and s.ttft_s is not None]
    cached = [s.cached_tokens for s in samples if s.cached_tokens is not None]
    return ArmStats(
        n=len(times),
        errors=sum(1 for s in samples if s.error is not None),
        p50_s=percentile(times, 50),
        p90_s=percentile(times, 90),
        p99_s=percentile(times, 99),
        mean_s=sum(times) / len(times) if times else None,
        min_s=min(times) if times else None,
        max_s=max(times) if times else None,
        cached_tokens_mean=sum(cached) / len(cached) if cached else None,
        cached_reported=len(cached),
    )


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def run_length(
    client: BenchClient,
    factory: PromptFactory,
    cfg: TTFTConfig,
    length: int,
    order_rng: random.Random,
    on_sample: Callable[[Sample], None] | None = None,
) -> LengthResult:
    """Warm-up, prime and the interleaved arms at one prompt length."""
    prefix, suffix = split_lengths(length, cfg.shared_prefix, cfg.new_suffix_tokens)
    shared = SharedPrefix(factory, prefix, suffix)
    samples: list[Sample] = []

    def record(prompt: str, arm: Arm, expected: int) -> None:
        sample = send_sample(client, prompt, arm, length, expected)
        samples.append(sample)
        if on_sample is not None:
            on_sample(sample)
        if cfg.sleep_s:
            time.sleep(cfg.sleep_s)

    for _ in range(cfg.warmup):
        record(shared.miss_prompt(), "warmup", 0)
    record(shared.prompt(), "prime", 0)
    for _ in range(cfg.samples):
        pair: list[tuple[Arm, int]] = [("hit", prefix), ("miss", 0)]
        order_rng.shuffle(pair)
        for arm, expected in pair:
            record(shared.prompt() if arm == "hit" else shared.miss_prompt(), arm, expected)
    hits = [s for s in samples if s.arm == "hit"]
    misses = [s for s in samples if s.arm == "miss"]
    hit, miss = arm_stats(hits), arm_stats(misses)
    return LengthResult(
        prompt_tokens=length,
        shared_prefix_tokens=prefix,
        new_suffix_tokens=suffix,
        hit=hit,
        miss=miss,
        speedup_p50=_ratio(miss.p50_s, hit.p50_s),
        speedup_p90=_ratio(miss.p90_s, hit.p90_s),
        calibration=calibrate(
            hits, misses, shared_prefix_tokens=prefix, method=cfg.threshold_method, alpha=cfg.alpha
        ),
        samples=samples,
    )


def run_ttft(
    client: BenchClient,
    cfg: TTFTConfig,
    on_sample: Callable[[Sample], None] | None = None,
    server: ServerInfo | None = None,
) -> BenchRun:
    """Run the whole benchmark against ``client``'s server (``server``: what it said about itself)."""
    seed = cfg.seed if cfg.seed is not None else random_seed()
    factory = PromptFactory(seed=seed)
    order_rng = random.Random(seed ^ 0x5EED)
    settings = {k: v for k, v in asdict(cfg).items() if k not in {"label"}}
    settings.update(
        seed=seed,
        max_tokens=client.max_tokens,
        cache_salt=bool(client.cache_salt),
        extra_body_keys=sorted(client.extra_body),
    )
    run = BenchRun.against(
        "ttft", client, label=cfg.label, settings=settings, tokenizer=factory.tokenizer.label
    )
    if not factory.exact:
        run.warnings.append("no exact cl100k tokenizer offline; prompt lengths are estimates")
    if cfg.seed is not None:
        run.warnings.append("fixed --seed: a repeated run sends the same prompts, so its misses may be warm")
    lengths = list(cfg.prompt_tokens)
    if server is not None and server.max_model_len is not None:
        lengths = _fit(client, factory, run, lengths, server.max_model_len)
    murl = cfg.metrics_url or metrics_url_for(client.base_url)
    before = scrape(murl, headers=_auth(client)) if cfg.check_metrics else None
    for length in lengths:
        result = run_length(client, factory, cfg, length, order_rng, on_sample)
        run.lengths.append(result)
        first = result.samples[0] if result.samples else None
        if first is not None and all(s.error for s in result.samples):
            run.warnings.append(f"every request at {length} tokens failed, e.g. {first.error}")
    if cfg.check_metrics:
        after = scrape(murl, headers=_auth(client)) if before is not None else None
        every = [s for r in run.lengths for s in r.samples]
        run.metrics = compare_counters(murl, before, after, every)
    return run


def _fit(
    client: BenchClient, factory: PromptFactory, run: BenchRun, lengths: list[int], max_model_len: int
) -> list[int]:
    """Measure the server's prompt overhead and cut ``lengths`` to fit ``max_model_len``."""
    try:
        sizing = measure_sizing(client, factory)
    except httpx.HTTPError as exc:
        run.warnings.append(f"could not measure the prompt overhead: {type(exc).__name__}: {exc}")
        return lengths
    run.settings["max_model_len"] = max_model_len
    run.settings["sizing"] = sizing.as_dict()
    run.warnings += sizing.notes
    fitted, notes = fit_lengths(lengths, max_model_len, sizing, client.max_tokens)
    run.warnings += notes
    if fitted != lengths:
        run.settings["prompt_tokens_sent"] = fitted
    return fitted


def _auth(client: BenchClient) -> dict[str, str]:
    return {"Authorization": f"Bearer {client.api_key}"} if client.api_key else {}
