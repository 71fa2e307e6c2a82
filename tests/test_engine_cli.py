"""``prefixlint engine serve``: option parsing, startup refusal, a real subprocess server, and the
promise that importing the CLI module does not import torch."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")
httpx = pytest.importorskip("httpx")

from typer.testing import CliRunner  # noqa: E402

from prefixlint.commands.engine import app, parse_api_keys  # noqa: E402
from prefixlint.engine import PRESETS  # noqa: E402

pytestmark = pytest.mark.engine
ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_cli_does_not_import_torch() -> None:
    code = "import sys, prefixlint.commands.engine, prefixlint.engine; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_api_key_parsing() -> None:
    assert parse_api_keys(["k1=alice", "k2=bob"]) == {"k1": "alice", "k2": "bob"}
    assert parse_api_keys(None) is None
    result = CliRunner().invoke(app, ["serve", "--api-key", "no-tenant"])
    assert result.exit_code == 2 and "KEY=TENANT" in result.output


def test_serve_refuses_a_pool_smaller_than_max_model_len() -> None:
    result = CliRunner().invoke(
        app,
        ["serve", "--num-blocks", "4", "--block-size", "16", "--max-model-len", "4096", "--device", "cpu"],
    )
    assert result.exit_code == 2
    assert "holds 64 tokens" in result.output and "lower max_model_len" in result.output


@pytest.mark.skipif(torch.version.cuda is not None, reason="needs a CPU-only torch build")
def test_device_cuda_on_cpu_only_torch_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["serve", "--device", "cuda", "--num-blocks", "300"])
    assert result.exit_code == 2, result.output
    assert "--device cuda: this torch build" in result.output and "no CUDA support" in result.output
    assert "internal error" not in result.output and isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(("device", "message"), [("meta", "not supported"), ("tpu", "unknown device")])
def test_unknown_devices_are_usage_errors(device: str, message: str) -> None:
    result = CliRunner().invoke(app, ["serve", "--device", device])
    assert result.exit_code == 2 and message in result.output


def startup_output(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[str, object]:
    """Run ``serve`` up to the point where uvicorn would start; returns its output and the app."""
    import uvicorn

    served: list = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    base = ["serve", "--device", "cpu", "--num-blocks", "300", *args]
    result = CliRunner().invoke(app, base)
    assert result.exit_code == 0, result.output
    served[0].state.engine.shutdown()
    return result.output, served[0]


def test_startup_line_says_how_caches_are_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    out, served = startup_output(monkeypatch)
    assert "cache_namespaces=per-key" in out and "one per API key" in out and "warning" not in out
    assert "max_num_batched_tokens=2048" in out and "attention=sdpa, prefix/suffix split" in out
    out, served = startup_output(monkeypatch, "--shared-cache", "--max-num-batched-tokens", "512")
    assert "cache_namespaces=shared" in out and "shared by every client (--shared-cache" in out
    assert "warning: --shared-cache" in out
    assert served.state.tenancy.shared_cache and served.state.engine.config.max_num_batched_tokens == 512
    out, _ = startup_output(monkeypatch, "--api-key", "k1=alice", "--enable-fault-injection")
    assert "cache_namespaces=per-tenant" in out and "tenants=['alice']" in out
    assert "warning: --enable-fault-injection" in out


def test_presets_have_the_documented_sizes() -> None:
    assert PRESETS["tiny"].num_params() < 5e6
    assert 20e6 < PRESETS["cpu-bench"].num_params() < 35e6 and PRESETS["cpu-bench"].vocab_size > 100_000
    assert 0.35e9 < PRESETS["small"].num_params() < 0.65e9
    assert 0.9e9 < PRESETS["1b"].num_params() < 1.4e9


def test_serve_runs_a_real_server() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [
        sys.executable,
        "-c",
        "from prefixlint.commands.engine import app; app()",
        "serve",
        "--preset",
        "tiny",
        "--port",
        str(port),
        "--num-blocks",
        "64",
        "--max-model-len",
        "512",
        "--device",
        "cpu",
        "--api-key",
        "k1=alice",
        "--output-format",
        "json",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        summary = json.loads(proc.stdout.readline())
        assert summary["num_blocks"] == 64 and summary["tenants"] == ["alice"]
        assert summary["cache_namespaces"] == "per-tenant" and summary["fault_injection"] is False
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.1)
        r = httpx.post(
            f"http://127.0.0.1:{port}/v1/completions",
            headers={"Authorization": "Bearer k1"},
            json={"model": "tiny", "prompt": "hello", "max_tokens": 2},
            timeout=30,
        )
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 2
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).status_code == 401
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
        assert health["kv_pool_tokens"] == 64 * 16 and health["block_size"] == 16
        fault = httpx.post(
            f"http://127.0.0.1:{port}/debug/fault", headers={"Authorization": "Bearer k1"}, json={}, timeout=5
        )
        assert fault.status_code == 403  # not started with --enable-fault-injection
    finally:
        proc.terminate()
        proc.wait(timeout=20)
