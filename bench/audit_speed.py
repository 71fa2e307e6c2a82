"""``prefixlint audit`` speed and memory against bare tiktoken tokenization, in the same run.

It writes a realistic log (agent loops with tool calls, RAG chat with a timestamp at the top of the
system prompt, multi-turn chat; OpenAI, Anthropic and a vLLM deployment; twenty tenants), then, each
in a fresh process:

* the audit end to end (read, parse, tokenize, replay, report) on the whole log;
* the baseline: tiktoken's ``encode_ordinary`` over every text of every request (system prompts,
  messages, tools as JSON), timed around the encode calls only (reading and JSON parsing are not
  counted, so the baseline is the cheapest possible "tokenize everything");
* the audit on the first 10% of the log, to show memory stays flat as the log grows.

Goals: the audit takes less time than the baseline (repeated prefixes are not re-tokenized) and its
peak memory at 100k requests is within 1.5x of that at 10k. The goal is judged on CPU time. On a
shared machine the load also changes CPU time (two processes on the two threads of one core each run
slower), so the audit and the baseline run in turns of ``--slice`` seconds, the one waiting stopped
(``SIGSTOP``): a load that comes and goes falls on both alike. Wall times are then the seconds each
child ran in its turns (the baseline's includes reading and parsing). ``--slice 0`` runs them one
after the other, with wall times as the children measure them. Peak memory is the process's maximum
resident set (``ru_maxrss``). ``--smoke`` runs a 600-request log and checks only that everything runs.
``--record`` appends the result to ``bench/RESULTS.md`` with the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = 1_790_000_000.0


def _words(rng: random.Random, n: int) -> list[str]:
    syll = ["ka", "lo", "mi", "ne", "ra", "tu", "shi", "po", "ve", "den", "mar", "tion", "al", "er", "in"]
    out = set()
    while len(out) < n:
        out.add("".join(rng.choice(syll) for _ in range(rng.randint(1, 4))))
    return sorted(out)


class LogWriter:
    """Deterministic traffic: every template, tool and document is fixed by the seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.vocab = _words(self.rng, 3000)
        r = self.rng
        self.agent_system = self.text(600)
        self.tools = [
            {
                "type": "function",
                "function": {
                    "name": f"tool_{i}",
                    "description": self.text(60),
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                },
            }
            for i in range(6)
        ]
        self.rag_system = self.text(600)
        self.docs = [self.text(r.randint(60, 120)) for _ in range(400)]
        self.chat_system = self.text(600)
        self.vllm_system = self.text(300)

    def text(self, words: int) -> str:
        r = self.rng
        return " ".join(r.choice(self.vocab) for _ in range(words)) + "."

    def sessions(self, n_requests: int):  # type: ignore[no-untyped-def]
        """Yield (start time, list of request rows) per session until ``n_requests`` rows."""
        r = self.rng
        made = 0
        t = START
        while made < n_requests:
            t += r.expovariate(1 / 1.2)
            kind = r.random()
            tenant = f"tenant-{r.randrange(20)}"
            if kind < 0.4:
                rows = self._agent(tenant, t)
            elif kind < 0.7:
                rows = self._rag(tenant, t)
            elif kind < 0.9:
                rows = self._chat(tenant, t)
            else:
                rows = self._vllm(tenant, t)
            rows = rows[: n_requests - made]
            made += len(rows)
            yield rows

    def _agent(self, tenant: str, t: float) -> list[dict]:
        r = self.rng
        msgs = [{"role": "system", "content": self.agent_system}, {"role": "user", "content": self.text(40)}]
        rows = []
        for step in range(r.randint(4, 14)):
            rows.append(
                self._row(
                    tenant,
                    t + step * 6,
                    {"model": "gpt-4o", "tools": self.tools, "messages": list(msgs)},
                    "openai",
                )
            )
            call = {
                "id": f"call_{r.getrandbits(48):x}",
                "type": "function",
                "function": {"name": f"tool_{r.randrange(6)}", "arguments": json.dumps({"q": self.text(5)})},
            }
            msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
            msgs.append(
                {"role": "tool", "tool_call_id": call["id"], "content": self.text(r.randint(60, 250))}
            )
        return rows

    def _rag(self, tenant: str, t: float) -> list[dict]:
        r = self.rng
        stamp = datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        docs = "\n\n".join(r.sample(self.docs, 3))
        system = f"Current date and time: {stamp}.\n{self.rag_system}\n\nDocuments:\n{docs}"
        body = {
            "model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": self.text(25)}],
        }
        return [self._row(tenant, t, body, "openai")]

    def _chat(self, tenant: str, t: float) -> list[dict]:
        r = self.rng
        msgs: list[dict] = []
        rows = []
        for turn in range(r.randint(2, 10)):
            msgs.append({"role": "user", "content": self.text(r.randint(10, 60))})
            body = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 512,
                "system": [
                    {"type": "text", "text": self.chat_system, "cache_control": {"type": "ephemeral"}}
                ],
                "messages": list(msgs),
            }
            rows.append(self._row(tenant, t + turn * 40, body, "anthropic"))
            msgs.append({"role": "assistant", "content": self.text(r.randint(20, 80))})
        return rows

    def _vllm(self, tenant: str, t: float) -> list[dict]:
        body = {
            "model": "llama-3-8b",
            "messages": [
                {"role": "system", "content": self.vllm_system},
                {"role": "user", "content": self.text(30)},
            ],
        }
        return [self._row(tenant, t, body, "vllm")]

    def _row(self, tenant: str, t: float, body: dict, provider: str) -> dict:
        return {"timestamp": round(t, 3), "tenant": tenant, "provider": provider, "request": body}


