"""The SDK wrapper over real openai clients and real HTTP against a local provider-shaped server."""

from __future__ import annotations

import asyncio
import base64
import gc
import inspect
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport, Verdict, sightings

SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))
SECRET = base64.b64encode(bytes(range(32))).decode()


@pytest.fixture
def server(provider_server: ProviderServer) -> ProviderServer:
    return provider_server


@pytest.fixture(autouse=True)
def _reset(server: ProviderServer) -> None:
    server.reset()
    sdk.forget()  # the server's caches are empty again: so is this process's view of them
    server.salt_mode = False


def _client(server: ProviderServer, reports: list[CacheReport], key: str = "k1", **opts) -> openai.OpenAI:
    return sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0),
        on_report=reports.append,
        **opts,
    )


def _msgs(user: str, system: str = SYSTEM) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def test_wrap_returns_the_same_client_and_reports_miss_then_hit(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    raw = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    client = sdk.wrap(raw, tenant="acme", on_report=reports.append)
    assert client is raw and isinstance(client, openai.OpenAI)
    first = client.chat.completions.create(model="gpt-4o", messages=_msgs("one"))
    assert first.choices[0].message.content == "ok"
    client.chat.completions.create(model="gpt-4o", messages=_msgs("two"))
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
    assert reports[0].causes == ("new prefix",)
    assert [r.breakpoints for r in reports] == [0, 0]  # an OpenAI request has no cache_control breakpoints
    hit = reports[1]
    assert hit.reported_cached and hit.reported_cached >= 1024
    assert abs(hit.predicted_cached - hit.reported_cached) <= 128
    assert hit.tokens_saved == hit.reported_cached and hit.usd_saved > 0
    snap = sdk.stats(client)
    assert snap.requests == 2 and snap.verdicts == {"expected_miss": 1, "hit": 1}
    assert snap.verified == 2
    assert snap.prompt_tokens == sum(r.prompt_tokens for r in reports)
    assert snap.cached_tokens == hit.reported_cached == snap.tokens_saved
    assert snap.usd_saved == pytest.approx(hit.usd_saved)
    assert snap.hit_rate == pytest.approx(hit.reported_cached / snap.prompt_tokens)


def test_prompt_cache_key_hides_the_tenant_and_separates_tenants(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prefixlint_tenant="acme-corp")
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"), prefixlint_tenant="acme-corp")
    with sdk.tenant("globex"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("c"))
    keys = [body["prompt_cache_key"] for body in server.requests]
    assert keys[0] == keys[1] != keys[2]
    assert all("acme" not in k and "globex" not in k and k.startswith("pfx-") for k in keys)
    assert reports[0].tenant_hash != reports[2].tenant_hash
    assert "acme" not in repr(reports[0])


def test_require_tenant_fails_closed_before_sending(server: ProviderServer) -> None:
    client = _client(server, [], require_tenant=True)
    with pytest.raises(sdk.TenantRequiredError):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("x"))
    assert server.requests == []
    client.chat.completions.create(model="gpt-4o", messages=_msgs("x"), prefixlint_tenant="t")
    assert len(server.requests) == 1


def test_volatile_values_leave_the_static_prefix_identical(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme")
    for day, rid in (("2026-11-28", "req-1"), ("2026-11-29", "req-2")):
        stamp = sdk.volatile(f"Today is {day}", "date")
        system = [{"type": "text", "text": SYSTEM}, {"type": "text", "text": stamp}]
        client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "system", "content": system}, {"role": "user", "content": "hi"}],
            prefixlint_volatile={"request_id": rid},
        )
    a, b = server.requests
    static_system = {"role": "system", "content": [{"type": "text", "text": SYSTEM}]}
    assert a["messages"][0] == b["messages"][0] == static_system
    assert a["messages"][1]["content"][0] == b["messages"][1]["content"][0] == {"type": "text", "text": "hi"}
    tail = b["messages"][1]["content"][1]["text"]
    assert "Today is 2026-11-29" in tail and "request_id: req-2" in tail
    assert a["prompt_cache_key"] == b["prompt_cache_key"]
    assert reports[1].verdict is Verdict.HIT
    # everything but the trailing volatile block is served from cache
    assert reports[1].reported_cached >= reports[1].prompt_tokens - 128 - 30


def test_drift_names_the_first_divergence(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, keep_excerpts=True)
    for stamp in ("12:00:01", "12:00:02"):
        system = SYSTEM[:5000] + f" The time is {stamp}. " + SYSTEM[5000:]
        client.chat.completions.create(
            model="gpt-4o", messages=_msgs("same", system), prefixlint_template="support-bot"
        )
    drift = reports[1]
    assert drift.verdict is Verdict.DRIFT
    d = drift.divergence
    assert d is not None and d.path == "messages[0].content"
    assert 1100 < d.token_index < 1800
    assert d.before is not None and "12:00:01" in d.before and "12:00:02" in (d.after or "")
    assert 0 < drift.reported_cached < drift.prompt_tokens


