"""The wrapper under common traffic shapes (issue 11), with real clients over real HTTP.

Each test here failed on the wrapper before these fixes: SDK objects in the history, few-shot
prompts and multi-prompt helpers reported as drift, concurrent requests and two clients on one key
reported as ``unexpected_hit``, content edited in place, tenancy failing open, copies of a client
unwrapped, a second ``wrap`` dropping ``require_tenant``, and options refused too late.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import sys
import threading
import unicodedata
from concurrent.futures import ThreadPoolExecutor

import anthropic
import openai
import pytest
from anthropic.types import TextBlock, ThinkingBlock, ToolUseBlock
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport
from prefixlint.sdk.tenancy import derive_prompt_cache_key

SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))
OTHER = "You answer billing questions. " + " ".join(f"clause{i}" for i in range(900))
SECRET = base64.b64encode(bytes(range(32))).decode()
CLAUDE = "claude-sonnet-4-5"
TOOLS = [{"name": "lookup", "description": "tool " * 1100, "input_schema": {"type": "object"}}]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def server(provider_server: ProviderServer) -> ProviderServer:
    return provider_server


@pytest.fixture(autouse=True)
def _reset(server: ProviderServer) -> None:
    server.reset()
    server.salt_mode = False
    sdk.forget()


def _openai(server: ProviderServer, reports: list[CacheReport], key: str = "k1", **opts) -> openai.OpenAI:
    return sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0),
        on_report=reports.append,
        **opts,
    )


def _anthropic(server: ProviderServer, reports: list[CacheReport], **opts) -> anthropic.Anthropic:
    return sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append, **opts
    )


def _msgs(user: str, system: str = SYSTEM) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _verdicts(reports: list[CacheReport]) -> list[str]:
    return [r.verdict.value for r in reports]


# -- 1. SDK objects in the history -----------------------------------------------------------------
def test_anthropic_history_holding_sdk_objects_is_prepared_and_reported(
    server: ProviderServer, caplog
) -> None:
    """The tool-use loop of Anthropic's docs: the response's content blocks go back into the history."""
    server.tool_use = True
    reports: list[CacheReport] = []
    client = _anthropic(server, reports)
    history: list[dict] = [{"role": "user", "content": "What is x?"}]
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        resp = client.messages.create(
            model=CLAUDE, max_tokens=10, system=SYSTEM, tools=TOOLS, messages=history
        )
        assert isinstance(resp.content[0], TextBlock) and isinstance(resp.content[1], ToolUseBlock)
        history += [
            {"role": "assistant", "content": resp.content},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": [{"type": "text", "text": "42"}],
                    }
                ],
            },
        ]
        resp2 = client.messages.create(
            model=CLAUDE, max_tokens=10, system=SYSTEM, tools=TOOLS, messages=history
        )
        thinking = ThinkingBlock(type="thinking", thinking="It is 42.", signature="sig")
        history += [
            {"role": "assistant", "content": [thinking, *resp2.content]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"},
                    },
                    {"type": "text", "text": "And this?"},
                ],
            },
        ]
        client.messages.create(model=CLAUDE, max_tokens=10, system=SYSTEM, tools=TOOLS, messages=history)
    assert "Traceback" not in caplog.text and "could not prepare" not in caplog.text
    assert _verdicts(reports) == ["expected_miss", "hit", "hit"]
    last = server.requests[-1]
    assert last["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_01",
        "name": "lookup",
        "input": {"q": "x"},
    }
    assert last["messages"][3]["content"][0]["thinking"] == "It is 42."
    marked = [
        b for m in last["messages"] for b in m["content"] if isinstance(b, dict) and "cache_control" in b
    ]
    assert marked and reports[-1].breakpoints >= 2  # breakpoints placed in a history of SDK objects
    assert isinstance(history[1]["content"][0], TextBlock)  # the caller's objects are untouched


def test_openai_history_holding_completion_messages(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    history: list = _msgs("one")
    for turn in range(3):
        resp = client.chat.completions.create(model="gpt-4o", messages=history, prefixlint_conversation="c")
        history += [resp.choices[0].message, {"role": "user", "content": f"next {turn}"}]
    assert _verdicts(reports) == ["expected_miss", "hit", "hit"]
    assert server.requests[-1]["messages"][2] == {"role": "assistant", "content": "ok"}
    assert reports[-1].reported_cached >= reports[-1].predicted_cached - 128


# -- 2. drift is a change of the stable part ---------------------------------------------------------
def test_few_shot_prompt_with_a_varying_question_is_not_drift(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    shots = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "3+3?"},
        {"role": "assistant", "content": "6"},
    ]
    for q in ("5+5?", "7+7?", "9+9?", "1+1?"):
        client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "system", "content": SYSTEM}, *shots, {"role": "user", "content": q}],
        )
    assert _verdicts(reports) == ["expected_miss", "hit", "hit", "hit"]
    assert all(r.divergence is None for r in reports)


def test_one_helper_serving_two_prompts_is_not_drift(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")

    def ask(system: str, question: str) -> None:  # one call site, two prompts
        client.chat.completions.create(model="gpt-4o", messages=_msgs(question, system))

    for i in range(3):
        ask(SYSTEM, f"q{i}")
        ask(OTHER, f"b{i}")
    assert "drift" not in _verdicts(reports)
    assert _verdicts(reports)[2:] == ["hit"] * 4


def test_a_prefix_that_changes_on_every_request_is_drift_at_its_call_site(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    for second in range(4):
        system = SYSTEM[:3000] + f" Now: 12:00:0{second}. " + SYSTEM[3000:]
        client.chat.completions.create(model="gpt-4o", messages=_msgs("same", system))
    # a call site may serve several prompts: drift once the stable part changed twice in a row
    assert _verdicts(reports)[2:] == ["drift", "drift"]
    assert reports[-1].divergence.path == "messages[0].content"


# -- 3/4. concurrency and several clients: the prediction is an interval ------------------------------
def test_concurrent_requests_of_one_tenant_never_give_unexpected_hit_threads(server: ProviderServer) -> None:
    server.delay = 0.05
    reports: list[CacheReport] = []
    lock = threading.Lock()

    def keep(r: CacheReport) -> None:
        with lock:
            reports.append(r)

    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0), tenant="acme", on_report=keep
    )

    def ask(question: str) -> None:
        client.chat.completions.create(model="gpt-4o", messages=_msgs(question))

    for rnd in range(10):  # the case: three at a time, ten rounds
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(ask, [f"{rnd}-{i}" for i in range(3)]))
    with ThreadPoolExecutor(50) as pool:  # and fifty at once
        list(pool.map(ask, [f"x{i}" for i in range(50)]))
    assert len(reports) == 80
    counts = {v: _verdicts(reports).count(v) for v in set(_verdicts(reports))}
    assert counts.get("unexpected_hit", 0) == 0 and counts.get("unexpected_miss", 0) == 0, counts
    assert counts["hit"] >= 77


def test_concurrent_requests_of_one_tenant_never_give_unexpected_hit_asyncio(server: ProviderServer) -> None:
    server.delay = 0.05
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0),
        tenant="acme",
        on_report=reports.append,
    )

    async def main() -> None:
        await asyncio.gather(
            *(client.chat.completions.create(model="gpt-4o", messages=_msgs(f"a{i}")) for i in range(50))
        )
        await asyncio.gather(
            *(client.chat.completions.create(model="gpt-4o", messages=_msgs(f"b{i}")) for i in range(50))
        )
        await client.close()

    asyncio.run(main())
    assert len(reports) == 100
    assert "unexpected_hit" not in _verdicts(reports) and "unexpected_miss" not in _verdicts(reports)
    assert _verdicts(reports)[50:] == ["hit"] * 50


def test_anthropic_concurrent_requests_stay_inside_the_interval(server: ProviderServer) -> None:
    server.delay = 0.05
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )

    async def main() -> None:
        for rnd in range(3):
            await asyncio.gather(
                *(
                    client.messages.create(
                        model=CLAUDE,
                        max_tokens=5,
                        system=SYSTEM,
                        messages=[{"role": "user", "content": f"{rnd}{i}"}],
                    )
                    for i in range(20)
                )
            )
        await client.close()

    asyncio.run(main())
    assert "unexpected_hit" not in _verdicts(reports) and "unexpected_miss" not in _verdicts(reports)


def test_a_failed_request_may_still_have_written_the_cache(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    server.fail_next = 1  # the server read (and cached) the prompt, then failed
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    assert _verdicts(reports) == ["hit"] and reports[0].predicted_cached == 0 < reports[0].upper_bound
    sdk.flush()
    tracker = client._prefixlint_state.tracker
    assert all(not interval._flights for interval in tracker._domains.values())  # no flight left over


def test_a_failed_first_request_with_an_extended_retention_may_be_cached_hours_later(
    server: ProviderServer,
) -> None:
    """A first request with ``prompt_cache_retention="24h"`` fails after the server cached its
    prompt: two hours later (past the default TTL) the prefix may still be cached, so a hit is
    expected, not unexpected."""
    now = [1_000_000.0]
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme", clock=lambda: now[0])
    server.fail_next = 1
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prompt_cache_retention="24h")
    now[0] += 2 * 3600
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"), prompt_cache_retention="24h")
    assert _verdicts(reports) == ["hit"] and reports[0].upper_bound > 1024


def test_a_failed_request_of_a_known_head_ends_its_flight(server: ProviderServer) -> None:
    """The head was seen before, so the failing request is counted (a flight, not a first sighting)."""
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    server.fail_next = 1
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    assert sdk.flush()
    intervals = client._prefixlint_state.tracker._domains.values()
    assert intervals and all(not interval._flights for interval in intervals)


def test_a_failed_async_request_of_a_known_head_ends_its_flight(server: ProviderServer) -> None:
    """The same with an async client: the raised request's flight ends too."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0),
        tenant="acme",
        on_report=reports.append,
    )

    async def main() -> None:
        await client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
        server.fail_next = 1
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
        await client.close()

    asyncio.run(main())
    assert sdk.flush()
    intervals = client._prefixlint_state.tracker._domains.values()
    assert intervals and all(not interval._flights for interval in intervals)


