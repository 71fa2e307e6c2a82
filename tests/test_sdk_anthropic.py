"""The SDK wrapper over real anthropic clients and real HTTP against a local provider-shaped server."""

from __future__ import annotations

import asyncio
import gc
import warnings

import anthropic
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport, Verdict

MODEL = "claude-sonnet-4-5"  # 1024-token minimum
SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))
TOOLS = [{"name": "lookup", "description": "tool " * 1100, "input_schema": {"type": "object"}}]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def server(provider_server: ProviderServer) -> ProviderServer:
    return provider_server


@pytest.fixture(autouse=True)
def _reset(server: ProviderServer) -> None:
    server.reset()
    sdk.forget()  # the server's caches are empty again: so is this process's view of them


def _client(server: ProviderServer, reports: list[CacheReport], **opts) -> anthropic.Anthropic:
    return sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append, **opts
    )


def _controls(body: dict) -> list[tuple[str, str]]:
    """(where, ttl) of every cache_control in a sent body, in prefix order."""
    out = []
    for i, t in enumerate(body.get("tools", [])):
        if "cache_control" in t:
            out.append((f"tools[{i}]", t["cache_control"].get("ttl", "5m")))
    system = body.get("system")
    for j, b in enumerate(system if isinstance(system, list) else []):
        if "cache_control" in b:
            out.append((f"system[{j}]", b["cache_control"].get("ttl", "5m")))
    for i, m in enumerate(body["messages"]):
        for j, part in enumerate(m["content"] if isinstance(m["content"], list) else []):
            if "cache_control" in part:
                out.append((f"messages[{i}][{j}]", part["cache_control"].get("ttl", "5m")))
    return out


def test_breakpoints_are_added_and_verified(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports, static_ttl="1h")
    history: list[dict] = []
    for turn in range(3):
        history.append({"role": "user", "content": f"question {turn}"})
        msg = client.messages.create(model=MODEL, max_tokens=10, system=SYSTEM, tools=TOOLS, messages=history)
        assert msg.content[0].text == "ok"
        history.append({"role": "assistant", "content": "ok"})
    sent = server.requests[-1]
    marks = _controls(sent)
    assert 1 <= len(marks) <= 4
    ttls = [ttl for _, ttl in marks]
    assert ttls == sorted(ttls, key=lambda t: t != "1h")  # every 1h before every 5m
    assert marks[0] == ("tools[0]", "1h") and marks[-1][1] == "5m"
    assert history[0] == {"role": "user", "content": "question 0"}  # the caller's objects are untouched
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT, Verdict.HIT]
    first, second = reports[0], reports[1]
    assert first.cache_write > 0 and first.cache_write_1h > 0
    assert second.reported_cached >= first.cache_write - 20
    # Anthropic's input_tokens excludes cached tokens; the report's prompt size includes them
    assert second.prompt_tokens >= second.reported_cached + 1
    assert second.usd_saved > 0


def test_no_breakpoint_below_the_minimum_and_user_controls_respected(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    client.messages.create(
        model="claude-haiku-4-5", max_tokens=5, system="short", messages=[{"role": "user", "content": "hi"}]
    )
    assert _controls(server.requests[-1]) == []
    assert reports[-1].verdict is Verdict.EXPECTED_MISS and reports[-1].breakpoints == 0
    mine = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    client.messages.create(
        model=MODEL, max_tokens=5, system=mine, messages=[{"role": "user", "content": "a"}]
    )
    assert _controls(server.requests[-1]) == [("system[0]", "5m")]
    client.messages.create(
        model=MODEL, max_tokens=5, system=mine, messages=[{"role": "user", "content": "b"}]
    )
    assert reports[-1].verdict is Verdict.HIT
    off = _client(server, [], breakpoints=False)
    off.messages.create(model=MODEL, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "c"}])
    assert "cache_control" not in server.requests[-1] and isinstance(server.requests[-1]["system"], str)