def test_no_excerpts_by_default(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    for s in ("a", "b"):
        client.chat.completions.create(
            model="gpt-4o", messages=_msgs("q", s + SYSTEM), prefixlint_template="t"
        )
    assert reports[1].verdict is Verdict.DRIFT
    assert reports[1].divergence.before is None and reports[1].divergence.after is None


def test_conversation_growing_turn_by_turn_is_not_drift(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme")
    history = [{"role": "system", "content": SYSTEM}]
    for turn in range(3):
        history.append({"role": "user", "content": f"question {turn}"})
        client.chat.completions.create(model="gpt-4o", messages=history, prefixlint_conversation="c1")
        history.append({"role": "assistant", "content": "ok"})
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT, Verdict.HIT]
    # rewriting history in the same conversation is drift
    history[1] = {"role": "user", "content": "edited"}
    client.chat.completions.create(model="gpt-4o", messages=history, prefixlint_conversation="c1")
    assert reports[-1].verdict is Verdict.DRIFT and reports[-1].divergence.path == "messages[1].content"


def test_over_reporting_server_gives_unexpected_hit(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    server.mode = "over"
    for i in range(3):
        fresh = " ".join(f"topic{i}-{j}" for j in range(700))
        client.chat.completions.create(model="gpt-4o", messages=_msgs("q", fresh))
    assert all(r.verdict is Verdict.UNEXPECTED_HIT for r in reports)
    assert reports[0].reported_cached >= 0.96 * reports[0].prompt_tokens
    assert sdk.stats(client).verdicts == {"unexpected_hit": 3}


def test_under_reporting_server_gives_unexpected_miss(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    server.mode = "under"
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    assert reports[1].verdict is Verdict.UNEXPECTED_MISS
    assert "eviction" in reports[1].causes


def test_routing_overflow_is_named(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme")
    for i in range(17):
        if i == 16:
            server.mode = "under"
        client.chat.completions.create(model="gpt-4o", messages=_msgs(f"q{i}"))
    assert reports[-1].verdict is Verdict.UNEXPECTED_MISS
    assert any(c.startswith("routing overflow") for c in reports[-1].causes)


def test_streaming_chat_with_and_without_usage(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    stream = client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "w0 w1 w2 "
    assert "stream_options" not in server.requests[-1]
    unverified = reports[-1]
    assert unverified.verdict is Verdict.UNVERIFIED and unverified.reported_cached is None
    assert unverified.prompt_tokens is None and unverified.tokens_saved == 0 and unverified.usd_saved == 0
    assert (unverified.cache_write, unverified.cache_write_5m, unverified.cache_write_1h) == (0, 0, 0)
    opted = _client(server, reports, key="k2", include_usage=True)
    chunks = list(opted.chat.completions.create(model="gpt-4o", messages=_msgs("b"), stream=True))
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert server.requests[-1]["stream_options"] == {"include_usage": True}
    assert reports[-1].verdict is Verdict.EXPECTED_MISS and reports[-1].reported_cached == 0
    assert reports[-1].stream


def test_verification_off_reports_usage_without_a_verdict(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, verify=False)
    for word in ("one", "two"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs(word))
    assert [r.verdict for r in reports] == [Verdict.UNVERIFIED, Verdict.UNVERIFIED]
    assert reports[1].causes == ("verification is off (verify=False)",)
    hit = reports[1]
    assert hit.reported_cached and hit.reported_cached >= 1024  # the usage is still read and counted
    assert hit.tokens_saved == hit.reported_cached and hit.usd_saved > 0
    assert hit.predicted_cached == 0 and hit.prompt_tokens
    assert abs(hit.local_prompt_tokens - hit.prompt_tokens) <= hit.prompt_tokens // 20  # still counted here
    assert sdk.stats(client).cached_tokens == hit.reported_cached


def test_stream_closed_early_or_abandoned_still_reports(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    server.chunks = 50
    try:
        client = _client(server, reports, include_usage=True)
        stream = client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), stream=True)
        next(iter(stream))
        stream.close()
        assert len(reports) == 1 and reports[0].verdict is Verdict.UNVERIFIED
        with client.chat.completions.create(model="gpt-4o", messages=_msgs("b"), stream=True) as s2:
            next(iter(s2))
        assert len(reports) == 2
        s3 = client.chat.completions.create(model="gpt-4o", messages=_msgs("c"), stream=True)
        next(iter(s3))
        del s3
        gc.collect()
        assert len(reports) == 3
    finally:
        server.chunks = 3


def test_responses_api_plain_and_streaming(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme")
    client.responses.create(model="gpt-4o", instructions=SYSTEM, input="one")
    resp = client.responses.create(model="gpt-4o", instructions=SYSTEM, input="two")
    assert resp.output_text == "ok"
    assert reports[1].verdict is Verdict.HIT and reports[1].api == "responses"
    events = list(client.responses.create(model="gpt-4o", instructions=SYSTEM, input="three", stream=True))
    assert events[-1].type == "response.completed"
    assert reports[2].verdict is Verdict.HIT and reports[2].stream
    assert "prompt_cache_key" in server.requests[-1]


def test_raw_responses_are_accounted_and_raw_streams_pass_through(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=_msgs("b"))
    assert raw.headers.get("content-type") == "application/json"
    assert raw.parse().choices[0].message.content == "ok"
    assert reports[-1].verdict is Verdict.HIT and reports[-1].reported_cached
    raw_stream = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=_msgs("c"), stream=True
    )
    assert len(list(raw_stream.parse())) == 3
    assert reports[-1].verdict is Verdict.UNVERIFIED
    with client.chat.completions.with_streaming_response.create(model="gpt-4o", messages=_msgs("d")) as resp:
        assert resp.parse().usage.prompt_tokens > 0
    assert len(reports) == 4 and len(server.requests) == 4


def test_unwrap_restores_and_double_wrap_is_harmless(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme")
    assert sdk.wrap(client, tenant="other") is client
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    assert len(reports) == 1
    assert sdk.unwrap(client) is client and not sdk.is_wrapped(client)
    assert not hasattr(client.chat.completions.create, "_prefixlint")
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    assert len(reports) == 1 and "prompt_cache_key" not in server.requests[-1]
    with pytest.raises(ValueError):
        sdk.stats(client)


def test_broken_callback_and_malformed_usage_never_break_the_call(server: ProviderServer, caplog) -> None:
    def boom(report: CacheReport) -> None:
        raise RuntimeError("callback bug")

    client = sdk.wrap(openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), on_report=boom)
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        out = client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    assert out.choices[0].message.content == "ok"
    assert "on_report callback failed" in caplog.text
    state = client._prefixlint_state
    call = state.prepare("chat", {"model": "gpt-4o", "messages": _msgs("x")})[1]
    state.account.done(call, {"prompt_tokens": "lots", "prompt_tokens_details": ["bad"]})  # no exception
    state.account.done(call, object())
    assert sdk.stats(client).verdicts.get("unverified") == 2


@pytest.mark.parametrize(
    ("target", "where"),
    [
        ("prefixlint.sdk.state.rewrite", "could not prepare the request"),
        ("prefixlint.sdk.accounting.Accountant.report", "could not build the cache report"),
        ("prefixlint.sdk.state.observe_any", "accounting failed"),
        ("prefixlint.sdk.accounting.Accountant._begun", "accounting job failed"),
    ],
)
def test_an_internal_error_never_reaches_the_caller(
    server: ProviderServer, caplog, monkeypatch, target: str, where: str
) -> None:
    """A bug inside prefixlint (simulated) is logged; the caller's call returns its normal result."""

    def broken(*args, **kwargs):
        raise RuntimeError("simulated prefixlint bug")

    monkeypatch.setattr(target, broken)
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme", include_usage=True)
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        out = client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
        chunks = list(client.chat.completions.create(model="gpt-4o", messages=_msgs("b"), stream=True))
        sdk.flush()
    assert out.choices[0].message.content == "ok"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "w0 w1 w2 "
    assert where in caplog.text and "simulated prefixlint bug" in caplog.text
    assert len(server.requests) == 2
    assert all(body["prompt_cache_key"].startswith("pfx-") for body in server.requests)  # tenancy kept


def test_canonicalization_is_opt_in(server: ProviderServer) -> None:
    zeta = {"parameters": {"type": "object", "properties": {}}, "name": "zeta"}
    tools = [
        {"type": "function", "function": zeta},
        {"type": "function", "function": {"name": "alpha", "parameters": {"type": "object"}}},
    ]
    plain = _client(server, [])
    plain.chat.completions.create(model="gpt-4o", messages=_msgs("a\r\n"), tools=tools)
    assert server.requests[-1]["tools"] == tools and server.requests[-1]["messages"][1]["content"] == "a\r\n"
    canon = _client(
        server,
        [],
        key="k2",
        sort_keys=True,
        sort_tools=True,
        normalize_newlines=True,
        strip_trailing_whitespace=True,
    )
    canon.chat.completions.create(
        model="gpt-4o",
        messages=_msgs("a  \r\nb"),
        tools=tools,
        response_format={"type": "json_schema", "json_schema": {"schema": {}, "name": "x"}},
    )
    sent = server.requests[-1]
    assert [t["function"]["name"] for t in sent["tools"]] == ["alpha", "zeta"]
    assert list(sent["tools"][1]["function"]) == ["name", "parameters"]
    assert list(sent["response_format"]["json_schema"]) == ["name", "schema"]
    assert sent["messages"][1]["content"] == "a\nb"


def test_dry_run_reports_changes_without_sending_them(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme", dry_run=True, include_usage=True)
    system = [{"type": "text", "text": SYSTEM}, {"type": "text", "text": sdk.volatile("now")}]
    list(
        client.chat.completions.create(
            model="gpt-4o",
            stream=True,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": "q"}],
        )
    )
    sent = server.requests[-1]
    assert "prompt_cache_key" not in sent and "stream_options" not in sent
    assert sent["messages"][0]["content"][1]["text"] == "now"
    changes = reports[-1].changes
    assert reports[-1].dry_run
    assert any("prompt_cache_key" in c for c in changes) and any("volatile" in c for c in changes)
    assert any("include_usage" in c for c in changes)


def test_cache_key_fn_derives_the_key(server: ProviderServer) -> None:
    seen: list[sdk.RequestInfo] = []

    def key_fn(info: sdk.RequestInfo) -> str:
        seen.append(info)
        return f"session-{info.conversation}"

    client = _client(server, [], cache_key_fn=key_fn)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prefixlint_conversation="42")
    assert server.requests[-1]["prompt_cache_key"] == "session-42"
    assert seen[0].model == "gpt-4o" and len(seen[0].prefix_hash) == 16


def test_low_hit_rate_callback(server: ProviderServer) -> None:
    alarms: list[tuple[str, str, float]] = []
    client = _client(
        server,
        [],
        tenant="acme",
        hit_rate_threshold=0.5,
        hit_rate_window=3,
        on_low_hit_rate=lambda kind, key, rate: alarms.append((kind, key, rate)),
    )
    server.mode = "under"
    for i in range(4):
        client.chat.completions.create(model="gpt-4o", messages=_msgs(f"q{i}"), prefixlint_template="bot")
    assert {kind for kind, _, _ in alarms} == {"tenant", "template"}
    assert all(rate == 0 for _, _, rate in alarms) and len(alarms) == 2  # fired once each


def test_vllm_cache_salt_isolates_tenants(server: ProviderServer) -> None:
    server.salt_mode = True
    reports: list[CacheReport] = []
    client = _client(server, reports, provider="vllm", salt_secret=SECRET)
    with sdk.tenant("acme"):
        client.chat.completions.create(model="llama", messages=_msgs("a"))
        client.chat.completions.create(model="llama", messages=_msgs("b"))
    with sdk.tenant("globex"):
        client.chat.completions.create(model="llama", messages=_msgs("c"))
    salts = [b["cache_salt"] for b in server.requests]
    assert salts[0] == salts[1] != salts[2] and len(salts[0]) == 43
    assert SECRET not in salts[0] and "acme" not in salts[0]
    assert "prompt_cache_key" not in server.requests[0]
    # vLLM omits cached_tokens when 0: that is a miss, not "unverified"
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT, Verdict.EXPECTED_MISS]
    assert reports[2].reported_cached == 0 and reports[1].salted


def test_a_vllm_sighting_counted_to_bound_memory_stays_cached_hours_later(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one sighting allowed to wait, a second prompt makes the first one be counted: under vLLM
    (no TTL) it is still cacheable hours later, so it is recorded, not dropped as expired."""
    monkeypatch.setattr(sightings, "MAX_WAITING", 1)
    server.salt_mode = True
    now = [1_000_000.0]
    reports: list[CacheReport] = []
    client = _client(server, reports, provider="vllm", salt_secret=SECRET, clock=lambda: now[0])
    other = "You are a terse translator. " + " ".join(f"term{i}" for i in range(900))
    with sdk.tenant("acme"):
        for system in (SYSTEM, other, SYSTEM):
            client.chat.completions.create(model="llama", messages=_msgs("q", system=system))
            now[0] += 3 * 3600
    sdk.flush()
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.EXPECTED_MISS, Verdict.HIT]


def test_send_cache_salt_false_sends_no_salt_even_with_a_secret(server: ProviderServer) -> None:
    server.salt_mode = True
    reports: list[CacheReport] = []
    client = _client(server, reports, provider="vllm", salt_secret=SECRET, send_cache_salt=False)
    with sdk.tenant("acme"):
        client.chat.completions.create(model="llama", messages=_msgs("a"))
    sdk.flush()
    (body,) = server.requests
    assert "cache_salt" not in body and "prompt_cache_key" not in body
    assert not reports[0].salted


def test_async_two_tenants_concurrently(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        on_report=reports.append,
        include_usage=True,
    )

    async def tenant_run(name: str) -> None:
        with sdk.tenant(name):
            for i in range(3):
                await asyncio.sleep(0)
                if i == 2:
                    stream = await client.chat.completions.create(
                        model="gpt-4o", messages=_msgs(f"{name}{i}"), stream=True
                    )
                    async for _ in stream:
                        pass
                else:
                    await client.chat.completions.create(model="gpt-4o", messages=_msgs(f"{name}{i}"))

    async def main() -> None:
        await asyncio.gather(tenant_run("acme"), tenant_run("globex"))
        await client.close()

    asyncio.run(main())
    assert len(reports) == 6
    by_tenant: dict[str | None, list[CacheReport]] = {}
    for r in reports:
        by_tenant.setdefault(r.tenant_hash, []).append(r)
    assert len(by_tenant) == 2
    keys = {b["prompt_cache_key"] for b in server.requests}
    assert len(keys) == 2
    for rs in by_tenant.values():
        assert len({r.cache_key for r in rs}) == 1
        assert rs[-1].verdict is Verdict.HIT


def test_async_raw_response(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), on_report=reports.append
    )

    async def main() -> None:
        raw = await client.chat.completions.with_raw_response.create(model="gpt-4o", messages=_msgs("a"))
        assert raw.parse().usage.prompt_tokens > 0
        resp = await client.responses.create(model="gpt-4o", instructions=SYSTEM, input="x", stream=True)
        async for _ in resp:
            pass
        await client.close()

    asyncio.run(main())
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]


def test_azure_client_is_detected(server: ProviderServer) -> None:
    client = openai.AzureOpenAI(azure_endpoint=server.url, api_key="k", api_version="2026-01-01")
    assert sdk.detect_provider(client) == "azure"
    sdk.wrap(client)
    assert sdk.is_wrapped(client) and client._prefixlint_state.provider == "azure"


def test_background_accounting_gives_the_same_reports(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme", background=True, include_usage=True)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    list(client.chat.completions.create(model="gpt-4o", messages=_msgs("c"), stream=True))
    assert sdk.flush(client)
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT, Verdict.HIT]
    assert sdk.stats(client).requests == 3


def test_structured_output_parse_is_wrapped_sync_and_async(server: ProviderServer) -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        answer: str

    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme")
    first = client.chat.completions.parse(model="gpt-4o", messages=_msgs("one"), response_format=Answer)
    second = client.chat.completions.parse(model="gpt-4o", messages=_msgs("two"), response_format=Answer)
    assert first.choices[0].message.parsed == Answer(answer="ok") == second.choices[0].message.parsed
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
    sent = server.requests[-1]
    assert sent["response_format"]["type"] == "json_schema" and sent["prompt_cache_key"]

    async def run() -> None:
        async_reports: list[CacheReport] = []
        aclient = sdk.wrap(
            openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0),
            tenant="acme",
            on_report=async_reports.append,
        )
        system = "Async rules. " + SYSTEM
        for user in ("three", "four"):
            got = await aclient.chat.completions.parse(
                model="gpt-4o", messages=_msgs(user, system), response_format=Answer
            )
            assert got.choices[0].message.parsed == Answer(answer="ok")
        assert [r.verdict for r in async_reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
        await aclient.close()

    asyncio.run(run())


def test_chat_stream_helper_is_accounted_through_create(server: ProviderServer) -> None:
    """``chat.completions.stream()`` sends its request through the instance's ``create``, which the
    wrapper patched: one report per request, sync and async."""
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme", include_usage=True)
    texts = []
    for user in ("one", "two"):
        with client.chat.completions.stream(model="gpt-4o", messages=_msgs(user)) as stream:
            for _ in stream:
                pass
            texts.append(stream.get_final_completion().choices[0].message.content)
    assert texts[0] and texts[0] == texts[1]
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
    assert server.requests[-1]["stream"] and server.requests[-1]["stream_options"] == {"include_usage": True}

    async def run() -> None:
        async_reports: list[CacheReport] = []
        aclient = sdk.wrap(
            openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0),
            tenant="acme",
            include_usage=True,
            on_report=async_reports.append,
        )
        system = "Async stream rules. " + SYSTEM
        for user in ("three", "four"):
            async with aclient.chat.completions.stream(model="gpt-4o", messages=_msgs(user, system)) as s:
                async for _ in s:
                    pass
        assert [r.verdict for r in async_reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
        await aclient.close()

    asyncio.run(run())


def test_after_an_internal_error_the_request_keeps_its_tenant_key_as_derived(
    server: ProviderServer, monkeypatch
) -> None:
    """Preparing fails: the request goes out as given plus the tenant's key (no prefix in it), the
    caller's own key or extra fields are kept, and a custom key function is never second-guessed."""
    from prefixlint.sdk.tenancy import derive_prompt_cache_key

    def broken(*args, **kwargs):
        raise RuntimeError("simulated prefixlint bug")

    monkeypatch.setattr("prefixlint.sdk.state.rewrite", broken)
    client = _client(server, [], tenant="acme")
    secret = client._prefixlint_state.secret
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), extra_body={"user_field": 1})
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"), prompt_cache_key="mine")
    client.chat.completions.create(model="gpt-4o", messages=_msgs("c"), extra_body={"prompt_cache_key": "eb"})
    first, given, in_extra = server.requests
    assert first["prompt_cache_key"] == derive_prompt_cache_key("acme", "", secret)
    assert first["user_field"] == 1
    assert given["prompt_cache_key"] == "mine"
    assert in_extra["prompt_cache_key"] == "eb"

    custom = _client(server, [], key="k2", tenant="acme", cache_key_fn=lambda info: "custom")
    custom.chat.completions.create(model="gpt-4o", messages=_msgs("d"))
    assert "prompt_cache_key" not in server.requests[-1]


def test_clients_of_different_servers_do_not_share_predictions(server: ProviderServer) -> None:
    """The same API key on another base URL is another cache: what one server cached is not
    predicted on the other."""
    other = ProviderServer().start()
    try:
        reports: list[CacheReport] = []
        _client(server, reports).chat.completions.create(model="gpt-4o", messages=_msgs("a"))
        there = sdk.wrap(
            openai.OpenAI(base_url=other.url + "/v1", api_key="k1", max_retries=0), on_report=reports.append
        )
        there.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    finally:
        other.stop()
    assert [(r.verdict, r.predicted_cached) for r in reports] == [(Verdict.EXPECTED_MISS, 0)] * 2


def test_patched_methods_keep_the_originals_name_doc_and_signature(server: ProviderServer) -> None:
    """Each patched method reads like the client's own (name, qualified name, docstring, signature,
    ``__wrapped__``) and carries the wrapper's marker."""
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    resources = [
        (client.chat.completions, "create"),
        (client.chat.completions, "parse"),
        (client.responses, "create"),
    ]
    originals = [getattr(resource, name) for resource, name in resources]
    sdk.wrap(client)
    for (resource, name), orig in zip(resources, originals, strict=True):
        patched = resource.__dict__[name]
        assert (patched.__name__, patched.__qualname__, patched.__doc__) == (
            orig.__name__,
            orig.__qualname__,
            orig.__doc__,
        )
        assert patched.__wrapped__ == orig and patched._prefixlint is True
        assert inspect.signature(patched) == inspect.signature(orig)
    assert client.chat.completions.parse.__doc__  # one that has a docstring keeps it


def test_raw_helpers_built_before_wrapping_go_through_the_wrapper(server: ProviderServer) -> None:
    """``with_raw_response`` read before ``wrap`` (and cached by the client) is rebuilt from the
    patched method: its calls are accounted."""
    reports: list[CacheReport] = []
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    assert client.chat.completions.with_raw_response is client.chat.completions.with_raw_response  # cached
    sdk.wrap(client, on_report=reports.append)
    client.chat.completions.with_raw_response.create(model="gpt-4o", messages=_msgs("a"))
    assert len(reports) == 1


def test_wrapping_again_applies_the_new_alarm_settings(server: ProviderServer) -> None:
    """A second ``wrap`` with a hit-rate threshold and window: the low hit rate of a full window of
    the new size raises the alarm."""
    alarms: list[tuple[str, str, float]] = []
    client = _client(server, [])
    sdk.wrap(client, hit_rate_threshold=0.5, hit_rate_window=2, on_low_hit_rate=lambda *a: alarms.append(a))
    server.mode = "under"
    for user in ("a", "b"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs(user))
    assert [kind for kind, _, rate in alarms if rate == 0.0] == ["tenant", "template"]


class _Completions:
    """A chat resource of a client-like object: an async ``create`` (its class name says nothing)."""

    def __init__(self, inner: openai.AsyncOpenAI) -> None:
        self.inner = inner

    async def create(self, **kwargs):  # type: ignore[no-untyped-def]
        return await self.inner.chat.completions.create(**kwargs)


class _Responses:
    def __init__(self, inner: openai.AsyncOpenAI) -> None:
        self.inner = inner

    async def create(self, **kwargs):  # type: ignore[no-untyped-def]
        return await self.inner.responses.create(**kwargs)


class _Shim:
    """An openai-shaped client (no ``chat.completions.parse``, as in older releases)."""

    def __init__(self, inner: openai.AsyncOpenAI) -> None:
        self.base_url = inner.base_url
        self.api_key = inner.api_key
        self.chat = type("Chat", (), {})()
        self.chat.completions = _Completions(inner)
        self.responses = _Responses(inner)


def test_a_client_like_object_is_wrapped_by_what_its_methods_are(server: ProviderServer) -> None:
    """A missing method is skipped, not fatal, and the methods after it are still wrapped; an
    ``async def`` method is awaited for its usage whatever its class is called. An object with no
    resource to wrap is refused, by name."""
    reports: list[CacheReport] = []
    inner = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    shim = sdk.wrap(_Shim(inner), on_report=reports.append)

    async def main() -> None:
        await shim.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
        await shim.responses.create(model="gpt-4o", instructions=SYSTEM, input="b")
        await inner.close()

    asyncio.run(main())
    assert [r.api for r in reports] == ["chat", "responses"]
    assert all(r.reported_cached is not None and r.prompt_tokens for r in reports)

    class Bare:
        pass

    with pytest.raises(sdk.SdkConfigError, match=r"^Bare has no chat, responses or messages resource"):
        sdk.wrap(Bare())


def test_a_callers_own_prompt_cache_key_is_kept(server: ProviderServer) -> None:
    """A key the caller set, as a keyword or in ``extra_body``, is sent as given: no tenant key
    replaces it or is added next to it."""
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme")
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prompt_cache_key="mine")
    client.chat.completions.create(
        model="gpt-4o", messages=_msgs("a"), extra_body={"prompt_cache_key": "too"}
    )
    assert [b["prompt_cache_key"] for b in server.requests] == ["mine", "too"]
    assert [r.cache_key for r in reports] == ["mine", "too"]
    assert not any("prompt_cache_key: set" in r.changes for r in reports)


def test_cache_key_fn_sees_the_request_as_prefixlint_does(server: ProviderServer) -> None:
    """``cache_key_fn`` gets the provider, model, API, tenant, template and conversation."""
    seen: list[sdk.RequestInfo] = []
    client = _client(server, [], tenant="acme", cache_key_fn=lambda info: seen.append(info) or "k")
    client.responses.create(model="gpt-4o", instructions=SYSTEM, input="x", prefixlint_template="faq")
    info = seen[0]
    assert (info.provider, info.model, info.api, info.tenant) == ("openai", "gpt-4o", "responses", "acme")
    assert (info.template, info.conversation) == ("faq", None)


def test_the_messages_api_never_gets_a_prompt_cache_key(server: ProviderServer) -> None:
    """Even under a provider whose rules take ``prompt_cache_key``, an Anthropic messages request is
    sent without one."""
    import anthropic

    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), provider="openai", tenant="acme"
    )
    client.messages.create(
        model="gpt-4o", max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
    )
    assert "prompt_cache_key" not in server.requests[-1]