def test_two_wrapped_clients_on_one_key_share_what_they_sent(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    first = _openai(server, reports, tenant="acme")
    second = _openai(server, reports, tenant="acme")
    first.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    second.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    assert _verdicts(reports) == ["expected_miss", "hit"]


# -- 5. content edited in place -------------------------------------------------------------------------
def test_a_content_part_edited_in_place_is_seen(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    parts = [{"type": "text", "text": SYSTEM}]
    history = [{"role": "system", "content": parts}, {"role": "user", "content": "q"}]
    client.chat.completions.create(model="gpt-4o", messages=history, prefixlint_conversation="c")
    client.chat.completions.create(model="gpt-4o", messages=history, prefixlint_conversation="c")
    parts[0]["text"] = "v2 " + SYSTEM[3:]  # same list, same length, new text
    client.chat.completions.create(model="gpt-4o", messages=history, prefixlint_conversation="c")
    assert _verdicts(reports) == ["expected_miss", "hit", "drift"]
    assert reports[2].divergence.path == "messages[0].content[0]"
    keys = [b["prompt_cache_key"] for b in server.requests]
    assert keys[0] == keys[1] != keys[2]  # the key follows the new static prefix


# -- 6. tenancy fails closed ----------------------------------------------------------------------------
def test_require_tenant_sends_nothing_when_preparing_fails(server: ProviderServer, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("simulated prefixlint bug")

    monkeypatch.setattr("prefixlint.sdk.state.rewrite", broken)
    server.salt_mode = True
    strict = _openai(server, [], provider="vllm", salt_secret=SECRET, require_tenant=True, tenant="acme")
    with pytest.raises(sdk.PrepareError, match="simulated prefixlint bug") as err:
        strict.chat.completions.create(model="llama", messages=_msgs("a"))
    assert isinstance(err.value, sdk.TenancyError) and server.requests == []
    lenient = _openai(server, [], provider="vllm", salt_secret=SECRET, tenant="acme")
    out = lenient.chat.completions.create(model="llama", messages=_msgs("a"))
    assert out.choices[0].message.content == "ok"
    assert len(server.requests[0]["cache_salt"]) == 43  # still salted: tenancy survives the bug


@pytest.mark.parametrize(
    ("given", "expect"),
    [
        ({}, "derived"),
        ({"prompt_cache_key": "mine"}, "mine"),
        ({"extra_body": {"prompt_cache_key": "mine-too", "seed": 3}}, "mine-too"),
        ({"cache_key_fn": True}, None),
    ],
)
def test_after_an_internal_error_the_request_keeps_its_tenant_key(
    server: ProviderServer, monkeypatch, caplog, given: dict, expect: str | None
) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("simulated prefixlint bug")

    monkeypatch.setattr("prefixlint.sdk.state.rewrite", broken)
    given = dict(given)  # the parameter is shared between runs: leave it as it is
    opts = {"cache_key_fn": lambda info: "from-fn"} if given.pop("cache_key_fn", None) else {}
    client = _openai(server, [], tenant="acme", salt_secret=SECRET, **opts)
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), **given)
    sent = server.requests[-1]
    derived = derive_prompt_cache_key("acme", "", base64.b64decode(SECRET))
    assert sent.get("prompt_cache_key") == (derived if expect == "derived" else expect)
    assert "cache_salt" not in sent and sent["messages"] == _msgs("a")
    assert "sending it with tenancy fields only" in caplog.text
    if "extra_body" in given:
        assert sent["seed"] == 3


def test_a_per_call_tenant_of_the_wrong_type_fails_closed(server: ProviderServer) -> None:
    client = _openai(server, [], require_tenant=True)
    with pytest.raises(sdk.PrepareError, match="must be a str"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prefixlint_tenant=123)
    assert server.requests == []


def test_a_per_call_tenant_of_the_wrong_type_is_logged_and_the_wrap_tenant_used(
    server: ProviderServer, caplog
) -> None:
    """Without ``require_tenant``: the request goes with the ``wrap`` tenant's key, the error is logged
    with its reason, and the call is still accounted (with the time prefixlint took)."""
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prefixlint_tenant=123)
    first, second = server.requests
    assert second["prompt_cache_key"] == first["prompt_cache_key"]
    assert [r.getMessage() for r in caplog.records] == [
        "prefixlint: prefixlint_tenant must be a str, got int; the per-call tenant is ignored"
    ]
    assert len(reports) == 2 and reports[1].tenant_hash == reports[0].tenant_hash
    assert all(isinstance(r.overhead_ms, float) and r.overhead_ms > 0 for r in reports)


