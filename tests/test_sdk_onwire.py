"""The accounting worker is woken once a wrapped request is on the wire, over real HTTP to a local server."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import anthropic
import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport, Verdict, onwire, worker
from prefixlint.sdk.worker import WORKER

SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))


@pytest.fixture
def server(provider_server: ProviderServer) -> ProviderServer:
    provider_server.reset()
    sdk.forget()
    return provider_server


def _msgs(user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _timeline(client: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float, int]]:
    """(event, time, thread id) of the worker's wake-ups and of ``client``'s send-side jobs."""
    events: list[tuple[str, float, int]] = []
    wake, account = WORKER.wake, client._prefixlint_state.account
    sent = account._sent

    def recorded_wake() -> None:
        events.append(("wake", time.perf_counter(), threading.get_ident()))
        wake()

    def recorded_sent(call: Any) -> None:
        events.append(("sent", time.perf_counter(), threading.get_ident()))
        sent(call)

    monkeypatch.setattr(WORKER, "wake", recorded_wake)
    monkeypatch.setattr(account, "_sent", recorded_sent)
    return events


def test_the_send_side_job_runs_on_the_worker_once_the_request_body_is_written(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.delay = 0.2  # the response comes well after the request is on the wire
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), on_report=reports.append
    )
    events = _timeline(client, monkeypatch)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("one"))
    returned = time.perf_counter()
    (wake,) = [e for e in events if e[0] == "wake"]  # httpcore's trace: the body was written
    (sent,) = [e for e in events if e[0] == "sent"]
    assert wake[2] == threading.get_ident()  # the calling thread wakes the worker...
    assert wake[1] <= sent[1] < returned  # ...which runs the job after that, while the call waits
    assert sent[2] != threading.get_ident()
    client.chat.completions.create(model="gpt-4o", messages=_msgs("two"))
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]


def test_async_clients_wake_the_worker_from_their_event_loop(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.delay = 0.1
    # Only the requests' own wake-ups, none at a lazy job's deadline: under load, the first response's
    # job could otherwise wake the worker (and run the second request's send-side job) before the
    # second request is on the wire.
    monkeypatch.setattr(worker, "LAZY_S", 30.0)
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), on_report=reports.append
    )
    assert onwire._ahook in client._client.event_hooks["request"]
    events = _timeline(client, monkeypatch)

    async def run() -> None:
        for user in ("one", "two"):
            await client.chat.completions.create(model="gpt-4o", messages=_msgs(user))

    asyncio.run(run())
    wakes = [e for e in events if e[0] == "wake"]
    sent = [e for e in events if e[0] == "sent"]
    assert len(wakes) == 2 and len(sent) == 2
    assert all(w[1] <= s[1] for w, s in zip(wakes, sent, strict=True))
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]


def test_background_reports_come_without_a_flush(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    done = threading.Event()
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        background=True,
        on_report=lambda r: reports.append(r) or done.set(),
    )
    client.chat.completions.create(model="gpt-4o", messages=_msgs("one"))
    assert done.wait(5)  # the lazy report job runs by itself (at the latest LAZY_S later)
    assert reports[0].verdict is Verdict.EXPECTED_MISS


def test_the_hook_is_shared_by_copies_and_removed_with_the_last_unwrap(server: ProviderServer) -> None:
    client = sdk.wrap(openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0))
    http = client._client
    copy = client.with_options(timeout=5)
    assert copy._client is http and sdk.is_wrapped(copy)
    assert http.event_hooks["request"].count(onwire._hook) == 1
    sdk.unwrap(client)
    assert onwire._hook in http.event_hooks["request"]  # the copy still uses it
    sdk.unwrap(copy)
    assert onwire._hook not in http.event_hooks["request"]
    copy.chat.completions.create(model="gpt-4o", messages=_msgs("plain again"))


def test_anthropics_stream_helper_wakes_the_worker_when_it_sends_on_entering(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.delay = 0.1
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )
    assert onwire._hook in client._client.event_hooks["request"]
    events = _timeline(client, monkeypatch)
    manager = client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
    )
    assert events == []  # nothing sent yet: the send-side job waits
    with manager as stream:
        "".join(stream.text_stream)
    assert [e[0] for e in events] == ["wake", "sent"]
    assert reports[-1].verdict is Verdict.EXPECTED_MISS


def test_a_trace_of_the_callers_own_still_gets_every_event(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    infos: list[Any] = []

    def callers_hook(request: Any) -> None:
        request.extensions["trace"] = lambda name, info: seen.append(name) or infos.append(info)

    raw = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    raw._client.event_hooks = {"request": [callers_hook], "response": []}
    client = sdk.wrap(raw)
    events = _timeline(client, monkeypatch)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("one"))
    assert "http11.send_request_body.complete" in seen and "http11.receive_response_headers.complete" in seen
    assert infos and all(isinstance(info, dict) for info in infos)  # with httpcore's details
    assert [e[0] for e in events].count("wake") == 1


def test_an_async_callers_own_trace_still_gets_every_event(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An async client whose requests carry a trace of the caller's: the trace still gets every step
    with its details, and the worker is woken once, when the body was written."""
    seen: list[tuple[str, Any]] = []

    async def trace(name: str, info: Any) -> None:
        seen.append((name, info))

    async def callers_hook(request: Any) -> None:
        request.extensions["trace"] = trace

    raw = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    raw._client.event_hooks = {"request": [callers_hook], "response": []}
    client = sdk.wrap(raw)
    events = _timeline(client, monkeypatch)

    async def run() -> None:
        await client.chat.completions.create(model="gpt-4o", messages=_msgs("one"))
        await client.close()

    asyncio.run(run())
    names = [name for name, _ in seen]
    assert (
        "http11.send_request_body.complete" in names and "http11.receive_response_headers.complete" in names
    )
    assert all(isinstance(info, dict) for _, info in seen)
    assert [e[0] for e in events].count("wake") == 1