def test_responses_system_input_messages_make_the_prefix_hash(server: ProviderServer) -> None:
    """A Responses request whose static head is a developer message in ``input``: another head,
    another prefix hash (and tenant key)."""
    reports: list[CacheReport] = []
    client = _client(server, reports, tenant="acme")
    for system in (SYSTEM, "Other rules. " + SYSTEM):
        msgs = [{"role": "developer", "content": system}, {"role": "user", "content": "q"}]
        client.responses.create(model="gpt-4o", input=msgs)
    assert reports[0].prefix_hash and reports[0].prefix_hash != reports[1].prefix_hash
    assert server.requests[0]["prompt_cache_key"] != server.requests[1]["prompt_cache_key"]


def test_a_new_head_is_not_counted_and_without_verification_nothing_is_predicted(
    server: ProviderServer,
) -> None:
    """A head new to the process is reported uncounted (nothing of it can be cached yet). With
    ``verify=False`` every request is counted here, and no prediction or drift is made."""
    reports: list[CacheReport] = []
    _client(server, reports).chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    assert not reports[0].counted and reports[0].local_prompt_tokens == 0
    off = _client(server, reports, key="k2", verify=False)
    for tail in ("Version 1.", "Version 2."):
        off.chat.completions.create(
            model="gpt-4o", messages=_msgs("a", "Other. " + SYSTEM + tail), prefixlint_template="t"
        )
    assert all(r.counted and r.local_prompt_tokens > 1024 for r in reports[1:])
    assert [r.divergence for r in reports[1:]] == [None, None]


