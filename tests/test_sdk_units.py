"""SDK pieces without a server: options, usage normalisation, tenancy, OpenTelemetry, the test helper."""

from __future__ import annotations

import base64

import pytest

import prefixlint.sdk as sdk
from prefixlint.analysis.payloads.markers import VolatileText
from prefixlint.model.providers import get_provider
from prefixlint.sdk import otel
from prefixlint.sdk.options import SdkConfigError, options_from
from prefixlint.sdk.report import CacheReport, Verdict
from prefixlint.sdk.tenancy import derive_cache_salt, derive_prompt_cache_key
from prefixlint.sdk.usage import normalize_usage
from prefixlint.sdk.volatile import move_volatile, volatile
from prefixlint.testing import assert_shared_prefix, shared_prefix

SECRET = base64.b64encode(b"\x01" * 32).decode()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"nonsense": 1}, "unknown wrap option"),
        ({"provider": "nope"}, "unknown provider"),
        ({"volatile_placement": "middle"}, "volatile_placement"),
        ({"static_ttl": "2h"}, "static_ttl"),
        ({"salt_secret": "not base64!!"}, "base64"),
        ({"salt_secret": base64.b64encode(b"short").decode()}, "256 bits"),
        ({"on_report": 3}, "callable"),
        ({"hit_rate_threshold": 2}, "^hit_rate_threshold must be between 0 and 1$"),
        ({"hit_rate_window": 0}, "^hit_rate_window must be at least 1$"),
        ({"tenant": 5}, "^tenant must be a str, got int$"),
        ({"require_tenant": True, "tenant": ""}, "^tenant must not be empty$"),
        ({"send_cache_salt": True}, "salt_secret"),
    ],
)
def test_configuration_errors_raise_at_wrap_time(options: dict, message: str, monkeypatch) -> None:
    monkeypatch.delenv(sdk.SALT_SECRET_ENV, raising=False)
    import openai

    with pytest.raises(SdkConfigError, match=message):
        sdk.wrap(openai.OpenAI(api_key="k"), **options)


def test_the_bounds_of_the_alarm_settings_are_allowed() -> None:
    """A threshold of 0 or 1 and a window of 1 are valid."""
    for threshold in (0.0, 1.0):
        assert options_from({"hit_rate_threshold": threshold, "hit_rate_window": 1}).hit_rate_window == 1


def test_salt_secret_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(sdk.SALT_SECRET_ENV, SECRET)
    assert options_from({}).salt_secret == SECRET


def test_usage_normalisation_from_the_data_file() -> None:
    details = {"cached_tokens": 1920, "cache_write_tokens": 80}
    openai_chat = {"prompt_tokens": 2000, "prompt_tokens_details": details}
    u = normalize_usage(openai_chat, get_provider("openai"))
    assert (u.prompt_tokens, u.cached, u.cache_write) == (2000, 1920, 80)
    responses = {"input_tokens": 1500, "input_tokens_details": {"cached_tokens": 1152}}
    assert normalize_usage(responses, get_provider("openai")).cached == 1152
    claude = {
        "input_tokens": 50,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 200,
        "cache_creation": {"ephemeral_5m_input_tokens": 150, "ephemeral_1h_input_tokens": 50},
    }
    u = normalize_usage(claude, get_provider("anthropic"))
    got = (u.prompt_tokens, u.cached, u.cache_write, u.cache_write_5m, u.cache_write_1h)
    assert got == (3250, 3000, 200, 150, 50)
    deepseek = {"prompt_tokens": 640, "prompt_cache_hit_tokens": 576, "prompt_cache_miss_tokens": 64}
    u = normalize_usage(deepseek, get_provider("deepseek"))
    assert (u.cached, u.cache_miss) == (576, 64)
    assert normalize_usage({"prompt_tokens": 100}, get_provider("vllm")).cached == 0  # omitted when 0
    assert normalize_usage({"prompt_tokens": 100}, get_provider("openai")).cached is None
    assert normalize_usage(None, get_provider("openai")) is None
    assert normalize_usage({"prompt_tokens": "x"}, get_provider("openai")) is None


def test_keys_and_salts_hold_no_secret_or_name() -> None:
    secret = base64.b64decode(SECRET)
    k1 = derive_prompt_cache_key("acme", "abc")
    assert k1 == derive_prompt_cache_key("acme", "abc") != derive_prompt_cache_key("acme", "abd")
    assert k1 != derive_prompt_cache_key("acme", "abc", secret) and "acme" not in k1 and len(k1) == 28
    salt = derive_cache_salt("acme", secret)
    assert len(salt) == 43 and salt != derive_cache_salt("globex", secret)
    assert salt != derive_cache_salt("acme", b"\x02" * 32)


