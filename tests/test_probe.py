"""``prefixlint probe`` over real HTTP against the fake server, plus its statistics and pacing.

The fake server sleeps in proportion to uncached tokens (128-token miss about 53 ms, hit about 6 ms),
so the hit and miss arms hardly ever overlap even on a loaded machine; the engine versions, with real
prefill timing, are in ``test_canary_engine_gate.py``.
"""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from prefixlint.cli import app
from prefixlint.live.fake_server import FakeServerConfig, fake_server
from prefixlint.live.pacing import Budget
from prefixlint.live.probe_report import ProbeRun
from prefixlint.live.sequential import decide, look_points, smallest_p

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

runner = CliRunner()
TIMED = dict(base_s=0.001, per_token_s=0.0004)
FAST = ["--prompt-tokens", "128", "--min-samples", "6", "--max-samples", "12", "--rate", "0", "--warmup", "1"]


def _probe(cfg: FakeServerConfig, *args: str) -> tuple[int, ProbeRun, object]:
    with fake_server(cfg) as (url, state):
        res = runner.invoke(
            app, ["probe", "--base-url", url, *FAST, "--yes", "--output-format", "json", *args]
        )
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, ProbeRun.model_validate_json(res.stdout), state


def _levels(run: ProbeRun) -> dict[str, str]:
    return {lv.level: lv.decision for lv in run.levels}


def test_shared_cache_is_detected_at_the_global_level() -> None:
    code, run, _ = _probe(FakeServerConfig(isolation="shared", **TIMED))
    assert code == 1 and run.verdict == "shared" and run.sharing_level == "global"
    assert _levels(run) == {"per-key": "detected", "global": "detected"}
    glob = run.levels[1]
    assert glob.p_value is not None and glob.p_value < glob.alpha_look == pytest.approx(0.01 / 2)
    assert glob.n_hit == glob.n_miss and (glob.n_hit == 12 or glob.stopped_early)  # 6 unless a hiccup
    assert glob.hit_p50_s < glob.miss_p50_s
    assert glob.hit_cached_tokens_mean and glob.hit_cached_tokens_mean > 64


def test_per_key_isolation_is_shown_and_caching_still_seen_within_a_key() -> None:
    code, run, state = _probe(FakeServerConfig(isolation="per-key", **TIMED))
    assert code == 0 and run.verdict == "isolated" and run.sharing_level == "per-key"
    assert _levels(run) == {"per-key": "detected", "global": "ruled-out"}
    glob = run.levels[1]
    assert glob.p_rule_out is not None and glob.p_rule_out < glob.alpha_look
    assert glob.hit_cached_tokens_mean == 0
    # Every request was counted; the plan was an upper bound.
    assert run.requests_sent == state.requests <= run.plan["requests"]


def test_salts_separate_tenants_on_a_server_that_otherwise_shares() -> None:
    code, run, state = _probe(
        FakeServerConfig(isolation="shared", **TIMED), "--cache-salt", "s1", "--cache-salt", "s2"
    )
    assert code == 0 and run.verdict == "isolated"
    assert {b.get("cache_salt") for b in state.bodies} == {"s1", "s2"}


def test_one_key_is_an_audit_and_orgs_name_the_level() -> None:
    code, run, _ = _probe(FakeServerConfig(isolation="shared", **TIMED), "--api-key", "sk-1")
    assert code == 0 and run.verdict == "per-key-only" and _levels(run) == {"per-key": "detected"}
    code, run, _ = _probe(
        FakeServerConfig(isolation="shared", **TIMED),
        *("--api-key", "sk-1", "--org", "acme", "--api-key", "sk-2", "--org", "acme"),
    )
    assert code == 1 and run.sharing_level == "organisation"
    assert [lv.level for lv in run.levels] == ["per-key", "organisation"]


def test_nothing_is_sent_without_consent() -> None:
    with fake_server(FakeServerConfig(**TIMED)) as (url, state):
        res = runner.invoke(app, ["probe", "--base-url", url, *FAST])
        assert res.exit_code == 2 and "pass --yes" in res.output
        assert "probe will send at most 100 requests" in res.output
        assert state.requests == 0