def test_drift_compares_the_requests_of_one_template(server: ProviderServer) -> None:
    """Two templates with different tails are not drift of each other; a changed tail within one is."""
    reports: list[CacheReport] = []
    client = _client(server, reports)
    for template, tail in (("a", "Tail A."), ("b", "Tail B."), ("a", "Tail A."), ("a", "Tail A2.")):
        client.chat.completions.create(
            model="gpt-4o", messages=_msgs("q", SYSTEM + tail), prefixlint_template=template
        )
    assert [r.divergence is not None for r in reports] == [False, False, False, True]


def test_an_extended_retention_is_predicted_past_the_default_ttl(server: ProviderServer) -> None:
    """``prompt_cache_retention="24h"``: two hours later (past the 10-minute default) the prefix is
    still predicted cached."""
    now = [1_000_000.0]
    reports: list[CacheReport] = []
    client = _client(server, reports, clock=lambda: now[0])
    for user in ("a", "b"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs(user), prompt_cache_retention="24h")
        now[0] += 2 * 3600
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
    assert reports[1].predicted_cached > 1024


def test_an_extended_retention_holds_for_every_turn_of_a_growing_conversation(server: ProviderServer) -> None:
    """Each turn of a ``prompt_cache_retention="24h"`` conversation, two hours apart, is predicted from
    the turn before it: what each request wrote lives 24 hours, not the 10-minute default."""
    now = [1_000_000.0]
    reports: list[CacheReport] = []
    client = _client(server, reports, clock=lambda: now[0])
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    for turn in range(4):
        messages = [*messages, {"role": "user", "content": f"question {turn} " + "detail " * 300}]
        resp = client.chat.completions.create(model="gpt-4o", messages=messages, prompt_cache_retention="24h")
        messages = [*messages, {"role": "assistant", "content": resp.choices[0].message.content}]
        now[0] += 2 * 3600
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS] + [Verdict.HIT] * 3
    predicted = [r.predicted_cached for r in reports]
    assert predicted[1] < predicted[2] < predicted[3]