def test_require_tenant_errors_say_what_happened(server: ProviderServer, monkeypatch) -> None:
    """The two fail-closed errors name the cause (the exception type of an internal error) and that
    nothing was sent."""
    strict = _openai(server, [], require_tenant=True)
    with pytest.raises(sdk.TenantRequiredError) as missing:
        strict.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    assert str(missing.value) == "require_tenant=True and no tenant is set; the request was not sent"

    def broken(*args, **kwargs):
        raise RuntimeError("simulated prefixlint bug")

    monkeypatch.setattr("prefixlint.sdk.state.rewrite", broken)
    with pytest.raises(sdk.PrepareError) as failed:
        strict.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prefixlint_tenant="acme")
    assert str(failed.value) == (
        "prefixlint could not prepare the request (RuntimeError: simulated prefixlint bug); "
        "with require_tenant=True nothing was sent"
    )
    assert server.requests == []


# -- 7. copies of a wrapped client ----------------------------------------------------------------------
@pytest.mark.parametrize("how", ["with_options", "copy"])
def test_copies_of_a_wrapped_client_are_wrapped_alike(server: ProviderServer, how: str) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme", require_tenant=True)
    other = getattr(client, how)(timeout=30)
    assert other is not client and sdk.is_wrapped(other)
    other.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    other.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    assert server.requests[0]["prompt_cache_key"] == server.requests[1]["prompt_cache_key"]
    assert _verdicts(reports) == ["expected_miss", "hit"] and reports[0].tenant_hash
    with sdk.tenant("globex"):
        client.with_options(max_retries=0).chat.completions.create(model="gpt-4o", messages=_msgs("c"))
    assert server.requests[2]["prompt_cache_key"] != server.requests[0]["prompt_cache_key"]
    sdk.unwrap(client)
    assert not sdk.is_wrapped(client.with_options(timeout=5))