def test_interactive_confirmation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("prefixlint.commands.probe._interactive", lambda: True)
    with fake_server(FakeServerConfig(isolation="per-key", **TIMED)) as (url, state):
        res = runner.invoke(app, ["probe", "--base-url", url, *FAST], input="n\n")
        assert res.exit_code == 2 and "nothing sent" in res.output and state.requests == 0
        res = runner.invoke(app, ["probe", "--base-url", url, *FAST], input="y\n")
        assert res.exit_code == 0 and "ISOLATED" in res.output and state.requests > 0


def test_budget_stops_the_run_and_is_not_a_pass() -> None:
    code, run, state = _probe(FakeServerConfig(isolation="per-key", **TIMED), "--max-requests", "20")
    assert code == 1 and run.verdict == "inconclusive"
    assert run.requests_sent == state.requests <= 20
    assert run.budget_exhausted == "--max-requests 20 reached"
    code, run, _ = _probe(FakeServerConfig(isolation="per-key", **TIMED), "--max-prompt-tokens", "3000")
    assert (
        code == 1 and run.prompt_tokens_sent <= 3000 and "--max-prompt-tokens" in (run.budget_exhausted or "")
    )


def test_failed_requests_are_an_error() -> None:
    code, run, _ = _probe(
        FakeServerConfig(isolation="per-key", api_key="sk-right", **TIMED), "--api-key", "sk-wrong"
    )
    assert code == 1 and run.verdict == "error" and run.failed_requests > 0


def test_unreachable_server_exits_2() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = runner.invoke(app, ["probe", "--base-url", f"http://127.0.0.1:{port}/v1", "--yes"])
    assert res.exit_code == 2 and "cannot reach" in res.output


def test_text_report() -> None:
    with fake_server(FakeServerConfig(isolation="shared", **TIMED)) as (url, _):
        res = runner.invoke(app, ["probe", "--base-url", url, *FAST, "--yes"])
    assert res.exit_code == 1
    assert "SHARED: another tenant's cache is visible in timing" in res.output
    assert "caching detectable at: global" in res.output
    assert "each look (up to 2, at 6, 12 samples per arm) tested at 0.005" in res.output


# -- statistics ---------------------------------------------------------------------------------


def test_look_points_and_smallest_p() -> None:
    assert look_points(8, 32) == [8, 16, 32]
    assert look_points(6, 12) == [6, 12]
    assert look_points(10, 10) == [10]
    assert look_points(8, 20) == [8, 16, 20]
    with pytest.raises(ValueError):
        look_points(1, 4)
    assert smallest_p(5) == pytest.approx(1 / 252)


def test_decide_detects_rules_out_and_waits() -> None:
    fast = [0.010 + i * 1e-4 for i in range(8)]
    slow = [0.050 + i * 1e-4 for i in range(8)]
    assert decide(fast, slow, 0.005).decision == "detected"
    # Same distribution as the misses, clearly slower than same-tenant hits: ruled out.
    look = decide(slow, [s + 5e-5 for s in slow], 0.005, same_tenant_hits=fast)
    assert look.decision == "ruled-out" and look.p_rule_out is not None and look.p_rule_out < 0.005
    # Without a same-tenant reference nothing can be ruled out.
    assert decide(slow, [s + 5e-5 for s in slow], 0.005).decision is None
    # Too few samples for any p below the per-look alpha: undecided, never detected.
    assert decide(fast[:3], slow[:3], 0.005).decision is None


def test_budget_paces_and_caps_with_a_fake_clock() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    budget = Budget(max_requests=5, max_time_s=100.0, rate=2.0, clock=lambda: now[0], sleep=sleep)
    budget.start()
    for _ in range(4):
        assert budget.allows(1, 10)
        budget.pace(10)
    assert now[0] == pytest.approx(1.5) and slept == [0.5, 0.5, 0.5]
    assert budget.requests == 4 and budget.prompt_tokens == 40
    assert budget.allows(1, 10) and not budget.allows(2, 10)
    assert budget.exhausted == "--max-requests 5 reached"
    late = Budget(max_time_s=2.0, clock=lambda: now[0])
    late.start()
    now[0] += 2.0
    assert not late.allows(1, 1) and late.exhausted == "--max-time 2 s reached"