def write_log(path: Path, n: int, seed: int = 7) -> None:
    """``n`` requests in time order (sessions interleave, so rows are sorted through a small heap)."""
    import heapq

    w = LogWriter(seed)
    heap: list[tuple[float, int, str]] = []
    seq = 0
    with open(path, "w", encoding="utf-8") as out:
        for rows in w.sessions(n):
            for row in rows:
                seq += 1
                heapq.heappush(heap, (row["timestamp"], seq, json.dumps(row)))
            horizon = rows[0]["timestamp"]
            while heap and heap[0][0] <= horizon:
                out.write(heapq.heappop(heap)[2] + "\n")
        while heap:
            out.write(heapq.heappop(heap)[2] + "\n")


def _texts(body: dict) -> list[str]:
    out: list[str] = []
    for tool in body.get("tools") or []:
        out.append(json.dumps(tool, separators=(",", ":")))
    system = body.get("system")
    if isinstance(system, str):
        out.append(system)
    elif isinstance(system, list):
        out.extend(b.get("text", "") for b in system if isinstance(b, dict))
    for m in body.get("messages") or []:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(p.get("text", "") for p in c if isinstance(p, dict))
        if m.get("tool_calls"):
            out.append(json.dumps(m["tool_calls"], separators=(",", ":")))
    return out


def measure_baseline(path: str) -> dict:
    """tiktoken over every text of every request; only the encode calls are timed."""
    from prefixlint.model.tokens import get_tokenizer

    enc = get_tokenizer("o200k_base")._encoding
    encode = enc.encode_ordinary  # type: ignore[union-attr]
    spent = cpu = 0.0
    tokens = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            texts = _texts(json.loads(line)["request"])
            t0, c0 = time.perf_counter(), time.process_time()
            for text in texts:
                tokens += len(encode(text))
            spent += time.perf_counter() - t0
            cpu += time.process_time() - c0
    return {"seconds": spent, "cpu_seconds": cpu, "tokens": tokens}


