"""``prefixlint canary`` end to end over real HTTP, against the fake server told to misbehave.

The fake server (``prefixlint.live.fake_server``) keeps a real prefix cache and can share it across
keys, answer over-limit prompts, hold a smaller pool than it advertises, refuse logprobs, or carry a
fault that reads another tenant's last request (``drift``: the output changes; ``echo``: it repeats
the words). Each check must see exactly its own failure. The engine versions are in
``test_canary_engine_gate.py``.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prefixlint.cli import app
from prefixlint.live.canary_report import CanaryRun
from prefixlint.live.fake_server import FakeServerConfig, fake_server

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

runner = CliRunner()
QUICK = dict(base_s=0.0005, per_token_s=0.0, capacity_tokens=4096, advertised_tokens=1024)


def _canary(cfg: FakeServerConfig, *args: str) -> tuple[int, CanaryRun, object]:
    with fake_server(cfg) as (url, state):
        res = runner.invoke(app, ["canary", "--base-url", url, "--output-format", "json", *args])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, CanaryRun.model_validate_json(res.output), state


def _status(run: CanaryRun) -> dict[str, str]:
    return {c.name: c.status for c in run.checks}


def test_clean_server_passes_with_no_flag_but_the_url() -> None:
    code, run, state = _canary(FakeServerConfig(isolation="per-key", **QUICK))
    assert code == 0 and run.verdict == "pass"
    assert _status(run) == {
        "capacity": "pass",
        "determinism": "pass",
        "boundary": "pass",
        "canary-strings": "pass",
        "cross-tenant-cache": "pass",
    }
    # Two random bearer tokens were the tenants; neither appears in the report.
    assert [t["kind"] for t in run.tenants] == ["key", "key"] and "sk-" not in run.to_json()
    assert run.model == "fake-model" and run.server["max_model_len"] == 1024
    assert run.server["kv_pool_tokens"] == 4096 and run.server["pool_source"] == "/health"
    boundary = next(c for c in run.checks if c.name == "boundary")
    statuses = [(r.purpose, r.status, r.prompt_tokens) for r in boundary.requests]
    assert statuses[:3] == [("context -1", 200, 1023), ("context +0", 200, 1024), ("context +1", 400, None)]
    assert all(s == 400 for _, s, _ in statuses[3:])  # the pool (4,096) lies beyond the context
    assert run.request_count == state.requests  # every request sent is in the report


def test_shared_cache_is_a_cross_tenant_leak() -> None:
    code, run, _ = _canary(FakeServerConfig(isolation="shared", **QUICK))
    assert code == 1 and run.verdict == "leak"
    check = next(c for c in run.checks if c.name == "cross-tenant-cache")
    assert check.status == "leak" and "cached tokens on A's" in check.summary
    assert _status(run)["determinism"] == "pass"  # only the cache check sees this one


def test_fault_with_checks_off_changes_the_output() -> None:
    cfg = FakeServerConfig(isolation="per-key", fault=True, integrity_checks=False, **QUICK)
    code, run, _ = _canary(cfg)
    assert code == 1 and run.verdict == "leak"
    det = next(c for c in run.checks if c.name == "determinism")
    assert det.status == "leak" and "rounds 1, 2, 3" in det.summary
    # Random-looking text: no marker to find, which is why determinism exists.
    assert _status(run)["canary-strings"] == "pass"


def test_fault_that_echoes_is_caught_by_canary_strings(tmp_path: Path) -> None:
    cfg = FakeServerConfig(
        isolation="per-key", fault=True, integrity_checks=False, leak_style="echo", **QUICK
    )
    with fake_server(cfg) as (url, _):
        res = runner.invoke(app, ["canary", "--base-url", url, "--out", str(tmp_path / "c.json")])
    assert res.exit_code == 1
    assert "LEAK: another tenant's data reached a response" in res.output
    run = CanaryRun.model_validate_json((tmp_path / "c.json").read_text())
    strings = next(c for c in run.checks if c.name == "canary-strings")
    assert strings.status == "leak"
    assert any("A's canary 'canary" in d for d in strings.details)
    assert any("runs of 8 words copied" in d for d in strings.details)


def test_fault_with_checks_on_fails_closed_not_leaks() -> None:
    code, run, state = _canary(FakeServerConfig(isolation="per-key", fault=True, **QUICK))
    assert code == 1 and run.verdict == "failed-closed"
    det = next(c for c in run.checks if c.name == "determinism")
    assert det.status == "failed-closed" and "HTTP 500: KV integrity violation" in det.summary
    assert "leak" not in _status(run).values()
    assert run.failed_requests == state.failed_closed > 0


def test_fault_with_checks_on_in_text() -> None:
    with fake_server(FakeServerConfig(isolation="per-key", fault=True, **QUICK)) as (url, _):
        res = runner.invoke(app, ["canary", "--base-url", url])
    assert res.exit_code == 1
    assert "FAILED CLOSED" in res.output and "x HTTP 500" in res.output
    assert "LEAK" not in res.output


def test_over_limit_request_answered_200_fails() -> None:
    code, run, _ = _canary(FakeServerConfig(isolation="per-key", enforce_limits=False, **QUICK))
    assert code == 1 and run.verdict == "fail"
    check = next(c for c in run.checks if c.name == "boundary")
    assert check.status == "fail" and check.summary.startswith("context +1 (1,025 tokens): over the limit")


def test_pool_smaller_than_the_advertised_context_fails() -> None:
    cfg = FakeServerConfig(
        isolation="per-key", base_s=0.0005, per_token_s=0.0, capacity_tokens=512, advertised_tokens=1024
    )
    code, run, _ = _canary(cfg)
    assert code == 1 and run.verdict == "fail"
    cap = next(c for c in run.checks if c.name == "capacity")
    assert cap.status == "fail"
    assert "the KV pool holds 512 tokens, fewer than the advertised 1,024" in cap.details
    # The boundary probes go to the pool's size, and a request inside the advertised context but
    # beyond the pool is refused (this server enforces the pool).
    boundary = next(c for c in run.checks if c.name == "boundary")
    assert [r.purpose for r in boundary.requests][3:] == ["KV pool -1", "KV pool +0", "KV pool +1"]


def test_pool_taken_from_the_option_and_the_capacity_claim() -> None:
    cfg = FakeServerConfig(isolation="per-key", expose_pool=False, **QUICK)
    code, run, _ = _canary(cfg, "--kv-pool-tokens", "900")
    assert code == 1
    cap = next(c for c in run.checks if c.name == "capacity")
    assert cap.status == "fail" and "the KV pool holds 900 tokens" in cap.details[0]
    code, run, _ = _canary(cfg, "--skip", "boundary")
    cap = next(c for c in run.checks if c.name == "capacity")
    assert code == 0 and cap.status == "pass" and "exposes no KV pool size" in cap.details[0]
    assert _status(run)["boundary"] == "skipped"


def test_logprobs_refused_falls_back_to_text() -> None:
    code, run, _ = _canary(FakeServerConfig(isolation="per-key", logprobs=False, **QUICK))
    assert code == 0, run.to_json(requests=False)
    det = next(c for c in run.checks if c.name == "determinism")
    assert "the server refused logprobs; outputs are compared as text" in det.details
    drift = FakeServerConfig(isolation="per-key", logprobs=False, fault=True, integrity_checks=False, **QUICK)
    code, run, _ = _canary(drift)
    assert code == 1 and _status(run)["determinism"] == "leak"


def test_cache_salts_as_tenants() -> None:
    code, run, state = _canary(
        FakeServerConfig(isolation="shared", **QUICK), "--cache-salt", "a", "--cache-salt", "b"
    )
    assert code == 0, run.to_json(requests=False)
    assert [t["kind"] for t in run.tenants] == ["salt", "salt"]
    assert {b.get("cache_salt") for b in state.bodies} == {"a", "b"}


def test_no_cached_token_field_is_inconclusive_not_a_pass() -> None:
    code, run, _ = _canary(
        FakeServerConfig(isolation="per-key", cached_field="none", **QUICK), "--skip", "capacity"
    )
    assert code == 1 and run.verdict == "inconclusive"
    check = next(c for c in run.checks if c.name == "cross-tenant-cache")
    assert check.status == "inconclusive" and "prefixlint probe" in check.summary


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_and_usage_errors_exit_2() -> None:
    res = runner.invoke(app, ["canary", "--base-url", f"http://127.0.0.1:{_dead_port()}/v1"])
    assert res.exit_code == 2 and "cannot reach" in res.output
    res = runner.invoke(app, ["canary", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "only-one"])
    assert res.exit_code == 2 and "second --api-key" in res.output
    res = runner.invoke(app, ["canary", "--base-url", "http://127.0.0.1:9/v1", "--skip", "nope"])
    assert res.exit_code == 2 and "unknown check" in res.output


def _half_dead_app(status: int):  # type: ignore[no-untyped-def]
    """Lists a model, then fails every completion with ``status`` (0: drops the connection)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    async def models(request):  # type: ignore[no-untyped-def]
        return JSONResponse({"data": [{"id": "m", "max_model_len": 1024}]})

    async def broken():  # type: ignore[no-untyped-def]
        raise RuntimeError("the connection drops after the headers")
        yield b""  # pragma: no cover

    async def fail(request):  # type: ignore[no-untyped-def]
        if status == 0:
            return StreamingResponse(broken())
        return JSONResponse({"error": {"message": "overloaded"}}, status_code=status)

    return Starlette(
        routes=[
            Route("/v1/models", models),
            Route("/v1/chat/completions", fail, methods=["POST"]),
            Route("/v1/completions", fail, methods=["POST"]),
        ]
    )


@pytest.mark.parametrize("status", [503, 0])
def test_failing_requests_are_never_a_pass(status: int) -> None:
    from prefixlint.live.serving import serve_in_thread

    with serve_in_thread(_half_dead_app(status)) as root:
        res = runner.invoke(app, ["canary", "--base-url", root + "/v1", "--output-format", "json"])
    assert res.exit_code == 1, res.output
    run = CanaryRun.model_validate_json(res.output)
    assert run.verdict == ("failed-closed" if status else "error")
    assert run.failed_requests == len(run.setup) == 1
    assert [c.name for c in run.checks] == ["setup"]


def test_a_cached_path_that_moves_logprobs_is_pointed_out() -> None:
    # A server whose answers over a cached prefix differ by 0.01 nats (as bfloat16 GPU servers can):
    # the rounds compare cached with cached, so it passes, and the report says what to set.
    code, run, _ = _canary(FakeServerConfig(isolation="per-key", path_noise=0.01, **QUICK))
    assert code == 0, run.to_json(requests=False)
    det = next(c for c in run.checks if c.name == "determinism")
    assert "largest logprob difference 0.01 " in det.details[0]
    assert any("first (uncached) and second (cached) baseline answers differ" in d for d in det.details)