def test_a_failed_request_with_an_extended_retention_may_stay_cached_past_the_default_ttl(
    server: ProviderServer,
) -> None:
    """A request that failed after the provider cached its prompt may still be cached: under
    ``prompt_cache_retention="24h"`` it stays in the upper bound two hours later, so a hit on it is
    within the prediction, not an alarm."""
    now = [1_000_000.0]
    reports: list[CacheReport] = []
    client = _client(server, reports, clock=lambda: now[0])
    first = _msgs("question one " + "detail " * 300)
    client.chat.completions.create(model="gpt-4o", messages=first, prompt_cache_retention="24h")
    now[0] += 60
    second = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more " * 300}]
    server.fail_next = 1
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="gpt-4o", messages=second, prompt_cache_retention="24h")
    now[0] += 2 * 3600
    third = [*second, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "last"}]
    client.chat.completions.create(model="gpt-4o", messages=third, prompt_cache_retention="24h")
    sdk.flush()
    last = reports[-1]
    assert last.reported_cached > reports[0].prompt_tokens  # the failed request's prompt was cached
    assert last.verdict is not Verdict.UNEXPECTED_HIT and last.upper_bound >= last.reported_cached


def test_a_first_request_counted_while_in_flight_keeps_its_extended_retention(server: ProviderServer) -> None:
    """A first request is counted by a second one with its head while it is still in flight; when its
    response begins, what it wrote is recorded under its own ``prompt_cache_retention="24h"``, so two
    hours later a request that extends it is predicted cached."""
    now = [1_000_000.0]
    reports: list[CacheReport] = []
    client = _client(server, reports, clock=lambda: now[0])
    first = _msgs("question one " + "detail " * 300)
    server.delay = 1.0
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(
            client.chat.completions.create, model="gpt-4o", messages=first, prompt_cache_retention="24h"
        )
        deadline = time.monotonic() + 5
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sdk.flush(timeout=2)  # the first request is recorded; its response has not begun
        client.chat.completions.create(model="gpt-4o", messages=_msgs("other"), prompt_cache_retention="24h")
        pending.result()
    server.delay = 0.0
    now[0] += 2 * 3600
    third = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "last"}]
    client.chat.completions.create(model="gpt-4o", messages=third, prompt_cache_retention="24h")
    sdk.flush()
    last = reports[-1]
    assert last.reported_cached > 1500  # the first request's question is cached too
    assert last.verdict is Verdict.HIT and last.predicted_cached == last.reported_cached


