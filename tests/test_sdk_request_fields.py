"""Fields the caller passes survive preparation, and per-call options reach the report (real HTTP)."""

from __future__ import annotations

import base64
import logging

import anthropic
import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport, Verdict
from prefixlint.sdk.tenancy import derive_cache_salt

SECRET = base64.b64encode(bytes(range(32))).decode()
SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def server(provider_server: ProviderServer) -> ProviderServer:
    provider_server.reset()
    provider_server.salt_mode = False
    sdk.forget()
    return provider_server


def _msgs(user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


@pytest.mark.parametrize("path", ["prepared", "after an internal error"])
def test_a_salted_request_keeps_the_callers_extra_body(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    if path != "prepared":  # the tenancy-only fallback (``ClientState._tenancy_only``)

        def broken(*args, **kwargs):
            raise RuntimeError("simulated prefixlint bug")

        monkeypatch.setattr("prefixlint.sdk.state.rewrite", broken)
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        provider="vllm",
        salt_secret=SECRET,
        tenant="acme",
    )
    client.chat.completions.create(model="llama", messages=_msgs("a"), extra_body={"seed": 3, "top_k": 5})
    sent = server.requests[-1]
    assert (sent["seed"], sent["top_k"]) == (3, 5)
    assert sent["cache_salt"] == derive_cache_salt("acme", base64.b64decode(SECRET))


def test_a_callers_key_in_extra_body_is_the_only_key(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        tenant="acme",
        salt_secret=SECRET,
        on_report=reports.append,
    )
    client.chat.completions.create(
        model="gpt-4o", messages=_msgs("a"), extra_body={"prompt_cache_key": "mine"}
    )
    assert server.requests[-1]["prompt_cache_key"] == "mine"
    assert reports[-1].cache_key == "mine"
    assert "prompt_cache_key: set" not in reports[-1].changes


def test_a_named_template_is_the_reports_template(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), on_report=reports.append
    )
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prefixlint_template="support-bot")
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    assert reports[0].template == "support-bot"
    assert reports[1].template != "support-bot" and "test_sdk_request_fields" in reports[1].template


def test_reports_name_the_provider_model_and_the_key_that_was_sent(server: ProviderServer) -> None:
    """A report names the provider and model that served it, the key actually sent, and how it counted."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        tenant="acme",
        on_report=reports.append,
    )
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    claude = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )
    claude.messages.create(
        model="claude-sonnet-4-5", max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
    )
    gpt, sonnet = reports
    assert (gpt.provider, gpt.model, gpt.tokens_exact) == ("openai", "gpt-4o", True)
    assert gpt.cache_key is not None and gpt.cache_key == server.requests[0]["prompt_cache_key"]
    assert (sonnet.provider, sonnet.model, sonnet.tokens_exact) == ("anthropic", "claude-sonnet-4-5", False)
    assert sonnet.cache_key is None


def test_a_dry_run_reports_the_key_it_would_have_sent(server: ProviderServer) -> None:
    """In a dry run nothing is added to the request, and the report carries the key that would have been."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        tenant="acme",
        on_report=reports.append,
    )
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    sdk.wrap(client, dry_run=True)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    key = server.requests[0]["prompt_cache_key"]
    assert "prompt_cache_key" not in server.requests[1]
    assert reports[1].dry_run and reports[1].cache_key == key


def test_the_stream_usage_option_is_listed_among_the_changes(server: ProviderServer) -> None:
    """Asking a chat stream for its usage is reported as that change, under its field name."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        include_usage=True,
        on_report=reports.append,
    )
    list(client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), stream=True))
    assert server.requests[-1]["stream_options"] == {"include_usage": True}
    assert "stream_options.include_usage: set" in reports[-1].changes


@pytest.mark.parametrize(("retention", "verdict"), [("24h", Verdict.HIT), (None, Verdict.UNEXPECTED_HIT)])
def test_an_extended_retention_keeps_the_prefix_cached_past_the_default_ttl(
    server: ProviderServer, retention: str | None, verdict: Verdict
) -> None:
    """``prompt_cache_retention="24h"``: two hours later the prefix is still predicted cached.

    Without it the prefix expired after the default lifetime, so the (TTL-less) test server's hit is
    unexpected; with it the hit is what was predicted.
    """
    now = [1_000_000.0]
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        clock=lambda: now[0],
        on_report=reports.append,
    )
    extra = {"prompt_cache_retention": retention} if retention else {}
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), **extra)
    now[0] += 2 * 3600
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"), **extra)
    assert server.requests[-1].get("prompt_cache_retention") == retention
    second = reports[1]
    assert second.reported_cached and second.reported_cached > 1000
    assert second.verdict is verdict
    assert (second.predicted_cached > 1000) is (retention is not None)


def test_a_cache_key_fn_sees_the_api_and_the_template(server: ProviderServer) -> None:
    """The request facts given to ``cache_key_fn`` name the API called and the request's template."""
    seen: list[sdk.RequestInfo] = []

    def key_fn(info: sdk.RequestInfo) -> str:
        seen.append(info)
        return "k"

    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        cache_key_fn=key_fn,
        tenant="acme",
    )
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prefixlint_template="support-bot")
    client.responses.create(model="gpt-4o", instructions=SYSTEM, input="a")
    assert [(i.api, i.provider, i.model) for i in seen] == [
        ("chat", "openai", "gpt-4o"),
        ("responses", "openai", "gpt-4o"),
    ]
    assert seen[0].template == "support-bot" and seen[0].tenant == seen[1].tenant == "acme"
    assert "test_sdk_request_fields" in seen[1].template