def test_a_client_without_an_http_client_to_hook_wakes_the_worker_when_the_request_is_prepared(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not onwire.install(object())
    monkeypatch.setattr(onwire, "install", lambda client: False)
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), on_report=reports.append
    )
    assert not client._prefixlint_state.on_wire
    events = _timeline(client, monkeypatch)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("one"))
    assert [e[0] for e in events] == ["sent"]  # no wake-up: the job was not lazy
    assert reports[0].verdict is Verdict.EXPECTED_MISS
    sdk.unwrap(client)  # removes no hook it did not add


def test_the_trace_removes_itself_once_the_body_is_written(server: ProviderServer) -> None:
    seen: list[dict[str, Any]] = []
    raw = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    raw._client.event_hooks = {"request": [], "response": [lambda r: seen.append(dict(r.request.extensions))]}
    client = sdk.wrap(raw)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("one"))
    assert seen and "trace" not in seen[0]  # the response's steps were not traced


def test_a_request_the_hook_cannot_trace_still_goes_out_and_is_accounted(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(ext: dict[str, Any]) -> Any:
        raise RuntimeError("simulated tracing bug")

    monkeypatch.setattr(onwire, "_once", broken)
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), on_report=reports.append
    )
    out = client.chat.completions.create(model="gpt-4o", messages=_msgs("one"))
    assert out.choices[0].message.content
    assert sdk.flush(client) and [r.verdict for r in reports] == [Verdict.EXPECTED_MISS]


def test_an_async_trace_removes_itself_once_the_body_is_written(server: ProviderServer) -> None:
    """The same for an async client: the response's steps are not traced."""
    seen: list[dict[str, Any]] = []

    async def on_response(response: Any) -> None:
        seen.append(dict(response.request.extensions))

    raw = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    raw._client.event_hooks = {"request": [], "response": [on_response]}
    client = sdk.wrap(raw)

    async def run() -> None:
        await client.chat.completions.create(model="gpt-4o", messages=_msgs("one"))
        await client.close()

    asyncio.run(run())
    assert seen and "trace" not in seen[0]
