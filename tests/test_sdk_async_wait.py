"""How a call waits for its send-side accounting, over real openai clients (async and sync) and HTTP.

The worker is held busy by a job of the test's own, so the request's send-side job waits behind it;
the tests then watch whether the event loop keeps running, and when the call returns.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport, Verdict, worker
from prefixlint.sdk.worker import WORKER

SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))


@pytest.fixture
def server(provider_server: ProviderServer) -> ProviderServer:
    return provider_server


@pytest.fixture(autouse=True)
def _reset(server: ProviderServer) -> None:
    server.reset()
    sdk.forget()


class Blocker:
    """A worker job that holds the worker until ``gate`` is set or ``hold`` seconds passed."""

    def __init__(self, hold: float) -> None:
        self.gate = threading.Event()
        self.started = threading.Event()
        self.finished = threading.Event()
        self.released: bool | None = None  # True: the gate was set before ``hold`` ran out
        self.hold = hold

    def __call__(self) -> None:
        self.started.set()
        self.released = self.gate.wait(self.hold)
        self.finished.set()


@pytest.fixture
def blocker() -> Iterator[Blocker]:
    made: list[Blocker] = []

    def start(hold: float) -> Blocker:
        b = Blocker(hold)
        WORKER.submit(b)
        assert b.started.wait(2.0), "the worker did not start the blocking job"
        made.append(b)
        return b

    yield start  # type: ignore[misc]
    for b in made:
        b.gate.set()
    assert WORKER.flush(5.0)


def _client(server: ProviderServer, reports: list[CacheReport], **opts) -> openai.AsyncOpenAI:
    return sdk.wrap(
        openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0),
        on_report=reports.append,
        **opts,
    )


def _create(client: openai.AsyncOpenAI, user: str):  # type: ignore[no-untyped-def]
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    return client.chat.completions.create(model="gpt-4o", messages=msgs)


def test_waiting_for_a_busy_worker_does_not_block_the_event_loop(server: ProviderServer, blocker) -> None:
    """While the send-side job waits behind a busy worker, other tasks of the loop keep running: a
    task that frees the worker once the response is there does so before the worker gives up."""
    reports: list[CacheReport] = []
    client = _client(server, reports)

    async def main() -> Blocker:
        await _create(client, "warm-up")  # tokenizer and caches loaded before the measured call
        held = blocker(2.0)

        async def release_after_response() -> None:
            while len(server.requests) < 2:
                await asyncio.sleep(0.005)
            await asyncio.sleep(0.3)  # the call is waiting in after_async by now
            held.gate.set()

        await asyncio.gather(_create(client, "measured"), release_after_response())
        await client.close()
        return held

    held = asyncio.run(main())
    assert held.released is True
    assert len(reports) == 2 and reports[1].predicted_cached > 0


def test_with_background_accounting_an_async_call_does_not_wait_for_the_worker(
    server: ProviderServer, blocker
) -> None:
    """``background=True``: the call returns while the worker is still busy with earlier work."""
    reports: list[CacheReport] = []
    client = _client(server, reports, background=True)

    async def main() -> Blocker:
        await _create(client, "warm-up")
        held = blocker(2.0)
        await _create(client, "measured")
        await client.close()
        return held

    held = asyncio.run(main())
    assert not held.finished.is_set()
    held.gate.set()
    assert sdk.flush(client) and len(reports) == 2


def test_an_async_call_waits_at_most_wait_s_for_a_stuck_worker(
    server: ProviderServer, blocker, monkeypatch
) -> None:
    """A worker stuck past :data:`~prefixlint.sdk.worker.WAIT_S` does not hold the call: it returns
    after the wait ran out, while the worker is still busy, and its report still comes. The wait
    that ran out leaves the job alone: the worker runs it later and serves the queue on (a cancelled
    job's future used to kill the worker thread)."""
    monkeypatch.setattr(worker, "WAIT_S", 0.2)
    reports: list[CacheReport] = []
    client = _client(server, reports)

    async def main() -> tuple[Blocker, float]:
        await _create(client, "warm-up")
        held = blocker(2.5)
        t0 = time.monotonic()
        await _create(client, "measured")
        took = time.monotonic() - t0
        await client.close()
        return held, took

    held, took = asyncio.run(main())
    assert not held.finished.is_set() and took < 2.0
    assert len(reports) == 2
    held.gate.set()  # the worker runs the request's send-side job after all, and goes on
    assert sdk.flush(client, timeout=3.0), "the worker died on the job that the timed-out wait cancelled"


def _sync_client(server: ProviderServer, reports: list[CacheReport]) -> openai.OpenAI:
    return sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0), on_report=reports.append
    )


def test_an_inline_report_waits_for_its_send_side_job(server: ProviderServer, blocker) -> None:
    """A sync call behind a busy worker: its report waits until the request's prediction is made,
    so a repeated prompt is an expected hit, not an unexpected one."""
    reports: list[CacheReport] = []
    client = _sync_client(server, reports)
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "a"}]
    client.chat.completions.create(model="gpt-4o", messages=msgs)
    blocker(0.5)  # frees the worker by itself, well within WAIT_S
    client.chat.completions.create(model="gpt-4o", messages=msgs)
    assert reports[1].verdict is Verdict.HIT and reports[1].predicted_cached > 1024


def test_an_inline_report_waits_at_most_wait_s_for_a_stuck_worker(
    server: ProviderServer, blocker, monkeypatch
) -> None:
    """A sync call behind a worker stuck past WAIT_S returns once the wait ran out, with its report."""
    monkeypatch.setattr(worker, "WAIT_S", 0.2)
    reports: list[CacheReport] = []
    client = _sync_client(server, reports)
    held = blocker(2.5)
    t0 = time.monotonic()
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "a"}])
    assert time.monotonic() - t0 < 2.0 and not held.finished.is_set()
    assert len(reports) == 1


def test_flush_gives_up_after_its_own_timeout_on_a_stuck_worker(blocker, monkeypatch) -> None:
    """``sdk.flush(timeout=...)`` returns False once that timeout ran out, not after WAIT_S."""
    monkeypatch.setattr(worker, "WAIT_S", 5.0)
    held = blocker(1.5)
    t0 = time.monotonic()
    assert sdk.flush(timeout=0.2) is False
    assert time.monotonic() - t0 < 1.0 and not held.finished.is_set()


def test_the_workers_flush_waits_wait_s_by_default(blocker, monkeypatch) -> None:
    """Without a timeout the worker's flush waits WAIT_S, never until a stuck job ends."""
    monkeypatch.setattr(worker, "WAIT_S", 0.2)
    held = blocker(1.5)
    t0 = time.monotonic()
    assert WORKER.flush() is False
    assert time.monotonic() - t0 < 1.0 and not held.finished.is_set()
