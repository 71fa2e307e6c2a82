"""``prefixlint canary`` and ``prefixlint probe`` proven against the reference engine (tiny preset,
CPU, loopback HTTP).

Sizes come from ``bench/live_power.py`` (the same engine settings), which measured how often each
of these runs reaches its verdict; ``docs/canary.md`` and ``bench/RESULTS.md`` have the numbers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytestmark = [pytest.mark.engine, pytest.mark.slow]
torch = pytest.importorskip("torch")
pytest.importorskip("uvicorn")
torch.set_num_threads(1)

import httpx  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from prefixlint.cli import app  # noqa: E402
from prefixlint.commands.canary import CHECK_NAMES  # noqa: E402
from prefixlint.engine import EngineConfig, LLMEngine  # noqa: E402
from prefixlint.engine.server import create_app  # noqa: E402
from prefixlint.live.canary_report import CanaryRun  # noqa: E402
from prefixlint.live.probe_report import ProbeRun  # noqa: E402
from prefixlint.live.serving import serve_in_thread  # noqa: E402

runner = CliRunner()
# A 1,024-token pool (64 blocks): the canary's victim traffic recycles every block each round, so
# a faulty read finds another tenant's KV. Kept equal to bench/live_power.py.
CANARY_ENGINE = dict(
    preset="tiny", device="cpu", max_model_len=512, num_blocks=64, max_num_batched_tokens=2048
)
PROBE_ENGINE = dict(
    preset="tiny", device="cpu", max_model_len=2048, num_blocks=1024, max_num_batched_tokens=2048,
    allow_client_salt=True,
)  # fmt: skip
# 1,024-token prompts, looks at 6, 12 and 24 samples per arm (each at alpha 0.01 / 3): decisive in
# every one of 40 runs (20 shared, 20 salted) on 2 heavily loaded cores, almost always at the first
# look (bench/RESULTS.md); 6..12 missed 1 of 40.
PROBE_ARGS = ["--prompt-tokens", "1024", "--min-samples", "6", "--max-samples", "24", "--rate", "0", "--yes"]


def _serve(engine_kw: dict, **app_kw: object) -> Iterator[str]:
    eng = LLMEngine(EngineConfig(**engine_kw))
    try:
        with serve_in_thread(create_app(eng, **app_kw)) as root:  # type: ignore[arg-type]
            yield root
    finally:
        eng.shutdown()


@pytest.fixture(scope="module")
def clean_engine() -> Iterator[str]:
    yield from _serve(CANARY_ENGINE)


@pytest.fixture(scope="module")
def unchecked_engine() -> Iterator[str]:
    yield from _serve({**CANARY_ENGINE, "integrity_checks": False}, fault_injection=True)


@pytest.fixture(scope="module")
def checked_engine() -> Iterator[str]:
    yield from _serve(CANARY_ENGINE, fault_injection=True)


def _canary(root: str, *args: str) -> tuple[int, CanaryRun]:
    res = runner.invoke(app, ["canary", "--base-url", root + "/v1", "--output-format", "json", *args])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, CanaryRun.model_validate_json(res.stdout)


def test_canary_passes_on_a_clean_engine_every_time(clean_engine: str) -> None:
    """No false positive over repeated runs, with nothing but the URL (two random keys as tenants)."""
    for _ in range(3):
        code, run = _canary(clean_engine)
        assert code == 0 and run.verdict == "pass", run.to_json(requests=False)
        assert run.server["kv_pool_tokens"] == 1024 and run.server["pool_source"] == "/health"
        assert run.failed_requests == 0
    cache = next(c for c in run.checks if c.name == "cross-tenant-cache")
    assert "key-" not in cache.summary and "the control hit" in cache.summary
    det = next(c for c in run.checks if c.name == "determinism")
    spread = float(det.details[0].split("largest logprob difference ")[1].split()[0])
    assert spread < 1e-4  # float32 CPU: a cached prefix gives the same logprobs to ~1e-6


def _switch_fault_on(root: str) -> None:
    resp = httpx.post(root + "/debug/fault", json={"fault": "reserve_unwritten_blocks", "num_blocks": 4})
    assert resp.status_code == 200 and resp.json()["active"]["fault"] == "reserve_unwritten_blocks"


def test_canary_detects_the_leak_with_integrity_checks_off(unchecked_engine: str) -> None:
    _switch_fault_on(unchecked_engine)
    try:
        code, run = _canary(unchecked_engine)
    finally:
        httpx.delete(unchecked_engine + "/debug/fault")
    assert code == 1 and run.verdict == "leak", run.to_json(requests=False)
    det = next(c for c in run.checks if c.name == "determinism")
    assert det.status == "leak" and det.summary.startswith("B's greedy output changed after A's traffic")
    assert run.failed_requests == 0  # it answered, from another tenant's stale KV
    assert httpx.get(unchecked_engine + "/debug/fault").json()["injected"] > 0


def test_canary_reports_fail_closed_with_integrity_checks_on(checked_engine: str) -> None:
    _switch_fault_on(checked_engine)
    try:
        res = runner.invoke(app, ["canary", "--base-url", checked_engine + "/v1"])
    finally:
        httpx.delete(checked_engine + "/debug/fault")
    assert res.exit_code == 1, res.output
    assert "FAILED CLOSED" in res.output and "HTTP 500: KV integrity violation" in res.output
    table = [line.split() for line in res.output.splitlines()]
    statuses = {row[0]: row[1] for row in table if row and row[0] in CHECK_NAMES}
    assert statuses["determinism"] == "FAILED-CLOSED" and "LEAK" not in statuses.values()
    assert "x HTTP 500" in res.output


def _probe(root: str, *args: str) -> tuple[int, ProbeRun]:
    res = runner.invoke(
        app, ["probe", "--base-url", root + "/v1", *PROBE_ARGS, "--output-format", "json", *args]
    )
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, ProbeRun.model_validate_json(res.stdout)


def test_probe_detects_a_shared_cache_at_the_global_level() -> None:
    for root in _serve(PROBE_ENGINE, shared_cache=True):
        code, run = _probe(root)
    assert code == 1 and run.verdict == "shared" and run.sharing_level == "global", run.to_json(samples=False)
    glob = next(lv for lv in run.levels if lv.level == "global")
    assert glob.decision == "detected" and glob.hit_p50_s < glob.miss_p50_s
    assert glob.hit_cached_tokens_mean and glob.hit_cached_tokens_mean > 800  # the engine says so too


def test_probe_sees_nothing_across_salts_and_caching_within_one() -> None:
    for root in _serve(PROBE_ENGINE):
        code, run = _probe(root, "--cache-salt", "tenant-1", "--cache-salt", "tenant-2")
    assert code == 0 and run.verdict == "isolated", run.to_json(samples=False)
    levels = {lv.level: lv for lv in run.levels}
    assert levels["per-key"].decision == "detected"
    assert levels["global"].decision == "ruled-out" and levels["global"].hit_cached_tokens_mean == 0
    assert run.failed_requests == 0 and run.requests_sent <= run.plan["requests"]
