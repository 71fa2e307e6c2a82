"""Options that change what the wrapper adds: Anthropic breakpoints off, a secret-keyed tenant id."""

from __future__ import annotations

import base64
import json

import anthropic
import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport

SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(autouse=True)
def _reset(provider_server: ProviderServer) -> None:
    provider_server.reset()
    sdk.forget()


def test_breakpoints_off_sends_an_anthropic_request_without_cache_control(
    provider_server: ProviderServer,
) -> None:
    raw = anthropic.Anthropic(base_url=provider_server.url, api_key="k", max_retries=0)
    client = sdk.wrap(raw, breakpoints=False)
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=10, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
    )
    (body,) = provider_server.requests
    assert "cache_control" not in json.dumps(body)


def test_with_a_secret_the_reported_tenant_id_depends_on_the_secret(provider_server: ProviderServer) -> None:
    """The same tenant under two secrets gets two ids, so an id cannot be matched to a name
    without the secret."""
    ids = []
    for fill in (1, 2):
        reports: list[CacheReport] = []
        raw = openai.OpenAI(base_url=provider_server.url + "/v1", api_key=f"k{fill}", max_retries=0)
        secret = base64.b64encode(bytes([fill]) * 32).decode()
        client = sdk.wrap(raw, tenant="acme", salt_secret=secret, on_report=reports.append)
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": "a"}]
        )
        sdk.flush()
        ids.append(reports[0].tenant_hash)
    assert ids[0] and ids[1] and ids[0] != ids[1]


def test_a_callers_own_anthropic_breakpoint_is_reported_once(provider_server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    raw = anthropic.Anthropic(base_url=provider_server.url, api_key="k", max_retries=0)
    client = sdk.wrap(raw, on_report=reports.append)
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=10, system=system, messages=[{"role": "user", "content": "a"}]
    )
    sdk.flush()
    assert [r.breakpoints for r in reports] == [1]
