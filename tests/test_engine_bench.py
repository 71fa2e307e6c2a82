"""``bench/engine_ttft.py`` measures the engine as it is served: ``prefixlint engine serve`` with its
defaults in a subprocess, timed over HTTP, with the floor's model checked to be the served one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")
pytest.importorskip("httpx")

pytestmark = [pytest.mark.engine, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]


def test_engine_ttft_smoke_measures_the_served_engine(tmp_path: Path) -> None:
    out = tmp_path / "ttft.json"
    cmd = [
        sys.executable,
        str(ROOT / "bench" / "engine_ttft.py"),
        "--smoke",
        "--threads",
        "1",
        "--json",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    # Served exactly as `engine serve` runs by default: chunked prefill, checks on, per-key caches.
    assert res["command"].startswith("engine serve --preset tiny --device cpu")
    server = res["server"]
    assert server["max_num_batched_tokens"] == 2048 and server["integrity_checks"] is True
    assert server["cache_namespaces"] == "per-key" and server["threads"] == 1
    assert server["attention"] == "sdpa, prefix/suffix split"
    assert res["logprob_gap"] < 1e-3  # the floor's model is the served model
    assert set(res["lengths"]) == {"128", "256"}
    for n, row in res["lengths"].items():
        assert row["dense_s"] > 0 and row["miss_s"] > 0 and row["hit_s"] > 0
        assert int(n) - 32 - 16 < row["cached_tokens"] < int(n)  # the hit really hit
        assert 0 < row["check_share_hit"] < 1
        if not res["cpu_clock"]:  # a kernel without schedstat gives wall time only
            assert "cpu_s" not in row
        elif "cpu_s" in row:  # an arm whose every CPU delta was lost to a thread's exit has none
            assert row["cpu_s"]["miss"] > 0 and row["cpu_s"]["floor"] > 0 and row["cpu_s"]["hit"] > 0
    if res["cpu_clock"]:
        assert any("cpu_s" in row for row in res["lengths"].values())
    assert "| prompt | dense forward |" in proc.stdout and "Goals:" in proc.stdout
    assert not (ROOT / "bench" / "RESULTS.md").read_text().count(str(out))  # --smoke records nothing
