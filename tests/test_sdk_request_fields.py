"""Fields the caller passes survive preparation, and per-call options reach the report (real HTTP)."""

from __future__ import annotations

import base64

import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport
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
