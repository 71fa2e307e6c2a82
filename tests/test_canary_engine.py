"""End to end: the bench against this project's engine server, and the GPU script's smoke mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.engine, pytest.mark.slow]
torch = pytest.importorskip("torch")
pytest.importorskip("uvicorn")

from prefixlint.live.client import BenchClient  # noqa: E402
from prefixlint.live.retention import RetentionConfig, run_retention  # noqa: E402
from prefixlint.live.serving import serve_in_thread  # noqa: E402
from prefixlint.live.ttft import TTFTConfig, run_ttft  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def engine_url():  # type: ignore[no-untyped-def]
    from prefixlint.engine import EngineConfig, LLMEngine
    from prefixlint.engine.server import create_app

    # 256 blocks x 16 = 4,096 tokens of KV: room for a cached 1k prefix plus two 1k misses in a
    # row, too small for the retention run's 12 x 400 tokens.
    eng = LLMEngine(
        EngineConfig(
            preset="tiny", device="cpu", max_model_len=2048, num_blocks=256, max_num_batched_tokens=2048
        )
    )
    try:
        with serve_in_thread(create_app(eng)) as root:
            yield root + "/v1", eng
    finally:
        eng.shutdown()


def test_ttft_against_the_engine(engine_url) -> None:  # type: ignore[no-untyped-def]
    url, eng = engine_url
    with BenchClient(url, eng.model_name) as client:
        run = run_ttft(
            client, TTFTConfig(prompt_tokens=[1024], new_suffix_tokens=64, samples=4, warmup=1, seed=3)
        )
    (res,) = run.lengths
    assert all(s.error is None for s in res.samples), [s.error for s in res.samples]
    hits = [s for s in res.samples if s.arm == "hit"]
    misses = [s for s in res.samples if s.arm == "miss"]
    # The engine always reports cached_tokens (0 included) and caches full 16-token blocks.
    assert all(s.cached_field == "prompt_tokens_details.cached_tokens" for s in res.samples)
    assert all(s.cached_tokens == 0 for s in misses)
    assert all(960 - 16 <= (s.cached_tokens or 0) <= 1024 for s in hits), [s.cached_tokens for s in hits]
    assert res.calibration.reporting == "reported"
    assert res.hit.p50_s < res.miss.p50_s
    # The engine's own Prometheus counters agree with what its responses said.
    assert run.metrics is not None and run.metrics.flavor == "prefixlint-engine", run.metrics
    assert [c.name for c in run.metrics.checks] == [
        "prefixlint_engine_prefix_cache_hit_tokens_total",
        "prefixlint_engine_prompt_tokens_total",
    ]
    assert not run.metrics.mismatch, run.metrics


def test_retention_against_the_engine(engine_url) -> None:  # type: ignore[no-untyped-def]
    url, eng = engine_url
    with BenchClient(url, eng.model_name) as client:
        run = run_retention(
            client, RetentionConfig(contexts=12, context_tokens=400, advertised_tokens=1 << 20, seed=4)
        )
    ret = run.retention
    assert ret is not None and ret.detection == "reported"
    assert all(p.error is None for p in ret.probes)
    assert 1 <= ret.retained_contexts < 12  # a 4,096-token pool cannot keep 12 x 400 tokens
    assert ret.retained_tokens <= 4096
    assert ret.verdict == "fewer-than-advertised"
    # Without --advertised-tokens the figure is the max_model_len the engine lists under /v1/models.
    with BenchClient(url, eng.model_name) as client:
        listed = run_retention(client, RetentionConfig(contexts=2, context_tokens=100, seed=5))
    assert listed.retention is not None
    assert listed.retention.advertised_tokens == eng.config.max_model_len
    assert listed.settings["advertised_source"] == "/v1/models"


def test_bench_cuts_prompts_to_what_the_engine_accepts(engine_url) -> None:  # type: ignore[no-untyped-def]
    """A 2,048-token prompt plus the engine's 22-token chat template would get a 400 at max_model_len
    2,048; the bench measures the template, sends 2,025 tokens, and says so."""
    from typer.testing import CliRunner

    from prefixlint.commands.bench import app
    from prefixlint.live.results import BenchRun

    url, eng = engine_url
    res = CliRunner().invoke(
        app,
        ["ttft", "--base-url", url, "--prompt-tokens", "2048", "--samples", "2", "--warmup", "0",
         "--no-metrics", "--output-format", "json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    run = BenchRun.model_validate_json(res.stdout)
    assert run.model == eng.model_name  # --model defaults to the listed one
    assert run.settings["sizing"] == {"overhead": 22, "per_word": 1.0, "exact": True}
    (length,) = run.lengths
    assert length.prompt_tokens == 2048 - 22 - 1
    assert all(s.error is None and s.prompt_tokens == 2047 for s in length.samples)
    assert any(w.startswith("2048-token prompts sent as 2025 tokens") for w in run.warnings)


def test_gpu_script_smoke_mode(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "gpu_ttft.py"),
            "--smoke",
            "--lengths",
            "128,256",
            "--out-dir",
            str(tmp_path),
            "--threads",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads((tmp_path / "gpu_ttft.json").read_text())
    assert res["smoke"] and res["preset"] == "tiny" and res["device"] == "cpu"
    assert set(res["lengths"]) == {"128", "256"}
    for row in res["lengths"].values():
        assert row["floor_s"] > 0 and row["miss_s"] > 0 and row["hit_s"] > 0
        assert row["cached_tokens"] >= 128 - 64 - 16
    assert "| prompt |" in proc.stdout
    md = (tmp_path / "gpu_ttft.md").read_text()
    assert md.startswith("### ") and "engine hit" in md
    # --record appends that entry to a RESULTS.md section without touching the others.
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import results_md
    finally:
        sys.path.remove(str(ROOT / "bench"))
    target = tmp_path / "RESULTS.md"
    target.write_text("# Benchmark results\n\n## Other section\n\nkeep me\n")
    results_md.record("Engine TTFT (GPU)", md, target)
    results_md.record("Engine TTFT (GPU)", "### second entry\n", target)
    text = target.read_text()
    assert "## Other section\n\nkeep me\n" in text
    first = md.splitlines()[0]
    assert text.index("## Engine TTFT (GPU)") < text.index(first) < text.index("### second entry")
