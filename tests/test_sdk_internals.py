"""The private internals of openai/anthropic the wrapper relies on, and what happens when they move.

The wrapper observes streams through ``Stream._iterator`` (both SDKs) and Anthropic's
``MessageStreamManager.__api_request``; the Rust tokenizer comes from ``bpe_openai._bindings``.
Each test runs against whatever versions are installed: CI runs this file against the newest
releases (the main environment) and against the lowest versions the extras allow
(``tests/compat/lowest.txt``). When an internal is missing, the wrapper switches that part off
with one log line and the caller's call works as without it.
"""

from __future__ import annotations

import functools
import logging

import anthropic
import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.sdk import CacheReport, Verdict

SYSTEM = "You are a careful assistant. " + " ".join(f"rule{i}" for i in range(900))
CLAUDE = "claude-sonnet-4-5"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def server(provider_server: ProviderServer) -> ProviderServer:
    return provider_server


@pytest.fixture(autouse=True)
def _reset(server: ProviderServer, monkeypatch) -> None:
    server.reset()
    sdk.forget()
    monkeypatch.setattr("prefixlint.sdk.streams._WARNED", set())


def _msgs(user: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _rename_iterator(monkeypatch, cls: type) -> None:
    """Simulate a release whose ``Stream`` keeps its iterator under another name."""
    init = cls.__init__

    def new_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.__dict__.pop("_iterator", None)
        self.__dict__["_renamed"] = self.__stream__()

    monkeypatch.setattr(cls, "__init__", new_init)
    if isinstance(cls.__dict__.get("_iterator"), (property, functools.cached_property)):
        monkeypatch.delattr(cls, "_iterator")
    monkeypatch.setattr(cls, "__next__", lambda self: self._renamed.__next__())
    monkeypatch.setattr(cls, "__iter__", lambda self: iter(self._renamed))


def test_openai_streams_are_observed_through_their_iterator(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        include_usage=True,
        on_report=reports.append,
    )
    for q in ("a", "b"):
        chunks = list(client.chat.completions.create(model="gpt-4o", messages=_msgs(q), stream=True))
        assert chunks[-1].usage is not None
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]


def test_the_tenant_key_reaches_the_server_on_every_release(server: ProviderServer) -> None:
    """Releases before ``prompt_cache_key`` was a keyword of ``create`` get it through ``extra_body``."""
    client = sdk.wrap(openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), tenant="acme")
    client.chat.completions.create(model="gpt-4o", messages=_msgs("a"), extra_body={"seed": 1})
    sent = server.requests[-1]
    assert sent["prompt_cache_key"].startswith("pfx-") and sent["seed"] == 1


def test_openai_stream_without_iterator_passes_through_unverified(
    server: ProviderServer, monkeypatch, caplog
) -> None:
    _rename_iterator(monkeypatch, openai.Stream)
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0),
        include_usage=True,
        on_report=reports.append,
    )
    with caplog.at_level(logging.WARNING, logger="prefixlint.sdk"):
        for q in ("a", "b"):
            chunks = list(client.chat.completions.create(model="gpt-4o", messages=_msgs(q), stream=True))
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "w0 w1 w2 "
    assert caplog.text.count("has no _iterator") == 1  # one line, not one per request
    assert [r.verdict for r in reports] == [Verdict.UNVERIFIED, Verdict.UNVERIFIED]
    assert all(b["prompt_cache_key"] for b in server.requests if "prompt_cache_key" in b)


def test_anthropic_stream_helper_is_observed_through_its_request(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )
    for q in ("a", "b"):
        with client.messages.stream(
            model=CLAUDE, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": q}]
        ) as s:
            assert "".join(s.text_stream) == "w0 w1 w2 "
    assert [r.verdict for r in reports] == [Verdict.EXPECTED_MISS, Verdict.HIT]
    assert "cache_control" in str(server.requests[-1]["system"])


def test_anthropic_stream_manager_without_api_request_passes_through(
    server: ProviderServer, monkeypatch, caplog
) -> None:
    from anthropic.lib.streaming import MessageStreamManager

    init = MessageStreamManager.__init__
    enter = MessageStreamManager.__enter__

    def new_init(self, *args, **kwargs):  # a release that keeps the request under another name
        init(self, *args, **kwargs)
        self._renamed_request = self.__dict__.pop("_MessageStreamManager__api_request")

    def new_enter(self):
        self.__dict__["_MessageStreamManager__api_request"] = self._renamed_request
        return enter(self)

    monkeypatch.setattr(MessageStreamManager, "__init__", new_init)
    monkeypatch.setattr(MessageStreamManager, "__enter__", new_enter)
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )
    with (
        caplog.at_level(logging.WARNING, logger="prefixlint.sdk"),
        client.messages.stream(
            model=CLAUDE, max_tokens=5, system=SYSTEM, messages=[{"role": "user", "content": "a"}]
        ) as s,
    ):
        assert s.get_final_message().content[0].text == "w0 w1 w2 "
    assert "has no __api_request" in caplog.text
    assert [r.verdict for r in reports] == [Verdict.UNVERIFIED]
    assert "cache_control" in str(server.requests[-1]["system"])  # the request was still prepared


def test_anthropic_create_stream_without_iterator_passes_through(
    server: ProviderServer, monkeypatch, caplog
) -> None:
    _rename_iterator(monkeypatch, anthropic.Stream)
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0), on_report=reports.append
    )
    with caplog.at_level(logging.WARNING, logger="prefixlint.sdk"):
        events = list(
            client.messages.create(
                model=CLAUDE,
                max_tokens=5,
                system=SYSTEM,
                stream=True,
                messages=[{"role": "user", "content": "a"}],
            )
        )
    assert events[0].type == "message_start" and events[-1].type == "message_stop"
    assert "has no _iterator" in caplog.text and reports[-1].verdict is Verdict.UNVERIFIED


def test_bpe_openai_bindings_missing_falls_back_to_tiktoken(monkeypatch, caplog) -> None:
    import sys

    import bpe_openai

    from prefixlint.analysis.payloads import pieces
    from prefixlint.model.tokens import tokenizer_for

    monkeypatch.delattr(bpe_openai, "_bindings", raising=False)  # the import fails as if it moved
    monkeypatch.setitem(sys.modules, "bpe_openai._bindings", None)
    pieces._rust_encoder.cache_clear()
    tok = tokenizer_for("openai", "gpt-4o")
    try:
        with caplog.at_level(logging.WARNING):
            cache = pieces.PieceCache(tok)
        assert cache._rust is None and "bpe_openai's tokenizer is unavailable" in caplog.text
        text = "Hello, world! caf\u00e9 " * 50
        assert cache.entry("system", "system", text).tokens == len(tok.encode(text))
    finally:
        pieces._rust_encoder.cache_clear()


def test_bpe_openai_bindings_in_use_agree_with_tiktoken() -> None:
    from prefixlint.analysis.payloads import pieces
    from prefixlint.model.tokens import tokenizer_for

    tok = tokenizer_for("openai", "gpt-4o")
    rust = pieces._agreeing_rust_encoder(tok)
    assert rust is not None  # the installed bpe-openai exposes _bindings and agrees on the probe
    text = "def f(x):\n    return x**2  # caf\u00e9 \U0001f642" * 20
    assert rust(text) == tok.encode(text)
