"""SDK overhead: wrapped vs unwrapped OpenAI clients against the same local server, in one run.

Every request is sent once through a plain client and once through a wrapped one (verification on,
tenant set), in alternating order, so each wrapped call has an unwrapped twin measured next to it.
Four traffic shapes at each size (about 1k, 10k and 50k tokens):

* ``growing``: conversations that grow turn by turn from about a tenth of the size to the size
  (their median call is about half the size);
* ``at size``: conversations already at the size, each call adding one turn (a growing conversation
  *at* 10k tokens: the goal's case);
* ``fixed``: the same prompt of the size on every call;
* ``fresh``: a new prompt of the size on every call (nothing to reuse: every token is new).

Reported per row: end-to-end p50/p99 of both clients, the paired difference (added latency), the
time spent inside the wrapper on the calling thread (wall and CPU), and the CPU time of the call in
total (the calling thread's plus the accounting worker's, which runs while the request is in flight).
Goals (issue 11): <= 0.5 ms p50 added at 10k tokens for a growing conversation, <= 1 ms for a fresh
10k-token prompt.

    python bench/sdk_overhead.py [--calls 100] [--sizes 1000,10000,50000] [--record]
    python bench/sdk_overhead.py --smoke   # a few calls of each shape; exits 1 if anything is off (CI)
    python bench/sdk_overhead.py --server-cpu 1   # the server on CPU 1, the client on the others

By default the local server shares every core with the client and its accounting worker, so any CPU
the worker spends during a request competes with the server's answer. A hosted provider answers from
other machines; ``--server-cpu N`` comes closer to that: the server runs on CPU ``N`` alone and the
client (with its worker) on the other CPUs. Both figures are reported, neither replaces the other.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import openai  # noqa: E402

import prefixlint.sdk as sdk  # noqa: E402

WORDS = [f"{w}{i}" for i, w in enumerate(["alpha", "beta", "gamma", "delta", "omega"] * 200)]
SHAPES = ("growing", "at size", "fixed", "fresh")
Messages = list[dict[str, str]]


def text(rng: random.Random, tokens: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(1, tokens // 2)))  # about 2 tokens a word


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def requests(shape: str, size: int, calls: int, rng: random.Random) -> Iterator[tuple[Messages, bool]]:
    """(messages, measured) per call of a traffic shape; unmeasured calls only set the scene."""
    turns = 20
    if shape == "growing":
        per_turn = max(8, int(size * 0.9) // turns)
        for c in range(max(1, calls // turns)):
            history: Messages = [{"role": "system", "content": f"conversation {c}. " + text(rng, size // 10)}]
            for _ in range(turns):
                history.append({"role": "user", "content": text(rng, per_turn // 2)})
                yield history, True
                history.append({"role": "assistant", "content": text(rng, per_turn // 2)})
    elif shape == "at size":
        per_turn = max(8, size // 50)
        for c in range(max(1, calls // turns)):
            history = [{"role": "system", "content": f"conversation {c}. " + text(rng, size // 2)}]
            while sum(len(m["content"]) for m in history) < size * 2.5:  # about 2.5 characters a token here
                history += [
                    {"role": "user", "content": text(rng, per_turn)},
                    {"role": "assistant", "content": text(rng, per_turn)},
                ]
            history.append({"role": "user", "content": "first question"})
            yield history, False  # the conversation's first call at this size: writes the cache
            for _ in range(turns):
                history += [
                    {"role": "assistant", "content": text(rng, per_turn // 2)},
                    {"role": "user", "content": text(rng, per_turn // 2)},
                ]
                yield history, True
    elif shape == "fixed":
        system = "fixed. " + text(rng, size)
        yield [{"role": "system", "content": system}, {"role": "user", "content": "q"}], False
        for _ in range(calls):
            yield [{"role": "system", "content": system}, {"role": "user", "content": "q"}], True
    else:  # fresh
        for i in range(calls):
            yield (
                [
                    {"role": "system", "content": f"fresh {i}. " + text(rng, size)},
                    {"role": "user", "content": "q"},
                ],
                True,
            )


def _timed(fn: Callable, wall: list[float], cpu: list[float], first: bool) -> Callable:
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


def _on_worker(fn: Callable, sink: dict[int, float]) -> Callable:
    """``fn`` (a job of the accounting worker) adding its thread's CPU time to ``sink[id(call)]``."""

    def inner(call, *args, **kwargs):
        c0 = time.thread_time()
        try:
            return fn(call, *args, **kwargs)
        finally:
            sink[id(call)] = sink.get(id(call), 0.0) + (time.thread_time() - c0) * 1000

    return inner


