"""Where the SDK's end-to-end overhead goes: a probe next to ``bench/sdk_overhead.py`` (issue 11).

For one traffic shape it sends every request through a plain client and through wrapped clients in
shuffled order, call by call, and reports the median paired difference (wrapped minus plain) of:

* ``wrapped``: the wrapper as shipped (inline accounting, verification on, tenant set);
* ``no send-side job``: the same, with the worker's send-side job (pieces, prediction, drift,
  recording) skipped, so the difference to ``wrapped`` is what that job costs end to end;
* ``GIL-free burn``: the job replaced by the same CPU time spent in C with the GIL released
  (``hashlib`` over a large buffer), to tell GIL contention from contention for the cores.

It also times, for the shipped wrapper, when the worker's send-side job starts and ends relative to
the request leaving the wrapper, the request being on the wire (its body written: the worker's
wake-up, :mod:`prefixlint.sdk.onwire`) and the response reaching it. A job that starts before the
request is on the wire holds the GIL while the calling thread still builds and writes the request.

    python bench/sdk_overhead_probe.py [--shape "at size"] [--size 10000] [--calls 300]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent)]

import openai  # noqa: E402
from sdk_overhead import requests, start_server  # noqa: E402

import prefixlint.sdk as sdk  # noqa: E402
from prefixlint.sdk.worker import WORKER  # noqa: E402

_BUF = b"x" * 200_000


def _burn(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        hashlib.sha256(_BUF)  # releases the GIL while it hashes


def _client(url: str, name: str) -> Any:
    return sdk.wrap(
        openai.OpenAI(base_url=url + "/v1", api_key=name, max_retries=0), tenant="acme", log_level=None
    )


def _timeline(client: Any, log: dict[int, dict[str, float]], alive: list[Any]) -> None:
    """Record, per call, when it left the wrapper, when its send-side job ran, when its response came."""
    state, account = client._prefixlint_state, client._prefixlint_state.account
    prepare, after, sent, wake = state.prepare, state.after, account._sent, WORKER.wake
    current: list[int] = []  # the call of this client in progress

    def timed_prepare(api: str, kwargs: dict[str, Any]) -> Any:
        out = prepare(api, kwargs)
        alive.append(out[1])  # keeps ids unique
        log[id(out[1])] = {"left": time.perf_counter()}
        current[:] = [id(out[1])]
        return out

    def timed_wake() -> None:
        if current:
            log[current[0]].setdefault("wire", time.perf_counter())
        wake()

    def timed_sent(call: Any) -> None:
        t0, c0 = time.perf_counter(), time.thread_time()
        sent(call)
        log[id(call)].update(job0=t0, job1=time.perf_counter(), job_cpu=time.thread_time() - c0)

    def timed_after(call: Any, result: Any, kwargs: dict[str, Any]) -> Any:
        log[id(call)]["response"] = time.perf_counter()
        current.clear()
        return after(call, result, kwargs)

    state.prepare, state.after, account._sent = timed_prepare, timed_after, timed_sent
    WORKER.wake = timed_wake  # type: ignore[method-assign]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="at size", help="growing, at size, fixed or fresh")
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--burn-ms", type=float, default=0.3, help="CPU of the GIL-free burn per call")
    args = ap.parse_args()
    proc, url = start_server()
    try:
        sdk.forget()
        plain = openai.OpenAI(base_url=url + "/v1", api_key="plain", max_retries=0)
        shipped, skipped, burned = (_client(url, n) for n in ("shipped", "skipped", "burned"))
        skipped._prefixlint_state.account._sent = lambda call: None
        burned._prefixlint_state.account._sent = lambda call: _burn(args.burn_ms)
        log: dict[int, dict[str, float]] = {}
        _timeline(shipped, log, [])
        clients = {"plain": plain, "wrapped": shipped, "no send-side job": skipped, "GIL-free burn": burned}
        diffs: dict[str, list[float]] = {name: [] for name in clients if name != "plain"}
        rng = random.Random(1)
        for msgs, measured in requests(args.shape, args.size, args.calls, random.Random(args.size)):
            order = list(clients.items())
            rng.shuffle(order)
            took = {}
            for name, client in order:
                t0 = time.perf_counter()
                client.chat.completions.create(model="gpt-4o", messages=msgs)
                took[name] = (time.perf_counter() - t0) * 1000
            if measured:
                for name in diffs:
                    diffs[name].append(took[name] - took["plain"])
        sdk.flush()
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=10)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.shape}, {args.size} tokens, {len(diffs['wrapped'])} calls, load average {load:.1f}")
    for name, d in diffs.items():
        print(f"  added p50 (paired), {name}: {statistics.median(d):.3f} ms")
    calls = [c for c in log.values() if "job1" in c and "response" in c]

    def p50(key: str) -> float:
        return statistics.median(c[key] for c in calls) * 1000

    for c in calls:
        c["start"], c["took"], c["reply"] = (
            c["job0"] - c["left"],
            c["job1"] - c["job0"],
            c["response"] - c["left"],
        )
    late = sum(c["job1"] > c["response"] for c in calls)
    early = sum(c["job0"] < c.get("wire", c["response"]) for c in calls)
    print(f"  send-side job starts {p50('start'):.3f} ms after the request left the wrapper (p50)")
    print(f"  send-side job wall / CPU: {p50('took'):.3f} / {p50('job_cpu'):.3f} ms (p50)")
    print(f"  response reaches the wrapper {p50('reply'):.3f} ms after the request left (p50)")
    print(f"  calls whose job had not ended when the response came: {late} of {len(calls)}")
    print(f"  calls whose job started before the request was on the wire: {early} of {len(calls)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
