"""CPU of the SDK's accounting worker per call, and where it goes (issue 11), without a server.

``bench/sdk_overhead.py`` measures latency against a local server, which a loaded machine makes noisy.
This runs the same traffic shapes through a wrapped client's ``prepare`` with the worker's jobs run
synchronously on one thread, and reports per call (p50 over the calls, microseconds):

* ``send-side job`` (pieces, prediction, drift, recording) and ``response-side job`` (the record when
  the response began): the worker's CPU;
* ``tokenizing``: the part of the send-side job spent in the tokenizer (new text only);
* ``report``: the report built on the calling thread (inline accounting).

Thread CPU time per job; p50 over the runs with ``--runs``.

    python bench/sdk_worker_cpu.py [--shapes growing,at size] [--size 10000] [--calls 400] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from sdk_overhead import requests  # noqa: E402

import prefixlint.sdk.accounting as accounting  # noqa: E402
from prefixlint.sdk.options import SdkOptions  # noqa: E402
from prefixlint.sdk.state import ClientState  # noqa: E402
from prefixlint.sdk.tracker import forget_all  # noqa: E402


class _Now:
    """Runs each job when it is submitted, adding its thread CPU to ``spent[name]``."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def submit(self, fn: Callable[..., Any], *args: Any, lazy: bool = False) -> Future[Any]:
        fut: Future[Any] = Future()
        c0 = time.thread_time()
        fut.set_result(fn(*args))
        name = fn.__name__
        self.spent[name] = self.spent.get(name, 0.0) + time.thread_time() - c0
        return fut

    def run_until(self, fut: Future[Any]) -> None:
        pass


def _usage(call: Any) -> SimpleNamespace:
    local = call.pieces[-1].end if call.pieces else 0
    details = SimpleNamespace(cached_tokens=call.prediction.cached)
    return SimpleNamespace(prompt_tokens=local, prompt_tokens_details=details)


def run(shape: str, size: int, calls: int) -> dict[str, float]:
    """p50 microseconds per call of each part, for one traffic shape."""
    now = _Now()
    accounting.WORKER = now  # type: ignore[assignment]
    forget_all()
    state = ClientState(SdkOptions(tenant="acme", log_level=None), "openai", "org")
    _, _, cache = state.for_model("gpt-4o")
    tokenizing = [0.0]

    def timed(fn: Callable[[str], list[int]]) -> Callable[[str], list[int]]:
        def inner(text: str) -> list[int]:
            t0 = time.thread_time()
            try:
                return fn(text)
            finally:
                tokenizing[0] += time.thread_time() - t0

        return inner

    if cache._rust is not None:
        cache._rust = timed(cache._rust)
    cache._encode = timed(cache._encode)
    if cache.chunks is not None:
        cache.chunks._encode = cache._encode
    parts = ("send-side job", "tokenizing", "response-side job", "report")
    rows: dict[str, list[float]] = {k: [] for k in parts}
    for msgs, measured in requests(shape, size, calls, random.Random(size)):
        now.spent.clear()
        tokenizing[0] = 0.0
        _, call = state.prepare("chat", {"model": "gpt-4o", "messages": msgs})
        usage = _usage(call)
        c0 = time.thread_time()
        state.account.done(call, usage)  # the response-side job, then the inline report
        inline = time.thread_time() - c0 - now.spent.get("_begun", 0.0)
        if measured:
            rows["send-side job"].append(now.spent.get("_sent", 0.0))
            rows["tokenizing"].append(tokenizing[0])
            rows["response-side job"].append(now.spent.get("_begun", 0.0))
            rows["report"].append(inline)
    return {k: statistics.median(v) * 1e6 for k, v in rows.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="growing,at size")
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    run("fixed", 1000, 3)  # warm up: the tokenizer's load
    print("| traffic | size | send-side job | of it tokenizing | response-side job | report (inline) |")
    print("|---|---|---|---|---|---|")
    for shape in args.shapes.split(","):
        runs = [run(shape.strip(), args.size, args.calls) for _ in range(args.runs)]
        p50 = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        cells = [f"{p50[k]:.0f} us" for k in ("send-side job", "tokenizing", "response-side job", "report")]
        print(f"| {shape.strip()} | {args.size // 1000}k tokens | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
