"""``prefixlint bench`` as a CI gate: an outage or a failed request is never a pass, claims without
the speed-up are all accounted for, and prompts are sized to what the server accepts."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from prefixlint.commands.bench import app
from prefixlint.live.calibrate import calibrate
from prefixlint.live.client import BenchClient
from prefixlint.live.fake_server import FakeServerConfig, fake_server
from prefixlint.live.results import BenchRun, Sample
from prefixlint.live.ttft import TTFTConfig, run_ttft

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

runner = CliRunner()
SMALL = ["--prompt-tokens", "128", "--new-suffix-tokens", "16", "--samples", "3", "--warmup", "0"]


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


@pytest.mark.parametrize("command", ["ttft", "retention"])
def test_dead_server_exits_2_with_the_reason(command: str) -> None:
    res = runner.invoke(app, [command, "--base-url", _dead_url(), "--model", "m", "--strict"])
    assert res.exit_code == 2, res.output
    assert "cannot reach" in res.output and "no disagreement" not in res.output


def test_failed_requests_exit_1_with_counts_strict_or_not() -> None:
    cfg = FakeServerConfig(api_key="sk-right", base_s=0.001, per_token_s=0.0)
    with fake_server(cfg) as (url, _):
        for strict in ([], ["--strict"]):
            res = runner.invoke(app, ["ttft", "--base-url", url, "--api-key", "sk-wrong", *SMALL, *strict])
            assert res.exit_code == 1, res.output
            assert "ERROR: 7 of 7 requests failed (7 x HTTP 401)" in res.output
            assert "no disagreement" not in res.output


def test_retention_outage_is_an_error_not_kept_0_tokens() -> None:
    cfg = FakeServerConfig(api_key="sk-right", base_s=0.001, per_token_s=0.0)
    with fake_server(cfg) as (url, _):
        res = runner.invoke(
            app,
            [
                "retention",
                "--base-url",
                url,
                "--api-key",
                "sk-wrong",
                "--contexts",
                "2",
                "--context-tokens",
                "64",
            ],
        )
    assert res.exit_code == 1, res.output
    assert "verdict: error: 4 of 4 requests failed" in res.output  # 2 fills, 2 probes
    assert (
        "retention not judged" in res.output and "ERROR: 4 of 4 requests failed (4 x HTTP 401)" in res.output
    )
    assert "kept 0" not in res.output and "still hit" not in res.output and "TTFT only" not in res.output


def _s(arm: str, ttft: float, cached: int) -> Sample:
    return Sample(arm=arm, prompt_tokens_target=1000, ttft_s=ttft, cached_tokens=cached)  # type: ignore[arg-type]


def test_claimed_hits_at_miss_speed_are_all_flagged_or_named_undecidable() -> None:
    # One distribution for both arms (a server that claims hits without the speed-up). The old
    # 0.8 x median fallback let the hits below it pass silently (here 2 of 10).
    times = [0.070, 0.075, 0.090, 0.095, 0.100, 0.100, 0.105, 0.110, 0.115, 0.120]
    hits = [_s("hit", t + 0.001, 900) for t in times]
    misses = [_s("miss", t, 0) for t in times]
    cal = calibrate(hits, misses, shared_prefix_tokens=900)
    assert not cal.separable
    assert cal.reported_hit_slow == 10 and cal.undecidable == 0
    # A claimed hit faster than every miss cannot be judged by timing: it is counted and named.
    hits[0].ttft_s = 0.050
    cal = calibrate(hits, misses, shared_prefix_tokens=900)
    assert cal.reported_hit_slow == 9 and cal.undecidable == 1
    assert any(
        "1 reported hits undecidable: faster than every miss" in n and "50.0 ms" in n for n in cal.notes
    )


def test_liar_server_every_claim_accounted_for() -> None:
    cfg = FakeServerConfig(lie="report-without-speed", base_s=0.002, per_token_s=0.0002)
    with fake_server(cfg) as (url, _), BenchClient(url, cfg.model) as client:
        run = run_ttft(
            client,
            TTFTConfig(prompt_tokens=[512], new_suffix_tokens=32, samples=10, warmup=1, seed=7, alpha=1e-6),
        )
    cal = run.lengths[0].calibration
    assert not cal.separable
    assert cal.reported_hit_slow + cal.undecidable == 10  # every false claim is flagged or named
    res_text = __import__("prefixlint.live.summary", fromlist=["summary_text"]).summary_text(run)
    assert "FINDING: 512 tokens:" in res_text


def test_prompts_are_sized_to_max_model_len_and_the_run_says_so() -> None:
    cfg = FakeServerConfig(advertised_tokens=300, base_s=0.001, per_token_s=0.0)
    with fake_server(cfg) as (url, state):
        res = runner.invoke(
            app,
            [
                "ttft",
                "--base-url",
                url,
                "--prompt-tokens",
                "256,512",
                "--samples",
                "2",
                "--warmup",
                "0",
                "--output-format",
                "json",
            ],
        )
        assert res.exit_code == 0, res.output
        run = BenchRun.model_validate_json(res.stdout)
        assert [r.prompt_tokens for r in run.lengths] == [256, 298]
        assert run.settings["sizing"] == {"overhead": 1, "per_word": 1.0, "exact": True}
        assert run.settings["max_model_len"] == 300 and run.settings["prompt_tokens_sent"] == [256, 298]
        assert any(
            w.startswith("512-token prompts sent as 298 tokens: the server accepts 300 tokens (max_model_len")
            for w in run.warnings
        )
        assert all(s.error is None for r in run.lengths for s in r.samples)
        text = runner.invoke(app, ["ttft", "--base-url", url, "--prompt-tokens", "512", "--samples", "2"])
        assert text.exit_code == 0 and "warning: 512-token prompts sent as 298 tokens" in text.output
    assert max(len(b.get("messages", [{}])[0].get("content", "").split()) for b in state.bodies) == 298


def test_model_defaults_to_the_listed_one() -> None:
    with fake_server(FakeServerConfig(base_s=0.001, per_token_s=0.0)) as (url, state):
        res = runner.invoke(app, ["ttft", "--base-url", url, *SMALL])
    assert res.exit_code == 0, res.output
    assert {b["model"] for b in state.bodies} == {"fake-model"}
