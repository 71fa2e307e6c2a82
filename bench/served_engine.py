"""The engine as it is served: ``prefixlint engine serve`` in a subprocess, timed over HTTP.

The TTFT benches use this so that what they measure is what a user runs: the same command, the
same defaults (prefill chunk size, integrity checks, tenancy), the same HTTP server and streaming
path. TTFT is client-side: from sending the request to the first streamed chunk with a choice,
as ``vllm bench serve`` counts it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Sample:
    """One streamed request: client-side TTFT, the usage the server reported, the engine's time in
    KV integrity checks during it (from ``/metrics``), and the CPU time the server process spent
    until the first token (all its threads; None where ``/proc`` has no schedstat)."""

    ttft_s: float
    prompt_tokens: int
    cached_tokens: int
    check_s: float = 0.0
    cpu_s: float | None = None


def process_cpu_seconds(pid: int) -> float | None:
    """CPU time of every thread of ``pid`` in nanosecond resolution (Linux ``schedstat``). On a
    shared machine this is steadier than wall time: waiting for a core does not count."""
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended since the listing (a server's worker threads come and go)
    return total / 1e9 if total else None  # all zeros: the kernel keeps no schedstat here


def cpu_clock() -> str | None:
    """Which CPU clock :func:`process_cpu_seconds` reads on this machine, or None if it has none."""
    return "schedstat (ns)" if process_cpu_seconds(os.getpid()) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServedEngine:
    """``prefixlint engine serve --preset PRESET [serve_args]`` on a free loopback port.

    ``threads`` sets ``OMP_NUM_THREADS`` for the server (None: torch's default). The startup
    summary (``--output-format json``) is kept in :attr:`summary`."""

    def __init__(
        self,
        preset: str,
        device: str = "cpu",
        serve_args: list[str] | tuple[str, ...] = (),
        threads: int | None = None,
        api_key: str = "bench",
        startup_timeout_s: float = 600.0,
    ) -> None:
        self.preset, self.device, self.serve_args = preset, device, list(serve_args)
        self.threads, self.api_key, self.startup_timeout_s = threads, api_key, startup_timeout_s
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.summary: dict[str, Any] = {}
        self._proc: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed in __exit__
        self._http = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {api_key}"}, timeout=600.0
        )

    def command(self) -> list[str]:
        """The exact command line that is served."""
        return [
            sys.executable, "-m", "prefixlint", "engine", "serve", "--preset", self.preset,
            "--device", self.device, "--port", str(self.port), "--output-format", "json", *self.serve_args,
        ]  # fmt: skip

    def __enter__(self) -> ServedEngine:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        if self.threads:
            env["OMP_NUM_THREADS"] = str(self.threads)
        self._proc = subprocess.Popen(
            self.command(), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=self._log, text=True
        )
        line = self._proc.stdout.readline() if self._proc.stdout else ""
        if not line:
            log = self.server_log()
            self.__exit__(None, None, None)
            raise RuntimeError(f"`prefixlint engine serve` did not start:\n{log}")
        self.summary = json.loads(line)
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            try:
                if self._http.get("/health", timeout=5).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if self._proc.poll() is not None or time.monotonic() > deadline:
                log = self.server_log()
                self.__exit__(None, None, None)
                raise RuntimeError(f"the engine server never became healthy:\n{log}")
            time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=30)
        self._http.close()
        self._log.close()

    def server_log(self) -> str:
        if self._log.closed:
            return ""
        self._log.seek(0)
        return self._log.read()[-4000:]

    def metric(self, name: str) -> float:
        """One sample of the server's Prometheus text, by exact name."""
        for line in self._http.get("/metrics").text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise KeyError(name)

    def first_token(self, prompt: list[int], logprobs: int | None = None) -> tuple[Sample, dict]:
        """Stream one ``/v1/completions`` request with ``max_tokens=1``; returns its sample and its
        first choice. Raises on any error, so a failed request never becomes a timing."""
        body: dict[str, Any] = {
            "model": self.summary.get("model", self.preset),
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if logprobs is not None:
            body["logprobs"] = logprobs
        checks_before = self.metric("prefixlint_engine_kv_integrity_check_seconds_total")
        pid = self._proc.pid if self._proc is not None else 0
        cpu_before = process_cpu_seconds(pid)
        cpu_at_first: float | None = None
        ttft = None
        usage: dict = {}
        choice: dict = {}
        t0 = time.perf_counter()
        with self._http.stream("POST", "/v1/completions", json=body) as resp:
            if resp.status_code != 200:
                raise RuntimeError(f"HTTP {resp.status_code}: {resp.read().decode(errors='replace')[:500]}")
            for line in resp.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[6:])
                if "error" in event:
                    raise RuntimeError(f"stream error: {event['error']}")
                if event.get("choices") and ttft is None:
                    ttft = time.perf_counter() - t0
                    cpu_at_first = process_cpu_seconds(pid)
                    choice = event["choices"][0]
                if event.get("usage"):
                    usage = event["usage"]
        if ttft is None or not usage:
            raise RuntimeError("the stream ended without a token or without usage")
        checks = self.metric("prefixlint_engine_kv_integrity_check_seconds_total") - checks_before
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        cpu = None if cpu_before is None or cpu_at_first is None else cpu_at_first - cpu_before
        if cpu is not None and cpu <= 0:
            cpu = None  # a thread that ended in between took its CPU time out of the sum: not known
        return Sample(ttft, usage["prompt_tokens"], cached, checks, cpu), choice