def test_the_routing_rate_counts_one_organisation(server: ProviderServer) -> None:
    """Requests of another API key (another organisation) do not add to a key's routing rate."""
    reports: list[CacheReport] = []
    one, two = _client(server, reports, key="k1"), _client(server, reports, key="k2")
    for i in range(8):
        one.chat.completions.create(model="gpt-4o", messages=_msgs(f"q{i}"))
        two.chat.completions.create(model="gpt-4o", messages=_msgs(f"q{i}"))
    server.mode = "under"
    two.chat.completions.create(model="gpt-4o", messages=_msgs("last"))
    assert reports[-1].verdict is Verdict.UNEXPECTED_MISS
    assert not any(c.startswith("routing overflow") for c in reports[-1].causes)


def test_copies_keep_the_arguments_and_read_like_the_clients_own(server: ProviderServer) -> None:
    """``copy``/``with_options`` of a wrapped client get the caller's arguments (positional ones too,
    which the client refuses) and keep the client's docstring and ``__wrapped__``."""
    client = _client(server, [])
    for name in ("copy", "with_options"):
        patched = getattr(client, name)
        orig = getattr(type(client), name).__get__(client)
        assert patched.__doc__ == orig.__doc__ and patched.__doc__ and patched.__wrapped__ == orig
        assert patched(timeout=12.5).timeout == 12.5
        with pytest.raises(TypeError):
            patched(12.5)