def test_tenant_context_nests_and_resets() -> None:
    assert sdk.current_tenant() is None
    with sdk.tenant("a"):
        with sdk.tenant("b"):
            assert sdk.current_tenant() == "b"
        assert sdk.current_tenant() == "a"
    assert sdk.current_tenant() is None


def test_volatile_moves_to_the_last_user_message_or_a_trailing_message() -> None:
    stamp = sdk.volatile("t=1", "time")
    body = {
        "system": [{"type": "text", "text": "static"}, {"type": "text", "text": stamp}],
        "messages": [{"role": "user", "content": "q"}],
    }
    out, changes = move_volatile(body, "messages", {"rid": "r1", "docs": ["d1", "d2"]})
    assert out["system"] == [{"type": "text", "text": "static"}]
    tail = out["messages"][0]["content"][1]["text"]
    assert isinstance(tail, VolatileText)
    assert tail.splitlines() == ["Request context:", "t=1", "rid: r1", "docs[0]: d1", "docs[1]: d2"]
    assert body["system"][1]["text"] == "t=1" and len(changes) == 2
    out2, _ = move_volatile(body, "messages", None, placement="trailing_message")
    assert out2["messages"][-1]["role"] == "user" and out2["messages"][0] == {"role": "user", "content": "q"}
    resp, _ = move_volatile({"instructions": sdk.volatile("now"), "input": "hi"}, "responses", None)
    assert "instructions" not in resp and resp["input"][0]["content"][1]["type"] == "input_text"
    same, none = move_volatile({"messages": [{"role": "user", "content": "q"}]}, "chat", None)
    assert none == [] and same["messages"][0]["content"] == "q"


def test_otel_attributes_follow_genai_conventions() -> None:
    from opentelemetry import trace

    class Recording(trace.NonRecordingSpan):
        def __init__(self) -> None:
            super().__init__(trace.INVALID_SPAN_CONTEXT)
            self.attrs: dict = {}

        def is_recording(self) -> bool:
            return True

        def set_attributes(self, attributes: dict) -> None:
            self.attrs.update(attributes)

    report = CacheReport(
        "anthropic",
        "claude-x",
        "messages",
        Verdict.HIT,
        900,
        1000,
        1200,
        1100,
        cache_write=50,
        tokens_saved=1000,
    )
    assert not otel.emit(report)  # no recording span
    span = Recording()
    with trace.use_span(span):
        assert otel.emit(report)
    assert span.attrs == {
        "gen_ai.provider.name": "anthropic",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "claude-x",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.cache_read.input_tokens": 1000,
        "gen_ai.usage.cache_creation.input_tokens": 50,
        "prefixlint.cache.verdict": "hit",
        "prefixlint.cache.predicted_tokens": 900,
        "prefixlint.cache.tokens_saved": 1000,
        "prefixlint.cache.usd_saved": 0.0,
    }
    drifted = CacheReport(
        "openai",
        None,
        "chat",
        Verdict.DRIFT,
        0,
        None,
        None,
        10,
        causes=("prefix changed at messages[0].content",),
        divergence=sdk.Divergence(32, "messages[0].content"),
    )
    attrs = otel.attributes(drifted)
    assert attrs["gen_ai.provider.name"] == "openai" and "gen_ai.request.model" not in attrs
    assert "gen_ai.usage.input_tokens" not in attrs and "gen_ai.usage.cache_read.input_tokens" not in attrs
    assert "gen_ai.usage.cache_creation.input_tokens" not in attrs
    assert attrs["prefixlint.cache.causes"] == ["prefix changed at messages[0].content"]
    assert attrs["prefixlint.cache.divergence.path"] == "messages[0].content"
    assert attrs["prefixlint.cache.divergence.token_index"] == 32
    assert otel.attributes(CacheReport("azure", "m", "chat", Verdict.HIT, 0, 0, 5, 5))[
        "gen_ai.provider.name"
    ] == ("azure.ai.openai")
    other = CacheReport("vllm", "m", "chat", Verdict.HIT, 0, 0, 5, 5)  # no GenAI name: its own
    assert otel.attributes(other)["gen_ai.provider.name"] == "vllm"