def test_breakpoints_follow_the_models_own_minimum(server: ProviderServer) -> None:
    """A prompt gets breakpoints for a model that caches it, none for one whose minimum it is below."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )
    for model in ("claude-sonnet-4-5", "claude-haiku-4-5"):  # minimums: 1024 and 4096 tokens
        client.messages.create(
            model=model, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
        )
    sonnet, haiku = server.requests
    assert 1024 < reports[0].local_prompt_tokens < 4096
    assert "cache_control" in str(sonnet["system"]) and reports[0].breakpoints > 0
    assert "cache_control" not in str(haiku) and reports[1].breakpoints == 0


@pytest.mark.parametrize("path", ["prepared", "after an internal error"])
def test_a_release_without_the_key_parameter_gets_it_in_extra_body(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    """When ``create`` takes no ``prompt_cache_key`` (older openai releases), the key travels in
    ``extra_body``, next to the caller's own fields, also on the tenancy-only fallback path."""
    if path != "prepared":

        def broken(*args, **kwargs):
            raise RuntimeError("simulated prefixlint bug")

        monkeypatch.setattr("prefixlint.sdk.state.rewrite", broken)
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
    current = client.chat.completions.create

    def older_create(*, model: str, messages: list, extra_body: dict | None = None) -> object:
        return current(model=model, messages=messages, extra_body=extra_body)

    client.chat.completions.create = older_create  # type: ignore[method-assign]
    client.chat.completions.parse = older_create  # type: ignore[method-assign]  # same release, same keywords
    reports: list[CacheReport] = []
    sdk.wrap(client, tenant="acme", on_report=reports.append)
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), extra_body={"seed": 3})
    sent = server.requests[-1]
    assert sent["seed"] == 3 and sent["prompt_cache_key"]
    if path == "prepared":
        assert (
            sent["prompt_cache_key"] == reports[-1].cache_key
            and "prompt_cache_key: set" in reports[-1].changes
        )
    else:
        assert reports == []
        messages = [r.getMessage() for r in caplog.records if r.name == "prefixlint.sdk"]
        assert "prefixlint: could not prepare the request; sending it with tenancy fields only" in messages


def test_a_callers_key_keyword_is_the_only_key(server: ProviderServer) -> None:
    """A ``prompt_cache_key`` the caller passes as a keyword is sent and reported; none is derived."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        tenant="acme",
        on_report=reports.append,
    )
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prompt_cache_key="mine")
    assert server.requests[-1]["prompt_cache_key"] == "mine" and reports[-1].cache_key == "mine"
    assert "prompt_cache_key: set" not in reports[-1].changes


def test_a_failing_cache_key_fn_sends_no_key_and_says_so(server: ProviderServer, caplog) -> None:
    """An exception in ``cache_key_fn`` is logged; the request goes out without a key."""

    def key_fn(info: sdk.RequestInfo) -> str:
        raise ValueError("no session")

    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        cache_key_fn=key_fn,
        tenant="acme",
    )
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    assert "prompt_cache_key" not in server.requests[-1]
    [record] = [r for r in caplog.records if r.name == "prefixlint.sdk"]
    assert record.getMessage() == "prefixlint: cache_key_fn failed; no prompt_cache_key set"
    assert "no session" in caplog.text  # with the traceback


def test_a_per_call_tenant_of_the_wrong_type_falls_back_to_the_wrapped_tenant(
    server: ProviderServer, caplog
) -> None:
    """``prefixlint_tenant=42`` is logged and ignored: the request is keyed for the ``wrap`` tenant."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        tenant="acme",
        on_report=reports.append,
    )
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prefixlint_tenant=42)
    messages = [r.getMessage() for r in caplog.records if r.name == "prefixlint.sdk"]
    assert messages == [
        "prefixlint: prefixlint_tenant must be a str, got int; the per-call tenant is ignored"
    ]
    acme, fallback = server.requests
    assert fallback["prompt_cache_key"] == acme["prompt_cache_key"]
    assert reports[1].tenant_hash == reports[0].tenant_hash is not None


def test_refusals_under_require_tenant_say_why(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``require_tenant`` a missing tenant and a failed preparation raise with their reason."""
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), require_tenant=True
    )
    with pytest.raises(
        sdk.TenantRequiredError, match=r"^require_tenant=True and no tenant is set; the request"
    ):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))

    def broken(*args, **kwargs):
        raise RuntimeError("simulated prefixlint bug")

    monkeypatch.setattr("prefixlint.sdk.state.rewrite", broken)
    with pytest.raises(sdk.PrepareError) as err:
        client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), prefixlint_tenant="acme")
    assert str(err.value) == (
        "prefixlint could not prepare the request (RuntimeError: simulated prefixlint bug); "
        "with require_tenant=True nothing was sent"
    )
    assert server.requests == []


def test_reports_carry_the_time_spent_preparing(server: ProviderServer) -> None:
    """Each report says how long preparing its request took, in milliseconds."""
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), on_report=reports.append
    )
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    assert isinstance(reports[0].overhead_ms, float) and 0 < reports[0].overhead_ms < 10_000