class _OldCompletions:
    """A chat resource whose ``create`` takes no ``prompt_cache_key`` keyword (older openai releases)."""

    def __init__(self, inner: openai.OpenAI) -> None:
        self.inner = inner

    def create(self, *, model: str, messages: list, extra_body: dict | None = None):  # type: ignore[no-untyped-def]
        return self.inner.chat.completions.create(model=model, messages=messages, extra_body=extra_body)


class _OldClient:
    def __init__(self, inner: openai.OpenAI) -> None:
        self.base_url, self.api_key = inner.base_url, inner.api_key
        self.chat = type("Chat", (), {})()
        self.chat.completions = _OldCompletions(inner)


def test_a_method_without_the_key_keyword_gets_it_in_extra_body(server: ProviderServer) -> None:
    """The tenant key goes in ``extra_body`` when the method takes no ``prompt_cache_key`` keyword,
    next to the caller's own ``extra_body`` fields."""
    inner = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    old = sdk.wrap(_OldClient(inner), tenant="acme")
    old.chat.completions.create(model="gpt-4o", messages=_msgs("a"), extra_body={"seed": 3})
    sent = server.requests[-1]
    assert sent["seed"] == 3 and sent["prompt_cache_key"].startswith("pfx-")


def test_each_model_is_counted_with_its_own_tokenizer_and_rules(server: ProviderServer) -> None:
    """One client, two models: gpt-4 is counted with cl100k (as the server counts), not with gpt-4o's
    o200k; and a model's own rules hold (gpt-5.5 keeps its prefix for a day, at its own price)."""
    now = [1_000_000.0]
    reports: list[CacheReport] = []
    client = _client(server, reports, clock=lambda: now[0])
    text = "Die Größenordnung der Überprüfung 12345 ñandú, 東京. " * 60  # the encodings differ here
    for model in ("gpt-4o", "gpt-4o", "gpt-4"):
        client.chat.completions.create(model=model, messages=_msgs("a", text))
    o200k, cl100k = reports[1], reports[2]
    assert o200k.local_prompt_tokens != cl100k.local_prompt_tokens
    assert abs(cl100k.local_prompt_tokens - cl100k.prompt_tokens) <= cl100k.prompt_tokens // 50
    for user in ("b", "c"):
        client.chat.completions.create(model="gpt-5.5", messages=_msgs(user))
        now[0] += 2 * 3600  # past the 10-minute default, within gpt-5.5's day
    last = reports[-1]
    assert last.verdict is Verdict.HIT
    assert last.usd_saved == pytest.approx(last.reported_cached * (1.75 - 0.175) / 1e6)  # gpt-5.5's price