# -- 8. a second wrap -------------------------------------------------------------------------------------
def test_a_second_wrap_applies_its_options_and_keeps_require_tenant(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, require_tenant=True)
    assert sdk.wrap(client, tenant="acme") is client
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    assert server.requests[-1]["prompt_cache_key"] and reports[-1].tenant_hash  # the new tenant applies
    sdk.wrap(client, tenant=None)
    with pytest.raises(sdk.TenantRequiredError):  # require_tenant=True was not dropped
        client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    assert len(server.requests) == 1 and sdk.stats(client).requests == 1


# -- 9. refused at wrap time ------------------------------------------------------------------------------
def test_isolation_that_cannot_work_is_refused_at_wrap_time(server: ProviderServer, monkeypatch) -> None:
    monkeypatch.delenv(sdk.SALT_SECRET_ENV, raising=False)
    raw = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(sdk.SdkConfigError, match="salt_secret"):
        sdk.wrap(raw, provider="vllm", require_tenant=True)
    with pytest.raises(sdk.SdkConfigError, match="send_cache_salt"):
        sdk.wrap(raw, provider="sglang", require_tenant=True, salt_secret=SECRET, send_cache_salt=False)
    with pytest.raises(sdk.SdkConfigError, match="tenant must be a str"):
        sdk.wrap(raw, tenant=123)
    assert not sdk.is_wrapped(raw) and server.requests == []
    sdk.wrap(raw, provider="vllm", require_tenant=True, salt_secret=SECRET)  # with the secret it works
    raw.chat.completions.create(model="llama", messages=_msgs("a"), prefixlint_tenant="acme")
    assert server.requests[-1]["cache_salt"]


