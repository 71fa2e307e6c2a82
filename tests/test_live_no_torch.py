"""The live-server tools work without torch (the ``[live]`` extra: httpx, scipy, prometheus-client).

Each command runs in a child process in which importing torch fails (``tests/without_torch.py``), as
it would where torch was never installed, against a fake server in this process over loopback.
(``.ci/run`` also runs the whole suite in a virtual environment without torch.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from prefixlint.live.fake_server import FakeServerConfig, fake_server

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import sys
import tests.without_torch  # importing torch now fails, as where it was never installed

sys.argv = ["prefixlint", *ARGS]
from prefixlint.cli import main
try:
    main()
finally:
    sys.stderr.write("\\ntorch loaded: %s\\n" % ("torch" in sys.modules))
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    code = CHILD.replace("ARGS", json.dumps(list(args)))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=240, check=False
    )


def test_torch_is_really_blocked_in_the_child() -> None:
    proc = _run("engine", "serve", "--port", "1")
    assert proc.returncode == 2 and "pip install 'prefixlint[engine]'" in proc.stderr
    assert "torch loaded: False" in proc.stderr


def test_bench_canary_and_probe_run_without_torch() -> None:
    cfg = FakeServerConfig(
        isolation="per-key", base_s=0.001, per_token_s=0.0004, capacity_tokens=4096, advertised_tokens=1024
    )
    with fake_server(cfg) as (url, state):
        bench = _run(
            "bench", "ttft", "--base-url", url, "--prompt-tokens", "256", "--samples", "10", "--warmup", "1"
        )
        canary = _run("canary", "--base-url", url, "--rounds", "1")
        probe = _run(
            "probe", "--base-url", url, "--prompt-tokens", "128", "--min-samples", "6", "--max-samples", "12",
            "--rate", "0", "--yes",
        )  # fmt: skip
    for proc in (bench, canary):
        assert proc.returncode == 0, proc.stdout + proc.stderr
    for proc in (bench, canary, probe):
        assert "torch loaded: False" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "speedup" in bench.stdout
    assert "PASS: no cross-tenant leak" in canary.stdout
    # The probe is a timing audit: on this loaded machine its across-tenant level may stay undecided
    # (exit 1, never a pass), but it must see caching within a key and never claim sharing.
    per_key = next(line for line in probe.stdout.splitlines() if line.startswith("per-key"))
    assert "detected" in per_key, probe.stdout
    if probe.returncode == 0:
        assert "ISOLATED" in probe.stdout
    else:
        assert probe.returncode == 1 and "INCONCLUSIVE" in probe.stdout, probe.stdout + probe.stderr
    assert "SHARED" not in probe.stdout and "LEAK" not in probe.stdout
    assert state.requests > 100