def test_streaming_create_and_stream_helper_merge_usage(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    stream = client.messages.create(
        model=MODEL, max_tokens=5, system=SYSTEM, stream=True, messages=[{"role": "user", "content": "a"}]
    )
    kinds = [ev.type for ev in stream]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert reports[-1].verdict is Verdict.EXPECTED_MISS and reports[-1].cache_write > 0
    with client.messages.stream(
        model=MODEL, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "b"}]
    ) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text == "w0 w1 w2 " and final.usage.output_tokens == 5
    rep = reports[-1]
    assert rep.verdict is Verdict.HIT and rep.stream and rep.reported_cached > 1000


def test_stream_helper_closed_early_reports(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    server.chunks = 40
    try:
        client = _client(server, reports)
        with client.messages.stream(
            model=MODEL, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
        ) as s:
            next(iter(s))
        assert len(reports) == 1
        # message_start carried the usage, so even a stream cut short is verified
        assert reports[0].verdict is Verdict.EXPECTED_MISS
        st = client.messages.create(
            model=MODEL, max_tokens=5, system=SYSTEM, stream=True, messages=[{"role": "user", "content": "b"}]
        )
        next(iter(st))
        del st
        gc.collect()
        assert len(reports) == 2 and reports[1].verdict is Verdict.HIT
    finally:
        server.chunks = 3


def test_raw_response_and_streaming_response(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    raw = client.messages.with_raw_response.create(
        model=MODEL, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
    )
    assert raw.parse().usage.cache_creation_input_tokens > 0
    assert reports[-1].verdict is Verdict.EXPECTED_MISS and reports[-1].cache_write > 0
    with client.messages.with_streaming_response.create(
        model=MODEL, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "b"}]
    ) as r:
        assert r.parse().usage.cache_read_input_tokens > 0
    assert reports[-1].verdict is Verdict.UNVERIFIED
    assert _controls(server.requests[-1])  # breakpoints still added on the raw path


def test_async_anthropic_two_tenants(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0),
        on_report=reports.append,
        require_tenant=True,
    )

    async def run(name: str) -> None:
        with sdk.tenant(name):
            for i in range(2):
                await client.messages.create(
                    model=MODEL,
                    max_tokens=5,
                    system=f"{name} policy. " + SYSTEM,
                    messages=[{"role": "user", "content": str(i)}],
                )
            async with client.messages.stream(
                model=MODEL,
                max_tokens=5,
                system=f"{name} policy. " + SYSTEM,
                messages=[{"role": "user", "content": "s"}],
            ) as s:
                await s.get_final_message()

    async def main() -> None:
        await asyncio.gather(run("acme"), run("globex"))
        with pytest.raises(sdk.TenantRequiredError):
            await client.messages.create(
                model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        await client.close()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asyncio.run(main())
    assert len(reports) == 6 and len(server.requests) == 6
    assert sorted(r.verdict.value for r in reports) == ["expected_miss"] * 2 + ["hit"] * 4
    assert len({r.tenant_hash for r in reports}) == 2


def test_over_reporting_anthropic_server(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _client(server, reports)
    server.mode = "over"
    client.messages.create(
        model=MODEL, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
    )
    assert reports[-1].verdict is Verdict.UNEXPECTED_HIT


def test_vertex_client_is_wrapped_like_anthropic(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.AnthropicVertex(
            region="us-east5", project_id="p", access_token="t", base_url=server.url + "/v1", max_retries=0
        ),
        on_report=reports.append,
    )
    for q in ("a", "b"):
        client.messages.create(
            model=MODEL, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": q}]
        )
    with client.messages.stream(
        model=MODEL, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "c"}]
    ) as s:
        s.get_final_message()
    assert _controls(server.requests[-1])
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT, Verdict.HIT]