# -- 10. keys under the installation secret ------------------------------------------------------------
def test_prompt_cache_key_uses_the_installation_secret(server: ProviderServer, caplog, monkeypatch) -> None:
    monkeypatch.delenv(sdk.SALT_SECRET_ENV, raising=False)
    monkeypatch.setattr(sys.modules["prefixlint.sdk.wrap"], "_WARNED", set())
    reports: list[CacheReport] = []
    with caplog.at_level(logging.INFO, logger="prefixlint.sdk"):
        plain = _openai(server, reports, tenant="acme")
    assert "without a secret" in caplog.text
    plain.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    fingerprint = reports[0].prefix_hash
    guessed = derive_prompt_cache_key("acme", fingerprint)
    assert server.requests[0]["prompt_cache_key"] == guessed  # what a key without a secret reveals
    monkeypatch.setenv(sdk.SALT_SECRET_ENV, SECRET)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="prefixlint.sdk"):
        keyed = _openai(server, reports, key="k2", tenant="acme")
    assert "without a secret" not in caplog.text
    keyed.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    key = server.requests[1]["prompt_cache_key"]
    assert key != guessed and key == derive_prompt_cache_key("acme", fingerprint, base64.b64decode(SECRET))


# -- mutants the old tests let through ---------------------------------------------------------------------
def test_canonicalization_of_every_text_place(server: ProviderServer) -> None:
    """Each opted-in step, on system blocks, content parts, volatile values and Anthropic tools."""
    client = _anthropic(
        server, [], sort_tools=True, sort_keys=True, normalize_newlines=True, strip_trailing_whitespace=True
    )
    tools = [
        {"name": "zeta", "input_schema": {"type": "object", "properties": {}}, "description": "z"},
        {"name": "alpha", "input_schema": {"type": "object"}, "description": "a"},
    ]
    client.messages.create(
        model=CLAUDE,
        max_tokens=5,
        tools=tools,
        system=[
            {"type": "text", "text": "rules  \r\nmore\t\r\n" + SYSTEM},
            {"type": "text", "text": sdk.volatile("t=1 \r\n")},
        ],
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi  \r\nthere"},
                    {"type": "image", "source": {"type": "url", "url": "u"}},
                ],
            }
        ],
    )
    sent = server.requests[-1]
    assert [t["name"] for t in sent["tools"]] == ["alpha", "zeta"]
    assert list(sent["tools"][1]) == ["description", "input_schema", "name"]
    assert sent["system"][0]["text"].startswith("rules\nmore\n")
    user = sent["messages"][0]["content"]
    assert user[0]["text"] == "hi\nthere" and user[1]["type"] == "image"
    assert user[-1]["text"] == "Request context:\nt=1\n"  # normalized, still volatile: moved to the end
    assert tools[0]["name"] == "zeta"  # the caller's list is untouched


