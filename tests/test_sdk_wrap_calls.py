"""How ``wrap`` passes a call through and which options a (second) wrap applies."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport, SdkOptions

SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))


@pytest.fixture(autouse=True)
def _reset(provider_server: ProviderServer) -> None:
    provider_server.reset()
    sdk.forget()


def _msgs(user: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


class _SyncCompletions:
    """A chat resource whose ``create`` takes a positional argument, as some client-like objects do."""

    def __init__(self, inner: openai.OpenAI, seen: list[tuple]) -> None:
        self.inner, self.seen = inner, seen

    def create(self, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(args)
        return self.inner.chat.completions.create(**kwargs)


class _AsyncCompletions:
    def __init__(self, inner: openai.AsyncOpenAI, seen: list[tuple]) -> None:
        self.inner, self.seen = inner, seen

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(args)
        return await self.inner.chat.completions.create(**kwargs)


class _Shim:
    def __init__(self, inner: Any, completions: Any) -> None:
        self.base_url, self.api_key = inner.base_url, inner.api_key
        self.chat = type("Chat", (), {})()
        self.chat.completions = completions


def _broken(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("simulated prefixlint bug")


@pytest.mark.parametrize("internal_error", [False, True])
def test_positional_arguments_and_keywords_reach_a_sync_method(
    provider_server: ProviderServer, monkeypatch, internal_error: bool
) -> None:
    """Accounted or (after an internal error) passed through: the method gets the caller's
    positional arguments and keywords."""
    if internal_error:
        monkeypatch.setattr("prefixlint.sdk.state.rewrite", _broken)
    seen: list[tuple] = []
    inner = openai.OpenAI(base_url=provider_server.url + "/v1", api_key="k", max_retries=0)
    shim = sdk.wrap(_Shim(inner, _SyncCompletions(inner, seen)))
    out = shim.chat.completions.create("positional", model="gpt-4o", messages=_msgs("a"))
    assert out.choices[0].message.content == "ok"
    assert seen == [("positional",)]


@pytest.mark.parametrize("internal_error", [False, True])
def test_positional_arguments_and_keywords_reach_an_async_method(
    provider_server: ProviderServer, monkeypatch, internal_error: bool
) -> None:
    if internal_error:
        monkeypatch.setattr("prefixlint.sdk.state.rewrite", _broken)
    seen: list[tuple] = []
    inner = openai.AsyncOpenAI(base_url=provider_server.url + "/v1", api_key="k", max_retries=0)
    shim = sdk.wrap(_Shim(inner, _AsyncCompletions(inner, seen)))

    async def main() -> Any:
        try:
            return await shim.chat.completions.create("positional", model="gpt-4o", messages=_msgs("a"))
        finally:
            await inner.close()

    out = asyncio.run(main())
    assert out.choices[0].message.content == "ok"
    assert seen == [("positional",)]


def test_an_options_object_is_applied_on_a_first_and_a_second_wrap(provider_server: ProviderServer) -> None:
    """``wrap(client, SdkOptions(...))`` uses the object's settings; wrapping again with only an
    object (no keywords) applies it too."""
    first: list[CacheReport] = []
    second: list[CacheReport] = []
    client = openai.OpenAI(base_url=provider_server.url + "/v1", api_key="k", max_retries=0)
    sdk.wrap(client, SdkOptions(on_report=first.append))
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"))
    assert len(first) == 1
    sdk.wrap(client, SdkOptions(on_report=second.append))
    client.chat.completions.create(model="gpt-4o", messages=_msgs("b"))
    assert (len(first), len(second)) == (1, 1)
