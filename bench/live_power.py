"""Power and false-alarm rates of ``prefixlint canary`` and ``prefixlint probe`` on the CPU engine.

Repeats each run ``--runs`` times against in-process engine servers (tiny preset, CPU, loopback),
the same configurations that ``tests/test_canary_engine_gate.py`` uses, and counts outcomes:

* canary on a clean engine (false alarms), with a fault and the integrity checks off (detections),
  with the fault and the checks on (fail-closed reports);
* probe on an engine with one shared cache (detections at the global level) and on an engine
  with per-tenant salts (isolation shown, false detections across tenants, detection within one
  tenant), for each prompt length and sample plan given.

    python bench/live_power.py --runs 20 --record

``--record`` appends the table to ``bench/RESULTS.md`` under ``## Live tools: canary and probe power``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from prefixlint.engine import EngineConfig, LLMEngine  # noqa: E402
from prefixlint.engine.server import create_app  # noqa: E402
from prefixlint.live.canary import Canary, CanaryConfig  # noqa: E402
from prefixlint.live.probe import Probe, ProbeConfig  # noqa: E402
from prefixlint.live.serving import serve_in_thread  # noqa: E402
from prefixlint.live.tenants import Tenant, make_tenants  # noqa: E402

# Kept equal to tests/test_canary_engine_gate.py.
CANARY_ENGINE = dict(
    preset="tiny", device="cpu", max_model_len=512, num_blocks=64, max_num_batched_tokens=2048
)
PROBE_ENGINE = dict(
    preset="tiny", device="cpu", max_model_len=2048, num_blocks=1024, max_num_batched_tokens=2048,
    allow_client_salt=True,
)  # fmt: skip


@contextmanager
def served(engine_kw: dict, **app_kw: object) -> Iterator[tuple[str, LLMEngine]]:
    """An engine behind its HTTP server on loopback; yields the API base URL."""
    eng = LLMEngine(EngineConfig(**engine_kw))
    try:
        with serve_in_thread(create_app(eng, **app_kw)) as root:  # type: ignore[arg-type]
            yield root + "/v1", eng
    finally:
        eng.shutdown()


def wilson(k: int, n: int) -> str:
    """``k/n`` with its 95% Wilson interval."""
    if n == 0:
        return "-"
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{k}/{n} ({max(0.0, centre - half):.2f}-{min(1.0, centre + half):.2f})"


def repeat(runs: int, once: Callable[[], dict]) -> list[dict]:
    out = []
    for i in range(runs):
        start = time.perf_counter()
        row = once()
        row["wall_s"] = time.perf_counter() - start
        out.append(row)
        print(f"  run {i + 1}/{runs}: {row}", file=sys.stderr, flush=True)
    return out


def canary_rows(runs: int) -> list[str]:
    rows = []
    cases = [
        ("clean engine (per-key default)", {}, None, "pass"),
        ("fault, integrity checks off", {"integrity_checks": False}, "fault", "leak"),
        ("fault, integrity checks on", {}, "fault", "failed-closed"),
    ]
    for label, extra, fault, expected in cases:
        print(f"canary: {label}", file=sys.stderr)
        with served({**CANARY_ENGINE, **extra}, fault_injection=True) as (url, _):
            if fault:
                httpx.post(
                    url.removesuffix("/v1") + "/debug/fault", json={"num_blocks": 4}
                ).raise_for_status()

            def once() -> dict:
                run = Canary(url, make_tenants(), CanaryConfig()).run()
                leaks = [c.name for c in run.checks if c.status == "leak"]
                return {"verdict": run.verdict, "leaks": leaks, "requests": run.request_count}

            results = repeat(runs, once)
        hits = sum(1 for r in results if r["verdict"] == expected)
        by = sorted({n for r in results for n in r["leaks"]})
        wall = sorted(r["wall_s"] for r in results)[len(results) // 2]
        rows.append(
            f"| canary | {label} | {expected} | {wilson(hits, runs)} | {', '.join(by) or '-'} | "
            f"{results[0]['requests']} | {wall:.1f} |"
        )
    return rows


def probe_rows(runs: int, lengths: list[int], plans: list[tuple[int, int]]) -> list[str]:
    rows = []
    salts = [Tenant("salt-1", None, "s1"), Tenant("salt-2", None, "s2")]
    for length in lengths:
        for lo, hi in plans:
            cfg = ProbeConfig(prompt_tokens=length, min_samples=lo, max_samples=hi, rate=None, warmup=2)
            for label, app_kw, tenants, expected in (
                ("one shared cache (--shared-cache)", {"shared_cache": True}, None, "shared"),
                ("per-tenant salts", {}, salts, "isolated"),
            ):
                print(f"probe: {length} tokens, {lo}..{hi} samples, {label}", file=sys.stderr)
                with served(PROBE_ENGINE, **app_kw) as (url, _):

                    def once(tenants=tenants, cfg=cfg) -> dict:  # type: ignore[no-untyped-def]
                        run = Probe(url, tenants or make_tenants(), cfg).run()
                        levels = {lv.level: lv.decision for lv in run.levels}
                        return {"verdict": run.verdict, "levels": levels, "requests": run.requests_sent}

                    results = repeat(runs, once)
                hits = sum(1 for r in results if r["verdict"] == expected)
                per_key = sum(1 for r in results if r["levels"].get("per-key") == "detected")
                cross = sum(1 for r in results if r["levels"].get("global") == "detected")
                mean_req = sum(r["requests"] for r in results) / len(results)
                wall = sorted(r["wall_s"] for r in results)[len(results) // 2]
                rows.append(
                    f"| probe {length} tok, n {lo}..{hi} | {label} | {expected} | {wilson(hits, runs)} | "
                    f"per-key detected {per_key}/{runs}, global detected {cross}/{runs} | {mean_req:.0f} | "
                    f"{wall:.1f} |"
                )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--probe-lengths", default="1024")
    ap.add_argument("--probe-plans", default="6:12,8:16", help="min:max samples per arm, comma-separated")
    ap.add_argument("--skip-canary", action="store_true")
    ap.add_argument("--skip-probe", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: all cores)")
    ap.add_argument("--record", action="store_true", help="append the table to bench/RESULTS.md")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]
    rows = []
    if not args.skip_canary:
        rows += canary_rows(args.runs)
    if not args.skip_probe:
        lengths = [int(v) for v in args.probe_lengths.split(",")]
        plans = [tuple(int(x) for x in p.split(":")) for p in args.probe_plans.split(",")]
        rows += probe_rows(args.runs, lengths, plans)  # type: ignore[arg-type]
    load_after = os.getloadavg()[0]
    import results_md

    head = (
        f"### {results_md.stamp()}: {results_md.machine()}, load average {load_before:.1f} before, "
        f"{load_after:.1f} after\n\n"
        "| tool | server | expected | runs with the expected verdict (95% CI) | detail | requests per run "
        "| median s per run |\n|---|---|---|---|---|---|---|\n"
    )
    table = head + "\n".join(rows) + "\n"
    print(table)
    if args.record:
        results_md.record("Live tools: canary and probe power (CPU engine)", table)


if __name__ == "__main__":
    main()
