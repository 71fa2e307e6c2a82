"""After an internal error the request still goes out with its tenancy fields, and only those.

Without ``require_tenant`` an error inside prefixlint never reaches the caller: the request is sent
as given plus its tenant's ``prompt_cache_key`` or ``cache_salt`` (``ClientState._tenancy_only``).
Real clients over real HTTP; the bug is simulated by breaking the rewrite step. A salted request
keeping the caller's ``extra_body`` is tested on both paths in ``test_sdk_request_fields``.
"""

from __future__ import annotations

import base64
import logging

import anthropic
import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk.wrap import _STATE_ATTR

SECRET = base64.b64encode(bytes(range(32))).decode()
SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(300))

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def server(provider_server: ProviderServer, monkeypatch) -> ProviderServer:
    provider_server.reset()
    provider_server.salt_mode = False
    sdk.forget()

    def broken(*args, **kwargs):
        raise RuntimeError("simulated prefixlint bug")

    monkeypatch.setattr("prefixlint.sdk.state.rewrite", broken)
    return provider_server


def _msgs(user: str = "hi") -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def test_an_anthropic_request_gets_no_openai_key_and_still_goes_out(server: ProviderServer, caplog) -> None:
    client = sdk.wrap(anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), tenant="acme")
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        out = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=8, system=SYSTEM, messages=_msgs()[1:]
        )
        with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=8, system=SYSTEM, messages=_msgs()[1:]
        ) as stream:
            stream.get_final_message()
    assert out.content
    assert len(server.requests) == 2
    assert all("prompt_cache_key" not in r and "cache_salt" not in r for r in server.requests)
    assert "could not add the tenancy fields" not in caplog.text  # the fallback itself did not fail


def test_without_a_tenant_the_request_goes_out_as_given_with_one_error_logged(
    server: ProviderServer, caplog
) -> None:
    client = sdk.wrap(openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0))
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        client.chat.completions.create(model="gpt-4o", messages=_msgs(), extra_body={"seed": 1})
    sent = server.requests[-1]
    assert "prompt_cache_key" not in sent and sent["seed"] == 1
    assert "sending it with tenancy fields only" in caplog.text
    assert "could not add the tenancy fields" not in caplog.text


def test_a_callers_key_in_extra_body_is_not_doubled_in_the_body(server: ProviderServer) -> None:
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        tenant="acme",
        salt_secret=SECRET,
    )
    kwargs = {"model": "gpt-4o", "messages": _msgs(), "extra_body": {"prompt_cache_key": "mine"}}
    out = getattr(client, _STATE_ATTR)._tenancy_only("chat", kwargs, "acme")
    assert "prompt_cache_key" not in out and out["extra_body"] == {"prompt_cache_key": "mine"}
    client.chat.completions.create(**kwargs)
    assert server.requests[-1]["prompt_cache_key"] == "mine"


def test_when_the_fallback_fails_too_the_request_goes_out_unchanged_and_says_so(
    server: ProviderServer, monkeypatch, caplog
) -> None:
    def also_broken(*args, **kwargs):
        raise RuntimeError("simulated second bug")

    monkeypatch.setattr("prefixlint.sdk.state.derive_prompt_cache_key", also_broken)
    client = sdk.wrap(openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), tenant="acme")
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        out = client.chat.completions.create(model="gpt-4o", messages=_msgs())
    assert out.choices[0].message.content
    assert "prompt_cache_key" not in server.requests[-1]
    said = [r.getMessage() for r in caplog.records]
    assert "prefixlint: could not add the tenancy fields; sending the request unchanged" in said
