"""A stream or stream manager dropped before its first item still gives its one report."""

from __future__ import annotations

import asyncio
import gc

import anthropic
import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport

SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))
MSGS = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "a"}]

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::DeprecationWarning")


@pytest.fixture(autouse=True)
def _reset(provider_server: ProviderServer) -> None:
    provider_server.reset()
    sdk.forget()


def test_a_sync_stream_dropped_unread_reports(provider_server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    raw = openai.OpenAI(base_url=provider_server.url + "/v1", api_key="k", max_retries=0)
    client = sdk.wrap(raw, on_report=reports.append)
    stream = client.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
    del stream
    gc.collect()
    sdk.flush()
    assert len(reports) == 1


def test_an_async_stream_dropped_unread_reports(provider_server: ProviderServer) -> None:
    reports: list[CacheReport] = []

    async def main() -> None:
        raw = openai.AsyncOpenAI(base_url=provider_server.url + "/v1", api_key="k", max_retries=0)
        client = sdk.wrap(raw, on_report=reports.append)
        stream = await client.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
        del stream
        gc.collect()

    asyncio.run(main())
    sdk.flush()
    assert len(reports) == 1


def test_an_anthropic_stream_manager_dropped_unentered_reports(provider_server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    raw = anthropic.Anthropic(base_url=provider_server.url, api_key="k", max_retries=0)
    client = sdk.wrap(raw, on_report=reports.append)
    manager = client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=10, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
    )
    del manager
    gc.collect()
    sdk.flush()
    assert len(reports) == 1
