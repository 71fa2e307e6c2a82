"""SDK overhead: wrapped vs unwrapped OpenAI clients against the same local server, in one run.

For conversations growing turn by turn to about 1k, 10k and 50k tokens, every turn is sent once
through a plain client and once through a wrapped one (verification on, tenant set), in alternating
order. Reported per size: end-to-end p50/p99 of both, the paired difference (added latency), and the
time spent inside the wrapper itself (prepare + accounting), which is what the 0.5 ms goal is about.

    .venv/bin/python bench/sdk_overhead.py [--conversations 5] [--turns 20]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import openai  # noqa: E402

import prefixlint.sdk as sdk  # noqa: E402

WORDS = [f"{w}{i}" for i, w in enumerate(["alpha", "beta", "gamma", "delta", "omega"] * 200)]


def text(rng: random.Random, tokens: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(1, tokens // 2)))  # about 2 tokens a word


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def run_size(url: str, size: int, conversations: int, turns: int, background: bool) -> dict:
    plain = openai.OpenAI(base_url=url + "/v1", api_key="bench", max_retries=0)
    wrapped = sdk.wrap(
        openai.OpenAI(base_url=url + "/v1", api_key="bench", max_retries=0),
        tenant="acme",
        log_level=None,
        background=background,
    )
    state = wrapped._prefixlint_state
    wall: list[float] = []
    cpu: list[float] = []
    orig_prepare, orig_after = state.prepare, state.after

    def timed(fn, first):
        def inner(*args):
            w0, c0 = time.perf_counter(), time.thread_time()
            out = fn(*args)
            dw, dc = (time.perf_counter() - w0) * 1000, (time.thread_time() - c0) * 1000
            if first:
                wall.append(dw)
                cpu.append(dc)
            else:
                wall[-1] += dw
                cpu[-1] += dc
            return out

        return inner

    state.prepare = timed(orig_prepare, True)
    state.after = timed(orig_after, False)
    t_plain: list[float] = []
    t_wrapped: list[float] = []
    rng = random.Random(size)
    per_turn = max(8, int(size * 0.9) // turns)
    for c in range(conversations):
        system = f"conversation {c}. " + text(rng, size // 10)
        history: list[dict] = [{"role": "system", "content": system}]
        for t in range(turns):
            history.append({"role": "user", "content": text(rng, per_turn // 2)})
            order = [(plain, t_plain), (wrapped, t_wrapped)]
            if t % 2:
                order.reverse()
            for client, sink in order:
                t0 = time.perf_counter()
                client.chat.completions.create(model="gpt-4o", messages=history)
                sink.append((time.perf_counter() - t0) * 1000)
            history.append({"role": "assistant", "content": text(rng, per_turn // 2)})
    snap = sdk.stats(wrapped)  # flushes background work
    diffs = [w - p for w, p in zip(t_wrapped, t_plain, strict=True)]
    return {
        "size": size,
        "calls": len(t_wrapped),
        "mode": "background" if background else "inline",
        "plain": (pct(t_plain, 0.5), pct(t_plain, 0.99)),
        "wrapped": (pct(t_wrapped, 0.5), pct(t_wrapped, 0.99)),
        "added": (statistics.median(diffs), pct(diffs, 0.99)),
        "inside": (pct(wall, 0.5), pct(wall, 0.99)),
        "cpu": (pct(cpu, 0.5), pct(cpu, 0.99)),
        "hit_rate": snap.hit_rate,
    }


def start_server() -> tuple[subprocess.Popen, str]:
    """The provider server in its own process, so it does not share the GIL with the client."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "sdk_server.py"), "chars"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    url = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not url:
        raise RuntimeError("server did not start")
    return proc, url


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=5)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--record", action="store_true", help="append the table to bench/RESULTS.md")
    args = ap.parse_args()
    proc, url = start_server()
    try:
        # warm up: tokenizer load, connection pools
        run_size(url, 1000, 1, 2, False)
        rows = [
            run_size(url, int(s), args.conversations, args.turns, bg)
            for bg in (False, True)
            for s in args.sizes.split(",")
        ]
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=10)
    lines = []
    lines.append(
        "| conversation | accounting | calls | unwrapped p50 / p99 ms | wrapped p50 / p99 ms "
        "| added p50 / p99 ms (paired) | in wrapper, wall p50 / p99 ms | in wrapper, CPU p50 / p99 ms "
        "| hit rate |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [f"{r['size'] // 1000}k tokens", r["mode"], str(r["calls"])]
        cells += [f"{r[k][0]:.3f} / {r[k][1]:.3f}" for k in ("plain", "wrapped", "added", "inside", "cpu")]
        cells.append(f"{r['hit_rate']:.0%}")
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    if args.record:
        sys.path.insert(0, str(ROOT / "bench"))
        from results_md import machine, record, stamp

        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        cmd = f"bench/sdk_overhead.py --conversations {args.conversations} --turns {args.turns}"
        record("SDK overhead", f"### {stamp()}: {machine()}, load average {load:.1f}\n\n`{cmd}`\n\n{table}")


if __name__ == "__main__":
    main()