@pytest.mark.parametrize(
    "option", ["sort_keys", "sort_tools", "normalize_newlines", "strip_trailing_whitespace", "unicode_nfc"]
)
def test_each_canonicalization_option_works_on_its_own(server: ProviderServer, option: str) -> None:
    """Any one canonicalization option, set alone, has its effect on what is sent."""
    zeta = {"type": "function", "function": {"parameters": {"type": "object"}, "name": "zeta"}}
    alpha = {"type": "function", "function": {"name": "alpha", "parameters": {"type": "object"}}}
    reports: list[CacheReport] = []
    client = _client(server, reports, **{option: True})
    client.chat.completions.create(model="gpt-4o", messages=_msgs("Cafe\u0301  \r\nb"), tools=[zeta, alpha])
    sent = server.requests[-1]
    changed = {
        "sort_keys": list(sent["tools"][0]["function"]) == ["name", "parameters"],
        "sort_tools": sent["tools"][0]["function"]["name"] == "alpha",
        "normalize_newlines": "\r" not in sent["messages"][1]["content"],
        "strip_trailing_whitespace": "  \r\n" not in sent["messages"][1]["content"],
        "unicode_nfc": sent["messages"][1]["content"].startswith("Caf\u00e9"),
    }
    assert changed[option] and reports[0].changes