def _builder(today: str, docs: list[str], leak: bool = False) -> dict:
    system = "You are the billing assistant. " + " ".join(f"policy{i}" for i in range(600))
    if leak:
        system = f"Today is {today}. " + system
        return {
            "model": "gpt-4o",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "help"}],
        }
    return {
        "model": "gpt-4o",
        "messages": [
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": system},
                    {"type": "text", "text": sdk.volatile(f"Today is {today}")},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "help"},
                    {"type": "text", "text": sdk.volatile("\n".join(docs))},
                ],
            },
        ],
    }


def test_pytest_helper_passes_a_stable_builder_and_names_a_leak() -> None:
    result = assert_shared_prefix(
        _builder,
        {"today": "2026-01-01", "docs": ["a"]},
        {"today": "2026-06-30", "docs": ["b", "c"]},
        min_tokens=1024,
    )
    assert result.tokens >= 1024
    with pytest.raises(AssertionError, match=r"first divergence at messages\[0\]\.content.*2026-01-01"):
        assert_shared_prefix(
            _builder,
            {"today": "2026-01-01", "docs": [], "leak": True},
            {"today": "2026-06-30", "docs": [], "leak": True},
            min_tokens=1024,
        )
    raw = shared_prefix(_builder("a", [], True), _builder("b", [], True), through_sdk=False)
    assert raw.tokens < 16


def test_dump_model_sends_what_the_clients_send() -> None:
    """Wire names, JSON values, only the fields that were set, and no ``__api_exclude__`` fields."""
    from datetime import datetime, timezone

    from pydantic import BaseModel, Field

    from prefixlint.sdk.plain import dump_model, plain_request

    class Block(BaseModel):
        __api_exclude__ = {"parsed"}
        kind: str = Field(alias="type")
        at: datetime
        parsed: dict | None = None
        note: str | None = None

    block = Block(type="text", at=datetime(2026, 1, 2, tzinfo=timezone.utc), parsed={"a": 1})
    assert dump_model(block) == {"type": "text", "at": "2026-01-02T00:00:00Z"}
    body = {"messages": [{"role": "assistant", "content": [block]}], "model": "m"}
    out = plain_request(body)
    assert out["messages"][0]["content"] == [{"type": "text", "at": "2026-01-02T00:00:00Z"}]
    assert body["messages"][0]["content"][0] is block  # the caller's request is not modified
    same = {"messages": [{"role": "user", "content": "q"}], "system": [{"type": "text", "text": "s"}]}
    assert plain_request(same) is same


def test_report_summary_and_dict() -> None:
    report = CacheReport(
        "openai",
        "gpt-4o",
        "chat",
        Verdict.DRIFT,
        100,
        50,
        2000,
        1990,
        causes=("prefix changed at messages[0].content",),
        divergence=sdk.Divergence(48, "messages[0].content"),
    )
    assert report.summary() == (
        "prefixlint cache drift: openai/gpt-4o chat cached=50 predicted=100 prompt=2000 "
        "causes=prefix changed at messages[0].content diverged_at=messages[0].content@48"
    )
    d = report.to_dict()
    assert d["verdict"] == "drift" and d["divergence"]["token_index"] == 48 and d["prompt_tokens"] == 2000
    assert report.hit_ratio == 0.025
    assert CacheReport("openai", None, "chat", Verdict.UNVERIFIED, 0, None, None, 5).hit_ratio == 0.0


def test_cache_interval_counts_requests_in_flight_as_may_be_cached() -> None:
    """The interval the SDK and the audit share: lower = responses begun, upper = also in flight."""
    from prefixlint.analysis.payloads import PieceCache, pieces_from_request
    from prefixlint.model.prefix_cache import CacheInterval
    from prefixlint.model.tokens import tokenizer_for

    cache = PieceCache(tokenizer_for("openai", "gpt-4o"))
    system = "Policy. " + " ".join(f"rule{i}" for i in range(900))

    def req(q: str) -> list:
        return pieces_from_request(
            {"messages": [{"role": "system", "content": system}, {"role": "user", "content": q}]},
            "chat",
            cache,
        )

    iv = CacheInterval.for_provider("openai", "gpt-4o")
    a, b, c = req("a"), req("b"), req("c")
    fa = iv.sent(a, 0.0)
    pb = iv.predict(b, 0.1)  # a is in flight: b may or may not hit
    assert pb.cached == 0 and pb.upper >= 1024 and pb.shared_upper >= 1024
    fb = iv.sent(b, 0.1)
    pa = iv.widen(fa, iv.lower.predict(a, 0.0))  # b, sent while a waited, may have written first
    assert pa.cached == 0 and pa.upper >= 1024
    iv.begun(fa, 0.2)
    pc = iv.predict(c, 0.3)
    assert pc.cached >= 1024 and pc.upper >= pc.cached  # a's response began: c must hit
    iv.failed(fb)
    assert not iv._flights
    stale = iv.sent(c, 0.3)
    iv.sent(req("d"), 10_000.0)  # long after: the lost flight is dropped
    assert id(stale) not in iv._flights


