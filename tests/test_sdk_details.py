"""Details of the wrapper that the traffic tests do not pin down (found by mutation testing).

Over real HTTP where a client is involved: volatile values in every place, canonicalization of the
Responses API, drift positions and excerpts, usage merged from Anthropic stream events, unwrap, and
the log line of a stream whose internals moved. Pure functions (secrets, salts) are tested directly.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging

import anthropic
import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.model.pieces import common_blocks
from prefixlint.model.tokens import tokenizer_for
from prefixlint.sdk import CacheReport, Verdict
from prefixlint.sdk.options import SdkConfigError, decode_secret
from prefixlint.sdk.tenancy import derive_cache_salt

SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))
CLAUDE = "claude-sonnet-4-5"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def server(provider_server: ProviderServer) -> ProviderServer:
    return provider_server


@pytest.fixture(autouse=True)
def _reset(server: ProviderServer) -> None:
    server.reset()
    sdk.forget()


def _openai(server: ProviderServer, reports: list[CacheReport], **opts) -> openai.OpenAI:
    return sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0),
        on_report=reports.append,
        **opts,
    )


def test_volatile_values_in_history_system_and_the_last_user_turn(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    stamp = sdk.volatile("Today is Monday", "date")
    messages = [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM}, {"type": "text", "text": stamp}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "first"}, {"type": "text", "text": sdk.volatile("doc A")}],
        },
        {"role": "assistant", "content": sdk.volatile("scratch notes")},  # a whole message: dropped
        {"role": "assistant", "content": "answer"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "now"}, {"type": "text", "text": sdk.volatile("doc B")}],
        },
    ]
    client.chat.completions.create(model="gpt-4o", messages=messages, prefixlint_volatile={"rid": "r1"})
    sent = server.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": [{"type": "text", "text": SYSTEM}]}
    assert sent[1] == {"role": "user", "content": [{"type": "text", "text": "first"}]}
    assert sent[2] == {"role": "assistant", "content": "answer"}
    last = sent[3]["content"]
    assert last[0]["text"] == "now" and last[1]["text"] == "doc B"  # the last turn keeps its own values
    assert last[2] == {
        "type": "text",
        "text": "Request context:\nToday is Monday\ndoc A\nscratch notes\nrid: r1",
    }
    assert reports[-1].changes == (  # indices of the request as given, then of the request as sent
        "messages[0]: moved volatile value(s) to the end",
        "messages[1]: moved volatile value(s) to the end",
        "messages[2]: moved volatile value(s) to the end",
        "messages[3]: volatile values appended to the last user message",
        "prompt_cache_key: set",
    )


def test_volatile_values_as_a_trailing_message_and_in_responses_instructions(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, volatile_placement="trailing_message", volatile_header="")
    client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": "q"}],
        prefixlint_volatile={"docs": ["d1", "d2"]},
    )
    assert server.requests[-1]["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": "docs[0]: d1\ndocs[1]: d2"}],
    }
    assert reports[-1].changes == ("messages: volatile values sent as a trailing message",)
    client.responses.create(model="gpt-4o", instructions=sdk.volatile("now"), input="hi")
    sent = server.requests[-1]
    assert "instructions" not in sent
    assert sent["input"] == [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": [{"type": "input_text", "text": "now"}]},
    ]


def test_canonicalization_of_a_responses_request_and_its_changes(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(
        server, reports, sort_keys=True, sort_tools=True, normalize_newlines=True, unicode_nfc=True
    )
    tools = [
        {"type": "function", "name": "zeta", "parameters": {"type": "object", "properties": {}}},
        {"type": "function", "name": "alpha", "parameters": {"type": "object"}},
    ]
    client.responses.create(
        model="gpt-4o",
        instructions="Rules\r\nCafe\u0301",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "a\r\nb"}]}],
        tools=tools,
        text={"format": {"type": "json_schema", "schema": {"type": "object"}, "name": "x", "strict": True}},
    )
    sent = server.requests[-1]
    assert [t["name"] for t in sent["tools"]] == ["alpha", "zeta"]
    assert list(sent["tools"][0]) == ["name", "parameters", "type"]
    assert sent["instructions"] == "Rules\nCaf\u00e9"
    assert sent["input"][0]["content"][0]["text"] == "a\nb"
    assert list(sent["text"]["format"]) == ["name", "schema", "strict", "type"]
    assert reports[-1].changes == (
        "tools: canonical order",
        "tools: sorted keys",
        "text.format: sorted keys",
        "instructions: normalized text",
        "input: normalized text",
    )
    client.responses.create(model="gpt-4o", input="x\r\ny", tools=list(reversed(tools)))
    assert server.requests[-1]["input"] == "x\ny"
    assert reports[-1].changes[0] == "tools: sorted keys"  # already in order: only the keys moved


def test_drift_position_and_excerpts(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, keep_excerpts=True, excerpt_chars=30)
    head = [{"type": "text", "text": SYSTEM}]
    for tail in ("Policy version 1.", "Policy version 12 (revised)."):
        system = [*head, {"type": "text", "text": "Closing words. " * 20 + tail}]
        client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "system", "content": system}, {"role": "user", "content": "q"}],
            prefixlint_template="policy",
        )
    d = reports[1].divergence
    assert reports[1].verdict is Verdict.DRIFT and d.path == d.previous_path == "messages[0].content[1]"
    cache = PieceCache(tokenizer_for("openai", "gpt-4o"))
    old, new = (pieces_from_request(body, "chat", cache) for body in server.requests)
    assert old[0].chain == new[0].chain and old[1].digest != new[1].digest
    assert d.token_index == new[0].end + 16 * common_blocks(old[1].sketch, new[1].sketch) > new[0].end
    text = "Closing words. " * 20
    i = len(text) + len("Policy version 1")
    assert d.before == (text + "Policy version 1.")[i - 10 : i + 20]
    assert d.after == (text + "Policy version 12 (revised).")[i - 10 : i + 20]


def test_anthropic_stream_usage_merged_from_both_events(server: ProviderServer) -> None:
    server.usage_in_delta = True
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )
    for q in ("a", "b"):
        with client.messages.stream(
            model=CLAUDE, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": q}]
        ) as s:
            s.get_final_message()
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
    assert reports[0].cache_write > 1000 and reports[1].reported_cached > 1000
    assert reports[0].cache_write_5m == reports[0].cache_write and reports[0].cache_write_1h == 0


def test_async_stream_without_iterator_passes_through(server: ProviderServer, monkeypatch, caplog) -> None:
    monkeypatch.setattr("prefixlint.sdk.streams._WARNED", set())
    monkeypatch.setattr("prefixlint.sdk.streams._iterator_of", lambda stream: None)
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        include_usage=True,
        on_report=reports.append,
    )

    async def main() -> list:
        stream = await client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "a"}], stream=True
        )
        chunks = [c async for c in stream]
        await client.close()
        return chunks

    with caplog.at_level(logging.WARNING, logger="prefixlint.sdk"):
        chunks = asyncio.run(main())
    assert chunks[-1].usage is not None and [r.verdict for r in reports] == [Verdict.UNVERIFIED]
    assert (
        "prefixlint: openai.AsyncStream has no _iterator (a changed openai/anthropic version?); its streams "
        "pass through unobserved and are reported as unverified"
    ) in caplog.text


def test_unwrap_takes_back_raw_response_helpers_too(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    plain = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    assert sdk.unwrap(plain) is plain  # a client that was never wrapped
    client = _openai(server, reports, tenant="acme")
    client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "a"}]
    )
    sdk.unwrap(client)
    client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "b"}]
    )
    assert len(reports) == 1 and "prompt_cache_key" not in server.requests[-1]
    assert "copy" not in vars(client) and "with_options" not in vars(client)


def test_secrets_decode_in_either_base64_alphabet() -> None:
    raw = bytes([251, 255, 190, *range(29)])  # encodes with + and / (or - and _)
    std = base64.b64encode(raw).decode()
    url = base64.urlsafe_b64encode(raw).decode()
    assert "+" in std and "/" in std and "-" in url and "_" in url
    assert decode_secret(std) == decode_secret(url) == decode_secret(url.rstrip("=")) == raw
    assert decode_secret(" " + std + "\n") == raw
    with pytest.raises(SdkConfigError, match="not valid base64"):
        decode_secret(std[:-4] + "!!!=")
    with pytest.raises(SdkConfigError, match="not valid base64"):
        decode_secret(std[:-8] + "*")


def test_cache_salt_format_is_stable() -> None:
    """Servers and other processes that derive the same salt must get the same 43 characters."""
    secret = bytes(range(32))
    mac = hmac.new(secret, b"prefixlint-salt-v1\x00acme", hashlib.sha256).digest()
    assert derive_cache_salt("acme", secret) == base64.urlsafe_b64encode(mac).decode().rstrip("=")


def test_breakpoints_on_a_plain_string_system_and_1h_controls(server: ProviderServer) -> None:
    tools = [{"name": "lookup", "description": "tool " * 1100, "input_schema": {"type": "object"}}]
    client = sdk.wrap(anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), static_ttl="1h")
    client.messages.create(
        model=CLAUDE, max_tokens=5, tools=tools, system=SYSTEM, messages=[{"role": "user", "content": "q"}]
    )
    sent = server.requests[-1]
    one_hour = {"type": "ephemeral", "ttl": "1h"}
    assert sent["tools"][0]["cache_control"] == one_hour
    assert sent["system"] == [{"type": "text", "text": SYSTEM, "cache_control": one_hour}]
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": {"type": "ephemeral"}}]}
    ]


def test_the_default_template_is_the_call_site(server: ProviderServer) -> None:
    import inspect

    reports: list[CacheReport] = []
    client = _openai(server, reports)
    line = inspect.currentframe().f_lineno + 1
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "q"}])
    assert reports[-1].template == f"{__file__}:{line}"


def test_a_divergence_at_the_first_token(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports)
    for head in ("a", "b"):
        client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "system", "content": head + SYSTEM}, {"role": "user", "content": "q"}],
            prefixlint_template="t",
        )
    d = reports[1].divergence
    assert d.token_index == 0 and d.path == "messages[0].content"


def test_a_forked_child_accounts_with_its_own_worker(server: ProviderServer) -> None:
    import os

    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "warm"}])
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker thread does not exist here
        code = 1
        try:
            child: list[CacheReport] = []
            forked = _openai(server, child, tenant="acme", background=True)
            forked.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "child"}])
            code = 0 if sdk.flush(timeout=20) and len(child) == 1 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_an_assistant_prefill_is_not_part_of_the_template(server: ProviderServer) -> None:
    """A prefill after a marked user question ends the stable part before that question: new questions
    to the same template are no drift (they were, when the prefill kept the question in it)."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    for q in ("What is the refund policy?", "Where is my parcel?", "Can I change the address?"):
        question = {"type": "text", "text": q * 40, "cache_control": {"type": "ephemeral"}}
        client.messages.create(
            model=CLAUDE,
            max_tokens=5,
            system=system,
            messages=[{"role": "user", "content": [question]}, {"role": "assistant", "content": "{"}],
            prefixlint_template="faq",
        )
    assert server.requests[-1]["messages"][-1] == {"role": "assistant", "content": "{"}
    assert [r.divergence for r in reports] == [None, None, None]
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT, Verdict.HIT]