def test_async_raw_responses_are_verified_against_their_usage(server: ProviderServer, caplog) -> None:
    """An async raw response parses with a coroutine: the report still reads its usage."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )

    async def main() -> None:
        for user in ("a", "b"):
            raw = await client.messages.with_raw_response.create(
                model=MODEL, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": user}]
            )
            assert (await raw.parse()).content
        await client.close()

    with caplog.at_level("DEBUG", logger="prefixlint.sdk"):
        asyncio.run(main())
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
    assert reports[0].cache_write > 0 and reports[1].reported_cached > 0  # the usage was read
    assert "accounting failed" not in caplog.text and "did not finish" not in caplog.text


def test_the_prefix_hash_is_the_same_with_and_without_breakpoints(server: ProviderServer) -> None:
    """With breakpoints the pieces are cut before sending, without them only digests are taken: the
    static prefix hash comes out the same, and it is empty for a request with no static head."""
    reports: list[CacheReport] = []
    msgs = [{"role": "user", "content": "a"}]
    for bps in (True, False):
        client = _client(server, reports, breakpoints=bps)
        client.messages.create(model=MODEL, max_tokens=5, system=SYSTEM, tools=TOOLS, messages=msgs)
        client.messages.create(model=MODEL, max_tokens=5, system=SYSTEM + " More.", messages=msgs)
        client.messages.create(model=MODEL, max_tokens=5, messages=msgs)
    with_bps, without = [r.prefix_hash for r in reports[:3]], [r.prefix_hash for r in reports[3:]]
    assert with_bps == without and len(set(with_bps)) == 3 and with_bps[2] == ""
    assert reports[0].breakpoints and not reports[3].breakpoints  # the two paths were taken


def test_drift_excerpts_of_a_request_cut_for_breakpoints(server: ProviderServer) -> None:
    """``keep_excerpts`` also holds when the pieces are cut before sending (breakpoints on)."""
    reports: list[CacheReport] = []
    client = _client(server, reports, keep_excerpts=True, excerpt_chars=30)
    for tail in ("Policy version 1.", "Policy version 2."):
        client.messages.create(
            model=MODEL,
            max_tokens=5,
            system=SYSTEM + " " + tail,
            messages=[{"role": "user", "content": "q"}],
            prefixlint_template="policy",
        )
    d = reports[1].divergence
    assert reports[1].verdict is Verdict.DRIFT and d is not None
    assert "version 1" in d.before and "version 2" in d.after


def test_with_breakpoints_off_a_marked_system_prompt_is_predicted_from_the_first_request(
    server: ProviderServer,
) -> None:
    """With ``breakpoints=False`` a first request is recorded without counting its tokens; counted
    when the second request comes, it includes its system prompt, so the hit on that prompt is
    predicted."""
    reports: list[CacheReport] = []
    client = _client(server, reports, breakpoints=False)
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    for question in ("first question", "second question"):
        client.messages.create(
            model=MODEL, max_tokens=5, system=system, messages=[{"role": "user", "content": question}]
        )
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
    hit = reports[1]  # Claude's tokenizer is approximated: the counts agree within a few tokens
    assert hit.reported_cached > 1024 and abs(hit.predicted_cached - hit.reported_cached) <= 16


def test_the_callers_own_breakpoints_are_read_with_automatic_breakpoints_off(server: ProviderServer) -> None:
    """``breakpoints=False`` sends the caller's ``cache_control`` as it is; the report still counts it,
    and the part it marks is the template's compared part, as with breakpoints on: a change to the
    marked few-shot example is drift either way."""
    for automatic in (True, False):
        reports: list[CacheReport] = []
        client = _client(server, reports, breakpoints=automatic)
        for answer in ("Example answer A.", "Example answer B."):
            shots = [
                {"role": "user", "content": "Example question."},
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": answer, "cache_control": {"type": "ephemeral"}}],
                },
            ]
            client.messages.create(
                model=MODEL,
                max_tokens=5,
                system=SYSTEM,
                messages=[*shots, {"role": "user", "content": "q"}],
                prefixlint_template="faq",
            )
        assert _controls(server.requests[-1]) == [("messages[1][0]", "5m")]  # the caller's, untouched
        assert [r.breakpoints for r in reports] == [1, 1], automatic
        assert reports[1].verdict is Verdict.DRIFT, automatic
        server.reset()
        sdk.forget()