def _piece(i: int, section, end: int, stable: bool = True, role: str | None = None, mi: int | None = None):
    from prefixlint.model.pieces import Piece

    return Piece(f"p[{i}]", section, role, 10, bytes([i]), bytes([i]), end, (), stable, None, mi)


def test_breakpoint_choice_keeps_the_api_rules() -> None:
    """Anthropic's rules for breakpoints, on pieces the wrapper could meet: at most the model's limit
    (the last ones kept), 1h entries before 5m ones, never on a volatile block, only past the minimum."""
    from dataclasses import replace

    from prefixlint.model.layout import Section
    from prefixlint.sdk.breakpoints import choose

    rules = get_provider("anthropic").rules_for("claude-sonnet-4-5")  # 1024-token minimum, 4 breakpoints
    pieces = [
        _piece(0, Section.TOOLS, 1500),
        _piece(1, Section.SYSTEM, 3000),
        _piece(2, Section.MESSAGES, 4000, role="user", mi=0),
        _piece(3, Section.MESSAGES, 5000, role="assistant", mi=1),
        _piece(4, Section.MESSAGES, 6000, role="user", mi=2),
        _piece(5, Section.MESSAGES, 6100, stable=False, role="user", mi=2),
    ]
    pieces[0] = replace(pieces[0], path="tools[0]")
    assert choose(pieces, rules, "1h") == [(0, "1h"), (1, "1h"), (3, "5m"), (4, "5m")]  # not the volatile 5
    assert choose(pieces, replace(rules, max_breakpoints=2), "1h") == [(3, "5m"), (4, "5m")]  # the last ones
    assert choose(pieces, replace(rules, max_breakpoints=0)) == []
    assert choose([replace(p, stable=False) for p in pieces], rules) == []
    short = [replace(p, end=p.end // 10) for p in pieces]  # nothing reaches 1024 tokens before piece 3
    assert choose(short, rules, "1h") == []
    # a system block after a message (not an Anthropic shape, but the rule holds): 1h never follows 5m
    odd = [
        pieces[2],
        replace(pieces[3], section=Section.SYSTEM, role="system", message_index=None),
        pieces[4],
    ]
    assert choose(odd, rules, "1h") == [(0, "5m"), (1, "5m"), (2, "5m")]  # the system one demoted
    # no system prompt, no tools: the history and the last stable block still get theirs
    bare = pieces[2:5]
    assert choose(bare, rules) == [(1, "5m"), (2, "5m")]
    assert choose(bare, rules, "1h") == [(1, "5m"), (2, "5m")]  # 1h is for tools and system only
    # the minimum is inclusive: a block that ends exactly at it is cached
    exact = [replace(pieces[1], end=rules.min_cacheable_tokens)]
    assert choose(exact, rules) == [(0, "5m")]
    assert choose([replace(exact[0], end=rules.min_cacheable_tokens - 1)], rules) == []
    # a tools-section piece that is not a tool definition (``tool_choice``) is not a tool breakpoint
    choice = [replace(pieces[0], path="tool_choice"), pieces[1]]
    assert choose(choice, rules, "1h") == [(1, "1h")]
    # one breakpoint allowed: the last candidate
    assert choose(pieces, replace(rules, max_breakpoints=1), "1h") == [(4, "5m")]


def test_a_deepseek_base_url_selects_the_deepseek_provider() -> None:
    """An OpenAI client pointed at DeepSeek is wrapped with DeepSeek's cache rules; other URLs are OpenAI."""
    import openai

    client = openai.OpenAI(base_url="https://api.deepseek.com/v1", api_key="k")
    assert sdk.detect_provider(client) == "deepseek"
    sdk.wrap(client)
    assert client._prefixlint_state.spec.name == "deepseek"
    assert sdk.detect_provider(openai.OpenAI(base_url="https://example.com/v1", api_key="k")) == "openai"


def test_a_client_without_a_base_url_is_taken_for_openai() -> None:
    """A client object with no ``base_url`` attribute falls back to OpenAI instead of failing."""

    class Client:
        pass

    assert sdk.detect_provider(Client()) == "openai"


def test_volatile_values_without_a_user_message_go_to_a_trailing_one() -> None:
    """With no user message (or no message list at all) the values become a trailing user message."""
    chat, changes = move_volatile(
        {"messages": [{"role": "system", "content": ["static", sdk.volatile("t=1")]}]}, "chat", None
    )
    assert chat["messages"] == [
        {"role": "system", "content": ["static"]},
        {"role": "user", "content": [{"type": "text", "text": "Request context:\nt=1"}]},
    ]
    assert changes == [
        "messages[0]: moved volatile value(s) to the end",
        "messages: volatile values sent as a trailing message",
    ]
    resp, changes = move_volatile({"instructions": sdk.volatile("now")}, "responses", None)
    assert resp == {
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Request context:\nnow"}]}]
    }
    assert changes[0] == "instructions: moved volatile value(s) to the end"


def test_volatile_values_join_the_last_user_message_not_a_later_one() -> None:
    """The values are appended to the last *user* message even when an assistant message follows it;
    a string content becomes a text part of the API's own type."""
    body = {
        "input": [
            {"role": "system", "content": [{"type": "input_text", "text": sdk.volatile("t=1")}, "static"]},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"},
        ]
    }
    out, _ = move_volatile(body, "responses", None)
    assert out["input"][2] == {"role": "assistant", "content": "a"}
    assert out["input"][1]["content"] == [
        {"type": "input_text", "text": "q"},
        {"type": "input_text", "text": "Request context:\nt=1"},
    ]


def test_plain_request_dumps_sdk_messages_and_tool_calls() -> None:
    """An OpenAI reply appended as is, or only its tool calls, reaches the wrapper as plain dicts."""
    from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageToolCall

    from prefixlint.sdk.plain import dump_model, plain_request

    call = ChatCompletionMessageToolCall.model_validate(
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    )
    reply = ChatCompletionMessage(role="assistant", content=None, tool_calls=[call])
    user = {"role": "user", "content": "q"}
    calls_only = {"role": "assistant", "content": None, "tool_calls": [call]}
    as_dict = {"role": "assistant", "content": None, "tool_calls": [dump_model(call)]}
    for msgs in ([user, reply], (user, reply), [user, calls_only]):
        out = plain_request({"messages": msgs, "model": "m"})["messages"]
        assert out[0] == user
        assert type(out[1]) is dict and type(out[1]["tool_calls"][0]) is dict
        assert out[1]["tool_calls"] == as_dict["tool_calls"]


def test_volatile_keeps_its_name() -> None:
    assert volatile("2026-01-02", name="date").name == "date"
    assert volatile("2026-01-02").name == VolatileText("2026-01-02").name


def test_rewrite_lists_canonical_and_volatile_changes_and_reads_responses_input() -> None:
    from prefixlint.sdk.options import SdkOptions
    from prefixlint.sdk.prepare import rewrite

    opts = SdkOptions(sort_keys=True)
    tools = [{"type": "function", "name": "f", "parameters": {"type": "object", "b": 1, "a": 2}}]
    body = {"model": "m", "tools": tools, "input": [{"role": "user", "content": "q"}]}
    _, changes = rewrite(body, "responses", opts, True, {"date": "2026-01-02"})
    assert "tools: sorted keys" in changes
    assert any("volatile" in c for c in changes)
    marked = {
        "model": "m",
        "input": [{"role": "user", "content": [volatile("d1")]}, {"role": "user", "content": "q"}],
    }
    out, changes = rewrite(marked, "responses", SdkOptions(), False, None)
    assert [m["content"][0]["text"] for m in out["input"]] == ["q"]  # the marked value left the head
    assert out["input"][0]["content"][-1]["text"].endswith("d1")


def test_stream_usage_keeps_the_callers_stream_options() -> None:
    from prefixlint.sdk.options import SdkOptions
    from prefixlint.sdk.prepare import with_stream_usage

    opts = SdkOptions(include_usage=True)
    own = {"model": "m", "stream_options": {"include_usage": False}}
    assert with_stream_usage(own, "chat", True, opts) is own
    added = with_stream_usage({"model": "m"}, "chat", True, opts)
    assert added["stream_options"] == {"include_usage": True}