def test_unicode_nfc_is_applied_when_asked(server: ProviderServer) -> None:
    decomposed = "Caf" + "e\u0301 " + SYSTEM
    _openai(server, [], unicode_nfc=True).chat.completions.create(
        model="gpt-4o", messages=_msgs("q", decomposed)
    )
    _openai(server, [], key="k2").chat.completions.create(model="gpt-4o", messages=_msgs("q", decomposed))
    on, off = (b["messages"][0]["content"] for b in server.requests)
    assert on == unicodedata.normalize("NFC", decomposed) != decomposed and off == decomposed


def test_volatile_blocks_never_get_breakpoints(server: ProviderServer) -> None:
    client = _anthropic(server, [])
    client.messages.create(
        model=CLAUDE,
        max_tokens=5,
        system=[{"type": "text", "text": SYSTEM}, {"type": "text", "text": sdk.volatile("12:00:01")}],
        messages=[{"role": "user", "content": [{"type": "text", "text": "q " * 1200}]}],
    )
    sent = server.requests[-1]
    assert sent["system"][-1].get("cache_control") == {"type": "ephemeral"}
    user = sent["messages"][-1]["content"]
    assert "12:00:01" in user[-1]["text"] and "cache_control" not in user[-1]  # the moved volatile block
    assert user[0].get("cache_control") == {"type": "ephemeral"}  # the last stable block


def test_the_keys_without_a_secret_notice_is_given_once_and_only_where_it_applies(
    server: ProviderServer, caplog, monkeypatch
) -> None:
    """No notice with a secret, with ``cache_key_fn`` (the caller's keys), or for a provider that
    takes no ``prompt_cache_key``; otherwise one per process, naming the setting that silences it."""
    monkeypatch.delenv(sdk.SALT_SECRET_ENV, raising=False)
    monkeypatch.setattr(sys.modules["prefixlint.sdk.wrap"], "_WARNED", set())
    with caplog.at_level(logging.INFO, logger="prefixlint.sdk"):
        _openai(server, [], salt_secret=SECRET)
        _openai(server, [], cache_key_fn=lambda info: "mine")
        _anthropic(server, [])
        assert "without a secret" not in caplog.text
        _openai(server, [])
        _openai(server, [], key="k2")
    notices = [r.getMessage() for r in caplog.records if "without a secret" in r.getMessage()]
    assert len(notices) == 1 and sdk.SALT_SECRET_ENV in notices[0]


def test_cache_salt_the_callers_own_kept_others_added_and_reported(server: ProviderServer) -> None:
    """A salt-based backend: the caller's own ``cache_salt`` is sent as given (and counts as salted);
    other ``extra_body`` fields get the tenant's salt next to them, reported as a change. A provider
    without ``cache_salt`` is never salted."""
    server.salt_mode = True
    reports: list[CacheReport] = []
    client = _openai(server, reports, provider="vllm", salt_secret=SECRET, tenant="acme")
    client.chat.completions.create(model="llama", messages=_msgs("a"), extra_body={"cache_salt": "mine"})
    client.chat.completions.create(model="llama", messages=_msgs("a"), extra_body={"seed": 3})
    own, added = server.requests
    assert own["cache_salt"] == "mine" and len(added["cache_salt"]) == 43 and added["seed"] == 3
    assert [r.salted for r in reports] == [True, True]
    assert "extra_body.cache_salt: set" not in reports[0].changes
    assert "extra_body.cache_salt: set" in reports[1].changes
    _openai(server, reports, key="k2", tenant="acme", salt_secret=SECRET).chat.completions.create(
        model="gpt-4o", messages=_msgs("a")
    )
    assert not reports[2].salted and "cache_salt" not in server.requests[2]