def measure_audit(path: str, lines: int | None) -> dict:
    from prefixlint.audit.records import FieldMap
    from prefixlint.audit.replay import ReplayOptions
    from prefixlint.audit.run import run_audit
    from prefixlint.report.audit_json import audit_document

    src = path
    if lines is not None:
        src = path + f".head{lines}"
        with open(path, encoding="utf-8") as f, open(src, "w", encoding="utf-8") as out:
            for i, line in enumerate(f):
                if i >= lines:
                    break
                out.write(line)
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_audit([src], FieldMap(), ReplayOptions(capacity_points=(1 << 16, 1 << 20)))
    doc = audit_document(result)
    elapsed = time.perf_counter() - t0
    return {
        "seconds": elapsed,
        "cpu_seconds": time.process_time() - c0,
        "used": doc["used"],
        "prompt_tokens": sum(m["prompt_tokens"] for m in doc["models"]),
        "rates": {f"{m['provider']}/{m['model']}": round(m["simulated"], 3) for m in doc["models"]},
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _command(*args: str) -> list[str]:
    return [sys.executable, __file__, *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _child(*args: str) -> dict:
    proc = subprocess.run(_command(*args), capture_output=True, text=True, env=_env(), check=False)
    if proc.returncode:
        raise SystemExit(f"child {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _in_turns(first: tuple[str, ...], second: tuple[str, ...], tmp: Path, turn: float) -> list[dict]:
    """Run two children in turns of ``turn`` seconds, the waiting one stopped; each result gets
    ``ran``: the wall seconds it ran in its turns."""
    procs, outs = [], []
    for i, args in enumerate((first, second)):
        out, err = tmp / f"child{i}.out", tmp / f"child{i}.err"
        with open(out, "w") as o, open(err, "w") as e:
            procs.append(subprocess.Popen(_command(*args), stdout=o, stderr=e, env=_env()))
        outs.append((out, err))
    ran = [0.0, 0.0]
    os.kill(procs[1].pid, signal.SIGSTOP)
    active = 0
    try:
        while any(p.poll() is None for p in procs):
            t0 = time.perf_counter()
            with contextlib.suppress(subprocess.TimeoutExpired):
                procs[active].wait(timeout=turn)
            ran[active] += time.perf_counter() - t0
            other = 1 - active
            if procs[other].poll() is None:
                if procs[active].poll() is None:
                    os.kill(procs[active].pid, signal.SIGSTOP)
                os.kill(procs[other].pid, signal.SIGCONT)
                active = other
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
                p.wait()
    results = []
    for p, (out, err), args, secs in zip(procs, outs, (first, second), ran, strict=True):
        if p.returncode:
            raise SystemExit(f"child {args} failed:\n{err.read_text()[-3000:]}")
        results.append({**json.loads(out.read_text().strip().splitlines()[-1]), "ran": secs})
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--smoke", action="store_true", help="a 600-request log; check that it runs")
    ap.add_argument("--record", action="store_true", help="append the result to bench/RESULTS.md")
    ap.add_argument("--log", help="reuse this log instead of writing one")
    ap.add_argument(
        "--slice",
        type=float,
        default=2.0,
        help="seconds of each turn when the audit and the baseline run in turns (0: one after the other)",
    )
    ap.add_argument("--_baseline", help=argparse.SUPPRESS)
    ap.add_argument("--_audit", help=argparse.SUPPRESS)
    ap.add_argument("--_lines", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._baseline:
        print(json.dumps(measure_baseline(args._baseline)))
        return
    if args._audit:
        print(json.dumps(measure_audit(args._audit, args._lines)))
        return
    n = 600 if args.smoke else args.requests
    tmp = Path(tempfile.mkdtemp(prefix="audit-bench-"))
    log = Path(args.log) if args.log else tmp / "log.jsonl"
    if not args.log:
        t0 = time.perf_counter()
        write_log(log, n)
        print(
            f"wrote {n:,} requests ({log.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f} s",
            file=sys.stderr,
        )
    load_before = os.getloadavg()
    turns = args.slice > 0 and hasattr(signal, "SIGSTOP")
    if turns:
        full, base = _in_turns(("--_audit", str(log)), ("--_baseline", str(log)), tmp, args.slice)
        full["seconds"], base["seconds"] = full["ran"], base["ran"]
    else:
        full = _child("--_audit", str(log))
        base = _child("--_baseline", str(log))
    tenth = _child("--_audit", str(log), "--_lines", str(max(1, n // 10)))
    load_after = os.getloadavg()
    result = {
        "requests": n,
        "in_turns": args.slice if turns else 0,
        "log_mb": round(log.stat().st_size / 1e6),
        "audit_s": round(full["seconds"], 2),
        "tiktoken_s": round(base["seconds"], 2),
        "audit_cpu_s": round(full["cpu_seconds"], 2),
        "tiktoken_cpu_s": round(base["cpu_seconds"], 2),
        "audit_over_tiktoken_cpu": round(full["cpu_seconds"] / base["cpu_seconds"], 3)
        if base["cpu_seconds"]
        else None,
        "tiktoken_tokens": base["tokens"],
        "audit_over_tiktoken": round(full["seconds"] / base["seconds"], 3) if base["seconds"] else None,
        "peak_rss_mb_full": round(full["peak_rss_mb"]),
        "peak_rss_mb_tenth": round(tenth["peak_rss_mb"]),
        "memory_ratio": round(full["peak_rss_mb"] / tenth["peak_rss_mb"], 2),
        "audit_prompt_tokens": full["prompt_tokens"],
        "simulated_hit_rates": full["rates"],
        "used": full["used"],
        "load_average": [round(x, 1) for x in (*load_before, *load_after)],
    }
    print(json.dumps(result, indent=2))
    if args.smoke:
        assert full["used"] == n and tenth["used"] == max(1, n // 10), result
        return
    if args.record:
        _record(result)


def _record(r: dict) -> None:
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cpu = platform.processor() or platform.machine()
    goal_speed = "met" if r["audit_over_tiktoken_cpu"] < 1 else "not met"
    goal_mem = "met" if r["memory_ratio"] <= 1.5 else "not met"
    load = f"load average {r['load_average'][0]} before / {r['load_average'][3]} after"
    rates = ", ".join(f"{k} {v:.1%}" for k, v in r["simulated_hit_rates"].items())
    tik = f"{r['tiktoken_s']} s ({r['tiktoken_tokens']:,} tokens)"
    if r["in_turns"]:
        how = f"the audit and the baseline in turns of {r['in_turns']} s, the waiting one stopped"
        tik_wall = "the tiktoken process in its turns (read, parse, encode), wall"
    else:
        how = "the audit, then the baseline"
        tik_wall = "tiktoken `encode_ordinary` over every request text (encode calls only), wall"
    text = f"""
### {when}: {cpu}, {os.cpu_count()} cores, {load} (provisional: shared machine)

`python bench/audit_speed.py --requests {r["requests"]}`: a {r["log_mb"]} MB log (agent loops with tool
calls, RAG chat with a timestamp at the top, multi-turn Anthropic chat, a vLLM deployment; 20 tenants);
{how}.

| measure | value |
|---|---|
| audit end to end (read, parse, tokenize, replay), wall / CPU | {r["audit_s"]} s / {r["audit_cpu_s"]} s |
| {tik_wall} | {tik} |
| tiktoken `encode_ordinary` over every request text (encode calls only), CPU | {r["tiktoken_cpu_s"]} s |
| audit / tiktoken, wall / CPU | {r["audit_over_tiktoken"]}x / {r["audit_over_tiktoken_cpu"]}x |
| peak RSS, 100% of the log | {r["peak_rss_mb_full"]} MB |
| peak RSS, first 10% of the log | {r["peak_rss_mb_tenth"]} MB |
| memory ratio 100% / 10% | {r["memory_ratio"]}x |

Goals: audit faster than bare tokenization: {goal_speed}; memory flat (at most 1.5x from 10% to 100%):
{goal_mem}. Simulated hit rates: {rates}.
"""
    path = ROOT / "bench" / "RESULTS.md"
    body = path.read_text("utf-8")
    marker = "## Audit speed"
    if marker not in body:
        body = body.rstrip() + f"\n\n{marker}\n\nMeasured by `bench/audit_speed.py` (see its docstring).\n"
    start = body.index(marker)
    end = body.find("\n## ", start + len(marker))  # the section's end: the next section, or the file's
    end = len(body) if end < 0 else end
    body = body[:end].rstrip() + "\n" + text + body[end:]
    path.write_text(body.rstrip() + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