def run(url: str, shape: str, size: int, calls: int, background: bool) -> dict:
    sdk.forget()
    plain = openai.OpenAI(base_url=url + "/v1", api_key=f"plain-{shape}-{size}", max_retries=0)
    wrapped = sdk.wrap(
        openai.OpenAI(base_url=url + "/v1", api_key=f"wrapped-{shape}-{size}-{background}", max_retries=0),
        tenant="acme",
        log_level=None,
        background=background,
    )
    state = wrapped._prefixlint_state
    wall: list[float] = []
    cpu: list[float] = []
    state.prepare = _timed(state.prepare, wall, cpu, True)
    state.after = _timed(state.after, wall, cpu, False)
    worker_cpu: dict[int, float] = {}  # id(call) -> CPU the worker spent on it
    account = state.account
    for name in ("_sent", "_begun", "_finish"):
        setattr(account, name, _on_worker(getattr(account, name), worker_cpu))
    t_plain: list[float] = []
    t_wrapped: list[float] = []
    measured: list[int] = []
    calls_seen: list = []  # the calls themselves, kept alive so that their ids stay unique
    prepare = state.prepare

    def remember(api, kwargs):
        out = prepare(api, kwargs)
        calls_seen.append(out[1])
        return out

    state.prepare = remember
    for n, (msgs, keep) in enumerate(requests(shape, size, calls, random.Random(size))):
        order = [(plain, t_plain), (wrapped, t_wrapped)]
        if n % 2:
            order.reverse()
        for client, sink in order:
            t0 = time.perf_counter()
            client.chat.completions.create(model="gpt-4o", messages=msgs)
            sink.append((time.perf_counter() - t0) * 1000)
        if keep:
            measured.append(n)
    snap = sdk.stats(wrapped)  # flushes background work
    pick = [t_wrapped[i] for i in measured], [t_plain[i] for i in measured], [wall[i] for i in measured]
    total = [cpu[i] + worker_cpu.get(id(calls_seen[i]), 0.0) for i in measured]
    cpu = [cpu[i] for i in measured]
    diffs = [w - p for w, p in zip(pick[0], pick[1], strict=True)]
    return {
        "shape": shape,
        "size": size,
        "calls": len(measured),
        "mode": "background" if background else "inline",
        "plain": (pct(pick[1], 0.5), pct(pick[1], 0.99)),
        "wrapped": (pct(pick[0], 0.5), pct(pick[0], 0.99)),
        "added": (statistics.median(diffs), pct(diffs, 0.99)),
        "inside": (pct(pick[2], 0.5), pct(pick[2], 0.99)),
        "cpu": (pct(cpu, 0.5), pct(cpu, 0.99)),
        "total": (pct(total, 0.5), pct(total, 0.99)),
        "hit_rate": snap.hit_rate,
        "verdicts": snap.verdicts,
    }


def start_server(cpu: int | None = None) -> tuple[subprocess.Popen, str]:
    """The provider server in its own process, so it does not share the GIL with the client; with
    ``cpu``, pinned to that CPU while this process keeps the others."""
    pin = None
    if cpu is not None:
        others = os.sched_getaffinity(0) - {cpu}
        if cpu not in os.sched_getaffinity(0) or not others:
            raise SystemExit(f"--server-cpu {cpu}: needs that CPU and at least one other")
        os.sched_setaffinity(0, others)

        def pin() -> None:
            os.sched_setaffinity(0, {cpu})

    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "sdk_server.py"), "chars"],
        preexec_fn=pin,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    url = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not url:
        raise RuntimeError("the provider server did not start")
    return proc, url


def table(rows: list[dict]) -> str:
    lines = [
        "| traffic | size | accounting | calls | unwrapped p50 / p99 ms | wrapped p50 / p99 ms "
        "| added p50 / p99 ms (paired) | in wrapper, wall p50 / p99 ms | in wrapper, CPU p50 / p99 ms "
        "| CPU with the worker's, p50 / p99 ms | hit rate |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [r["shape"], f"{r['size'] // 1000}k tokens", r["mode"], str(r["calls"])]
        keys = ("plain", "wrapped", "added", "inside", "cpu", "total")
        cells += [f"{r[k][0]:.3f} / {r[k][1]:.3f}" for k in keys]
        cells.append(f"{r['hit_rate']:.0%}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def smoke_problems(rows: list[dict]) -> list[str]:
    """What a smoke run must show: every call reported, no alarm on honest traffic, hits where due."""
    problems = []
    for r in rows:
        where = f"{r['shape']} {r['size']} {r['mode']}"
        if sum(r["verdicts"].values()) < r["calls"]:
            problems.append(f"{where}: {sum(r['verdicts'].values())} reports for {r['calls']} calls")
        bad = {v: n for v, n in r["verdicts"].items() if v.startswith("unexpected") or v == "unverified"}
        if bad:
            problems.append(f"{where}: {bad}")
        if r["shape"] in ("fixed", "at size") and r["hit_rate"] < 0.5:
            problems.append(f"{where}: hit rate {r['hit_rate']:.0%}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=100, help="measured calls per traffic shape and size")
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--smoke", action="store_true", help="a few calls of each shape at 2k tokens; for CI")
    ap.add_argument("--record", action="store_true", help="append the table to bench/RESULTS.md")
    ap.add_argument("--server-cpu", type=int, help="run the server on this CPU alone, the client elsewhere")
    args = ap.parse_args()
    if args.smoke:
        args.calls, args.sizes = 20, "2000"
    shapes = [s.strip() for s in args.shapes.split(",")]
    proc, url = start_server(args.server_cpu)
    try:
        run(url, "fixed", 1000, 3, False)  # warm up: tokenizer load, connection pools
        modes = (False,) if args.smoke else (False, True)
        rows = [
            run(url, shape, int(s), args.calls, bg)
            for bg in modes
            for s in args.sizes.split(",")
            for shape in shapes
        ]
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=10)
    out = table(rows)
    print(out)
    if args.smoke:
        problems = smoke_problems(rows)
        for p in problems:
            print("sdk_overhead smoke:", p, file=sys.stderr)
        return 1 if problems else 0
    if args.record:
        sys.path.insert(0, str(ROOT / "bench"))
        from results_md import machine, record, stamp

        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        cmd = f"bench/sdk_overhead.py --calls {args.calls} --sizes {args.sizes}"
        if args.server_cpu is not None:
            cmd += f" --server-cpu {args.server_cpu}"
        record("SDK overhead", f"### {stamp()}: {machine()}, load average {load:.1f}\n\n`{cmd}`\n\n{out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
