"""The per-partition replay on Dask (``dask.distributed.LocalCluster``) gives the local answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefixlint.audit.records import FieldMap
from prefixlint.audit.replay import ReplayOptions
from prefixlint.audit.run import run_audit

distributed = pytest.importorskip("dask.distributed")


def _write(tmp: Path) -> list[str]:
    body = " apple" * 1300
    paths = []
    for shard in range(3):  # three files, tenants spread across them: a partition spans files
        rows = []
        for i in range(8):
            t = shard * 8 + i
            stamp = f"at 2026-09-20T10:{t:02d}:00Z"
            system = f"{stamp} {body}" if t % 4 == 0 else f"{body} {stamp}"
            rows.append(
                {
                    "timestamp": 1_790_000_000 + t * 20,
                    "tenant": f"t{t % 3}",
                    "request": {
                        "model": "gpt-4o",
                        "messages": [
                            {"role": "system", "content": system},
                            {"role": "user", "content": f"q{t}"},
                        ],
                    },
                }
            )
        path = tmp / f"shard{shard}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows) + ("{broken\n" if shard == 1 else ""))
        paths.append(str(path))
    return paths


def test_dask_local_cluster_matches_the_local_replay(tmp_path: Path) -> None:
    from prefixlint.audit.distributed import run_on_dask

    paths = _write(tmp_path)
    local = run_audit(paths, FieldMap(), ReplayOptions())
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        with distributed.Client(cluster) as client:
            remote = run_on_dask(paths, FieldMap(), ReplayOptions(), client)
    finally:
        cluster.close()
    assert remote.engine == "dask" and remote.workers == 2
    assert (remote.input.read, remote.input.used, remote.input.malformed) == (25, 24, 1)
    assert remote.input.problems[0].line == 9 and remote.input.problems[0].source.endswith("shard1.jsonl")
    a, b = local.summary.models[("openai", "gpt-4o")], remote.summary.models[("openai", "gpt-4o")]
    assert (a.requests, a.prompt, a.simulated, a.fixed) == (b.requests, b.prompt, b.simulated, b.fixed)
    assert a.simulated > 0 and a.fixed > a.simulated
    assert {k: v.tokens_lost for k, v in local.summary.causes.items()} == {
        k: v.tokens_lost for k, v in remote.summary.causes.items()
    }