def _system_and(text: str, user: str = "q") -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM + text}, {"role": "user", "content": user}]


def test_templates_and_tenants_drift_apart(server: ProviderServer) -> None:
    """Drift compares a request with its own template and tenant only: two templates, or two tenants of
    one template, that alternate their prompts never drift; one template that changes does."""
    reports: list[CacheReport] = []
    client = _openai(server, reports)
    for _ in range(2):
        for name in ("alpha", "beta"):
            client.chat.completions.create(
                model="gpt-4o", messages=_system_and(name), prefixlint_template=name
            )
        for tenant in ("acme", "globex"):
            client.chat.completions.create(
                model="gpt-4o",
                messages=_system_and(tenant),
                prefixlint_template="shared",
                prefixlint_tenant=tenant,
            )
    assert [r.divergence for r in reports] == [None] * 8
    client.chat.completions.create(model="gpt-4o", messages=_system_and("gamma"), prefixlint_template="alpha")
    assert reports[-1].verdict is Verdict.DRIFT


def test_a_change_before_the_callers_breakpoint_is_template_drift(server: ProviderServer) -> None:
    """With the caller's own ``cache_control`` after few-shot examples, the examples are part of the
    template: changing one is drift, while the question after the breakpoint is free to change."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )
    for example, question in (("Monday", "a"), ("Monday", "b"), ("Friday", "c")):
        shot = {
            "type": "text",
            "text": f"It ships on {example}. " * 30,
            "cache_control": {"type": "ephemeral"},
        }
        client.messages.create(
            model=CLAUDE,
            max_tokens=5,
            system=SYSTEM,
            messages=[
                {"role": "user", "content": "When does it ship?"},
                {"role": "assistant", "content": [shot]},
                {"role": "user", "content": question},
            ],
            prefixlint_template="faq",
        )
    assert [r.divergence is None for r in reports] == [True, True, False]
    assert reports[2].divergence.path == "messages[1].content[0]"


def test_predictions_are_per_model_and_per_cache_key(server: ProviderServer) -> None:
    """A prefix cached for one model or under one ``prompt_cache_key`` is not predicted for another."""
    reports: list[CacheReport] = []
    client = _openai(server, reports)
    for model, key in (("gpt-4o", "a"), ("gpt-4o", "a"), ("gpt-4o-mini", "a"), ("gpt-4o", "b")):
        client.chat.completions.create(model=model, messages=_system_and(""), prompt_cache_key=key)
    assert [r.cache_key for r in reports] == ["a", "a", "a", "b"]
    assert reports[1].predicted_cached > 1000
    assert reports[2].predicted_cached == 0 and reports[3].predicted_cached == 0


def test_a_dry_run_predicts_what_was_sent_not_what_would_be(server: ProviderServer) -> None:
    """A dry run sends the request unchanged (no breakpoints), and predicts and counts that request."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0),
        on_report=reports.append,
        dry_run=True,
    )
    for q in ("a", "b"):
        client.messages.create(
            model=CLAUDE, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": q}]
        )
    assert "cache_control" not in str(server.requests)
    assert any("breakpoint" in c for c in reports[1].changes)
    assert reports[1].local_prompt_tokens > 1024 and reports[1].reported_cached == 0
    assert reports[1].predicted_cached == 0 and reports[1].verdict is Verdict.EXPECTED_MISS


def test_the_prediction_follows_the_request_with_its_volatile_values_moved(server: ProviderServer) -> None:
    """A timestamp at the head of the system prompt is moved behind it, and the prediction is made
    for the request as sent: the second request is a predicted hit."""
    reports: list[CacheReport] = []
    client = _openai(server, reports)
    for day in ("Monday", "Tuesday"):
        system = [{"type": "text", "text": sdk.volatile(f"Today is {day}")}, {"type": "text", "text": SYSTEM}]
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": "q"}]
        )
    assert "Today" not in str(server.requests[1]["messages"][0])
    assert reports[1].predicted_cached > 1000 and reports[1].verdict is Verdict.HIT
