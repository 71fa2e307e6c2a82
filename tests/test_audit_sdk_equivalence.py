"""The audit and the SDK give the same verdict for the same request sequence.

A wrapped ``openai`` client talks to the local provider-shaped server over real HTTP. An httpx event
hook writes every request body as it went out (with the SDK's key), its usage and its send and
response times to a JSONL log, the way a gateway would. The log is then replayed with
``prefixlint audit``; each request's verdict must equal the SDK's report. The traffic covers a miss
then hits, a changed system prompt (drift), a growing conversation and one whose history is
rewritten, concurrent requests in flight together (hits, never ``unexpected_hit``), a server that
over-reports, one that under-reports (eviction), and a gap past the TTL (the clock is moved).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.audit.records import FieldMap
from prefixlint.audit.replay import ReplayOptions
from prefixlint.audit.run import run_audit
from prefixlint.sdk import CacheReport

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def server() -> Iterator[ProviderServer]:
    srv = ProviderServer().start()
    yield srv
    srv.stop()


class Clock:
    """The SDK's clock and the log's: wall time plus a jump the test controls."""

    def __init__(self) -> None:
        import time

        self._time = time.time
        self.offset = 0.0

    def __call__(self) -> float:
        return self._time() + self.offset


class Recorder:
    """Logs what the wrapped client sends, as a gateway would, and the SDK's report of each request."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.rows: dict[int, dict[str, Any]] = {}
        self.reports: dict[int, CacheReport] = {}
        self.local = threading.local()
        self.lock = threading.Lock()

    def on_request(self, request: httpx.Request) -> None:
        i = self.local.index
        body = json.loads(request.content)
        row = {"id": i, "timestamp": self.clock(), "organization": "org-1", "request": body}
        row["template"] = request.headers["prefixlint-template"]  # what a gateway would log
        if "prefixlint-session" in request.headers:
            row["session"] = request.headers["prefixlint-session"]
        with self.lock:
            self.rows[i] = row

    def on_response(self, response: httpx.Response) -> None:
        response.read()
        i = self.local.index
        with self.lock:
            self.rows[i]["end_time"] = self.clock()
            self.rows[i]["usage"] = response.json().get("usage")

    def on_report(self, report: CacheReport) -> None:
        with self.lock:
            self.reports[self.local.index] = report


def test_audit_gives_the_sdk_verdicts(server: ProviderServer, tmp_path: Path) -> None:
    clock = Clock()
    rec = Recorder(clock)
    http = httpx.Client(event_hooks={"request": [rec.on_request], "response": [rec.on_response]})
    key = f"k-{uuid.uuid4().hex}"  # a cache domain no other test has touched
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0, http_client=http),
        tenant="acme",
        on_report=rec.on_report,
        clock=clock,
    )
    system = f"[{uuid.uuid4().hex}] You are a careful assistant. " + " ".join(f"rule{i}" for i in range(1100))
    counter = iter(range(10_000))

    def send(messages: list[dict[str, Any]], template: str, conversation: str | None = None) -> None:
        rec.local.index = next(counter)
        extra: dict[str, Any] = {"prefixlint_template": template}
        headers = {"prefixlint-template": template}
        if conversation:
            extra["prefixlint_conversation"] = conversation
            headers["prefixlint-session"] = conversation
        client.chat.completions.create(model="gpt-4o", messages=messages, extra_headers=headers, **extra)

    def ask(question: str, sys_text: str = system, template: str = "support") -> None:
        send([{"role": "system", "content": sys_text}, {"role": "user", "content": question}], template)

    for q in ("one", "two", "three"):  # a miss, then hits
        ask(q)
    for stamp in ("10:00:01", "10:00:02"):  # a timestamp in the middle of the system prompt: drift
        ask("same", system[:3000] + f" The time is {stamp}. " + system[3000:], template="stamped")
    history = [{"role": "system", "content": system}]
    for turn in range(3):  # a conversation that grows: hits
        history.append({"role": "user", "content": f"turn {turn}"})
        send(history, "chat", conversation="c1")
        history.append({"role": "assistant", "content": "ok"})
    history[1] = {"role": "user", "content": "rewritten"}  # history rewritten: drift
    send(history, "chat", conversation="c1")
    server.delay = 0.2
    fresh = f"[{uuid.uuid4().hex}] A fresh prompt. " + " ".join(f"fact{i}" for i in range(1100))
    for rnd in range(3):  # three at a time, in flight together
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda i, r=rnd: ask(f"c{r}-{i}", fresh, "concurrent"), range(3)))
    server.delay = 0.0
    server.mode = "over"  # claims 97% on a prompt nobody sent before
    ask("q", f"[{uuid.uuid4().hex}] " + " ".join(f"topic{i}" for i in range(1100)), template="over")
    server.mode = "under"  # reports no hit on a prefix sent within the TTL
    ask("four")
    server.mode = "normal"
    clock.offset += 700  # past OpenAI's in-memory TTL
    ask("five")

    http.close()
    assert len(rec.rows) == len(rec.reports) == 21
    log = tmp_path / "sdk.jsonl"
    log.write_text("".join(json.dumps(rec.rows[i]) + "\n" for i in sorted(rec.rows)))
    result = run_audit([str(log)], FieldMap(), ReplayOptions(), keep_verdicts=True)
    assert result.input.used == 21
    audit = {line - 1: verdict for _, line, verdict in result.verdict_log}
    sdk_verdicts = {i: r.verdict.value for i, r in rec.reports.items()}
    assert audit == sdk_verdicts
    seen = set(sdk_verdicts.values())
    assert {"hit", "expected_miss", "drift", "unexpected_hit", "unexpected_miss"} <= seen
    concurrent = [sdk_verdicts[i] for i in range(9, 18)]
    assert "unexpected_hit" not in concurrent and concurrent.count("hit") >= 6
