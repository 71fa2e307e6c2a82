"""Retention: how many tokens of distinct prefixes does the server really keep?

Fill ``N`` unique contexts of ``T`` tokens, then re-probe each with a fresh suffix, **newest first**.
Under LRU (vLLM, SGLang, this engine) the newest contexts survive; probing newest first means a
probe that misses (and re-inserts its context) only evicts contexts already probed, so the run of
hits from the newest end counts the contexts the server kept. Hits are read from the reported
``cached_tokens`` when the server reports them, from timing otherwise.

The kept tokens are compared with the advertised figure (``--advertised-tokens``, else the
``max_model_len`` the server lists under ``/v1/models``): a server that advertises a 1,048,576-token
context but keeps 681,280 tokens of KV fails here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from prefixlint.live.calibrate import percentile
from prefixlint.live.client import BenchClient
from prefixlint.live.prompts import PromptFactory, random_seed
from prefixlint.live.results import BenchRun, RetentionResult, Sample
from prefixlint.live.ttft import send_sample


@dataclass
class RetentionConfig:
    """Knobs of one retention run."""

    contexts: int = 8
    context_tokens: int = 4096
    advertised_tokens: int | None = None
    probe_suffix_tokens: int = 16
    warmup: int = 1
    threshold_s: float | None = None
    hit_ratio: float = 0.5
    hit_fraction: float = 0.5
    tolerance: float = 0.05
    seed: int | None = None
    label: str | None = None


def advertised_context(client: BenchClient) -> int | None:
    """``max_model_len`` (vLLM, SGLang, this engine) of the model under ``/v1/models``, if listed."""
    try:
        resp = client._client().get(client.base_url.rstrip("/") + "/models")
        data = resp.json().get("data", []) if resp.status_code == 200 else []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    for entry in data:
        if isinstance(entry, dict) and entry.get("id") == client.model:
            for key in ("max_model_len", "context_length", "context_window"):
                if isinstance(entry.get(key), int):
                    return int(entry[key])
    return None


def _verdict(retained: int, filled: int, advertised: int | None, tol: float, need: int) -> tuple[str, str]:
    if advertised is None:
        return "no-claim", f"kept {retained:,} of {filled:,} filled tokens (no advertised figure to compare)"
    if retained < (1.0 - tol) * min(filled, advertised):
        return (
            "fewer-than-advertised",
            f"kept {retained:,} tokens of distinct prefixes; advertised {advertised:,}",
        )
    if filled < advertised:
        return (
            "inconclusive",
            f"kept all {retained:,} filled tokens, fewer than the advertised {advertised:,}; "
            f"fill more (--contexts {need})",
        )
    return "ok", f"kept {retained:,} tokens, advertised {advertised:,}"


def run_retention(
    client: BenchClient, cfg: RetentionConfig, on_sample: Callable[[Sample], None] | None = None
) -> BenchRun:
    """Fill, probe newest first, and judge retention against the advertised figure."""
    seed = cfg.seed if cfg.seed is not None else random_seed()
    factory = PromptFactory(seed=seed)
    listed = advertised_context(client)
    advertised = cfg.advertised_tokens if cfg.advertised_tokens is not None else listed
    settings = {
        "contexts": cfg.contexts,
        "context_tokens": cfg.context_tokens,
        "seed": seed,
        "probe_suffix_tokens": cfg.probe_suffix_tokens,
        "listed_max_model_len": listed,
        "advertised_source": "option" if cfg.advertised_tokens is not None else "/v1/models",
    }
    run = BenchRun.against(
        "retention", client, label=cfg.label, settings=settings, tokenizer=factory.tokenizer.label
    )
    if listed is not None and cfg.context_tokens > listed:
        run.warnings.append(
            f"--context-tokens {cfg.context_tokens} exceeds the listed max_model_len {listed}"
        )

    def send(prompt: str, arm: str, expected: int, ctx: int | None) -> Sample:
        sample = send_sample(client, prompt, arm, len(prompt.split()), expected, ctx)  # type: ignore[arg-type]
        if on_sample is not None:
            on_sample(sample)
        return sample

    for _ in range(cfg.warmup):
        send(factory.text(cfg.probe_suffix_tokens + 16), "warmup", 0, None)
    contexts = [factory.words(cfg.context_tokens) for _ in range(cfg.contexts)]
    fills = [send(factory.join(words), "fill", 0, i) for i, words in enumerate(contexts)]
    probes = [
        send(
            factory.join(contexts[i], factory.words(cfg.probe_suffix_tokens)), "probe", cfg.context_tokens, i
        )
        for i in reversed(range(cfg.contexts))
    ]

    reported = any(p.cached_tokens is not None for p in probes)
    threshold: float | None = None
    if reported:
        detection = "reported"
        kept = [min(p.cached_tokens or 0, cfg.context_tokens) for p in probes]
        hit = [k >= cfg.hit_fraction * cfg.context_tokens for k in kept]
    else:
        detection = "timing"
        fill_times = [f.ttft_s for f in fills if f.ttft_s is not None]
        threshold = cfg.threshold_s
        if threshold is None and fill_times:
            threshold = cfg.hit_ratio * (percentile(fill_times, 50) or 0.0)
        hit = [p.ttft_s is not None and threshold is not None and p.ttft_s <= threshold for p in probes]
        kept = [cfg.context_tokens if h else 0 for h in hit]
        if any(p.error is None for p in probes):
            run.warnings.append("the server reports no cached_tokens; hits judged by TTFT only")
    contiguous = next((i for i, h in enumerate(hit) if not h), len(hit))
    retained = sum(kept)
    filled = cfg.contexts * cfg.context_tokens
    need = math.ceil((advertised or 0) / cfg.context_tokens) + 1
    verdict, message = _verdict(retained, filled, advertised, cfg.tolerance, need)
    failed = [s for s in [*fills, *probes] if s.error]
    if failed:
        verdict = "error"
        message = (
            f"{len(failed)} of {len(fills) + len(probes)} requests failed (e.g. {failed[0].error}); "
            "retention not judged"
        )
    run.retention = RetentionResult(
        contexts=cfg.contexts,
        context_tokens=cfg.context_tokens,
        filled_tokens=filled,
        advertised_tokens=advertised,
        detection=detection,
        threshold_s=threshold,
        retained_contexts=contiguous,
        retained_tokens=retained,
        verdict=verdict,  # type: ignore[arg-type]
        message=message,
        probes=probes,
        fills=fills,
    )
    return run
