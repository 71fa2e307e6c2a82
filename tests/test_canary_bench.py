"""The TTFT bench, metrics check and retention mode against a local server over real HTTP.

The fake server (``prefixlint.live.fake_server``) keeps a real prefix cache and sleeps in
proportion to uncached tokens, and can be told to lie. Latencies are a few to ~100 ms so that the
hit/miss gap stays far above scheduling noise on a busy machine.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from prefixlint.live.calibrate import percentile
from prefixlint.live.client import BenchClient, BenchClientError
from prefixlint.live.fake_server import FakeServerConfig, fake_server
from prefixlint.live.retention import RetentionConfig, run_retention
from prefixlint.live.serving import serve_in_thread
from prefixlint.live.ttft import TTFTConfig, run_ttft

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

SLOW = dict(base_s=0.002, per_token_s=0.0002)  # 512-token miss ~ 100 ms, 32-token hit ~ 8 ms
# One of a run's 12 timed requests can be held up by ~100 ms of scheduling on a loaded 2-core CI
# machine; the assertions below allow that one and no more.
NOISY_SAMPLES = 1
SMALL = dict(prompt_tokens=[512], new_suffix_tokens=32, samples=6, warmup=1, seed=11)


def _run(cfg: FakeServerConfig, **kw: object):  # type: ignore[no-untyped-def]
    with fake_server(cfg) as (url, state), BenchClient(url, cfg.model) as client:
        return run_ttft(client, TTFTConfig(**{**SMALL, **kw})), state  # type: ignore[arg-type]


def test_honest_server_percentiles_speedup_and_metrics() -> None:
    run, state = _run(FakeServerConfig(**SLOW))
    (res,) = run.lengths
    hits = [s.ttft_s for s in res.samples if s.arm == "hit"]
    misses = [s.ttft_s for s in res.samples if s.arm == "miss"]
    assert len(hits) == len(misses) == 6
    assert [s.arm for s in res.samples[:2]] == ["warmup", "prime"]
    assert res.hit.p50_s == pytest.approx(percentile(hits, 50))
    assert res.miss.p90_s == pytest.approx(percentile(misses, 90))
    assert res.hit.p99_s == pytest.approx(percentile(hits, 99))
    assert res.speedup_p50 == pytest.approx(res.miss.p50_s / res.hit.p50_s)
    assert res.speedup_p50 > 3
    assert min(misses) > 0.1  # 513 uncached tokens at 0.2 ms each
    # Chat template token + 480 shared tokens -> 480 cached (30 full blocks of 16).
    assert res.hit.cached_tokens_mean == 480 and res.miss.cached_tokens_mean == 0
    cal = res.calibration
    assert cal.separable and cal.disagreements <= NOISY_SAMPLES and cal.reporting == "reported"
    assert res.hit.p50_s < cal.threshold_s < res.miss.p50_s
    assert run.metrics is not None and run.metrics.available and run.metrics.flavor == "vllm"
    assert not run.metrics.mismatch
    hits_check = next(c for c in run.metrics.checks if c.name == "vllm:prefix_cache_hits_total")
    assert hits_check.delta == hits_check.reported == state.cached_tokens_total > 0
    # Each request streamed with usage and the interleaving touched both arms early.
    assert all(b["stream"] and b["stream_options"] == {"include_usage": True} for b in state.bodies)


def test_server_reporting_hits_without_the_speed_is_caught() -> None:
    # alpha below the smallest p-value 6 samples can give (1/924): identical arms never pass as
    # separable by chance, so this always exercises the fallback threshold.
    run, _ = _run(FakeServerConfig(lie="report-without-speed", **SLOW), alpha=1e-3)
    cal = run.lengths[0].calibration
    assert not cal.separable and "fallback" in cal.method
    # 6 reported hits at miss speed. Each is miss-like unless chance put it below every miss
    # (undecidable, listed); with exchangeable arms the two fastest of 12 are both hits 23% of
    # the time, so only "caught at all" is certain (all 6 below every miss: 1/924).
    assert cal.reported_hit_slow >= 1
    assert cal.reported_hit_slow + cal.undecidable == 6 and cal.reported_miss_fast == 0
    assert run.lengths[0].speedup_p50 < 1.5


def test_server_hiding_hits_is_caught() -> None:
    run, _ = _run(FakeServerConfig(lie="speed-without-report", **SLOW))
    cal = run.lengths[0].calibration
    assert cal.separable and cal.reporting == "reported"
    assert cal.reported_miss_fast >= 6 - NOISY_SAMPLES and cal.reported_hit_slow == 0
    # The counters tell the truth, the responses do not: the metrics check sees it too.
    assert run.metrics is not None and run.metrics.mismatch


def test_vllm_style_omitted_field() -> None:
    run, _ = _run(FakeServerConfig(cached_field="vllm", **SLOW))
    res = run.lengths[0]
    misses = [s for s in res.samples if s.arm == "miss"]
    assert all(s.cached_tokens is None and s.cached_field is None for s in misses)
    assert res.hit.cached_reported == 6 and res.miss.cached_reported == 0
    assert res.calibration.reporting == "omitted-when-zero"
    assert res.calibration.unreported == 6 and res.calibration.disagreements <= NOISY_SAMPLES
    never, _ = _run(FakeServerConfig(cached_field="none", **SLOW))
    assert never.lengths[0].calibration.reporting == "none"
    assert never.lengths[0].speedup_p50 > 3


def test_deepseek_field_is_read() -> None:
    run, _ = _run(FakeServerConfig(cached_field="deepseek", **SLOW), samples=2)
    hit = next(s for s in run.lengths[0].samples if s.arm == "hit")
    assert hit.cached_field == "prompt_cache_hit_tokens" and hit.cached_tokens == 480


def test_metrics_counter_mismatch_is_flagged() -> None:
    run, _ = _run(FakeServerConfig(metrics_scale=2.0, base_s=0.001, per_token_s=0.0), samples=2)
    assert run.metrics is not None and run.metrics.mismatch
    bad = [c for c in run.metrics.checks if not c.agrees]
    assert [c.name for c in bad] == ["vllm:prefix_cache_hits_total"]
    assert bad[0].delta == 2 * bad[0].reported
    none, _ = _run(FakeServerConfig(metrics=False, base_s=0.001, per_token_s=0.0), samples=2)
    assert none.metrics is not None and not none.metrics.available and not none.metrics.mismatch


def test_cache_salt_and_extra_body_reach_the_server() -> None:
    cfg = FakeServerConfig(base_s=0.001, per_token_s=0.0)
    with fake_server(cfg) as (url, state):
        with BenchClient(
            url, cfg.model, cache_salt="tenant-a", extra_body={"top_k": 1, "temperature": None}
        ) as a:
            first = a.send("x " * 100)
            again = a.send("x " * 100 + "y")
        with BenchClient(url, cfg.model, cache_salt="tenant-b", endpoint="completions") as b:
            other = b.send("x " * 100 + "y")
    assert state.bodies[0]["cache_salt"] == "tenant-a" and state.bodies[0]["top_k"] == 1
    assert "temperature" not in state.bodies[0] and state.bodies[2]["temperature"] == 0
    assert "prompt" in state.bodies[2] and "messages" not in state.bodies[2]
    assert first.cached_tokens == 0 and again.cached_tokens == 96 and other.cached_tokens == 0


def test_ttft_ignores_usage_only_and_counts_role_chunk() -> None:
    """TTFT = first chunk with choices: an early usage-only chunk must not stop the clock."""
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def handler(request):  # type: ignore[no-untyped-def]
        async def stream():  # type: ignore[no-untyped-def]
            yield 'data: {"choices": [], "usage": null}\n\n'
            yield ": keep-alive comment\n\n"
            await asyncio.sleep(0.15)
            yield 'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}\n\n'
            await asyncio.sleep(0.15)
            yield 'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n'
            yield 'data: {"choices": [], "usage": {"prompt_tokens": 3}}\n\n'
            yield "data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def refuse(request):  # type: ignore[no-untyped-def]
        return StreamingResponse(iter([json.dumps({"error": "nope"})]), status_code=400)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", handler, methods=["POST"]),
            Route("/v1/completions", refuse, methods=["POST"]),
        ]
    )
    with serve_in_thread(app) as root:
        with BenchClient(root + "/v1", "m") as client:
            res = client.send("a b c")
        with (
            BenchClient(root + "/v1", "m", endpoint="completions") as client,
            pytest.raises(BenchClientError, match="HTTP 400"),
        ):
            client.send("a b c")
    assert 0.15 <= res.ttft_s < 0.28
    assert res.total_s >= 0.3
    assert res.text == "hi" and res.prompt_tokens == 3 and res.cached_tokens is None


def test_retention_detects_a_server_keeping_fewer_tokens_than_advertised() -> None:
    cfg = FakeServerConfig(capacity_tokens=2048, advertised_tokens=4096, base_s=0.001, per_token_s=0.00005)
    with fake_server(cfg) as (url, _), BenchClient(url, cfg.model) as client:
        run = run_retention(client, RetentionConfig(contexts=6, context_tokens=512, seed=5))
    ret = run.retention
    assert ret is not None and ret.detection == "reported"
    assert ret.advertised_tokens == 4096  # read from /v1/models
    assert ret.verdict == "fewer-than-advertised"
    # 2048-token pool: the 3 newest 513-token contexts survive (the 4th lost its first block).
    assert ret.retained_contexts == 3 and ret.retained_tokens == 3 * 512
    assert [p.context for p in ret.probes] == [5, 4, 3, 2, 1, 0]


def test_retention_ok_and_timing_only() -> None:
    cfg = FakeServerConfig(
        capacity_tokens=1 << 16,
        advertised_tokens=1 << 16,
        cached_field="none",
        base_s=0.002,
        per_token_s=0.0002,
    )
    with fake_server(cfg) as (url, _), BenchClient(url, cfg.model) as client:
        run = run_retention(
            client, RetentionConfig(contexts=4, context_tokens=256, advertised_tokens=1000, seed=5)
        )
    ret = run.retention
    assert ret is not None and ret.detection == "timing" and ret.threshold_s is not None
    assert ret.retained_contexts == 4 and ret.retained_tokens == 1024
    assert ret.verdict == "ok"
    assert any("TTFT only" in w for w in run.warnings)
