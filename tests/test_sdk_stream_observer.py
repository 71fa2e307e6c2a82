"""The stream observer on its own: usage read from each API's events, merged, reported once."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from anthropic.types import MessageDeltaUsage, Usage

from prefixlint.sdk.streams import StreamObserver, _merge_max


def _observe(api: str, items: list[Any]) -> list[Any]:
    got: list[Any] = []
    obs = StreamObserver(api, got.append)
    for item in items:
        obs.see(item)
    obs.done()
    obs.done()  # reported once
    return got


def test_merge_keeps_the_largest_number_and_the_first_other_value() -> None:
    a = {"input_tokens": 10, "cache": {"read": 5}, "tier": "standard", "flag": True}
    b = {
        "input_tokens": 7,
        "output_tokens": 3,
        "cache": {"read": 9, "write": 1},
        "tier": "priority",
        "x": None,
    }
    assert _merge_max(a, b) == {
        "input_tokens": 10,
        "output_tokens": 3,
        "cache": {"read": 9, "write": 1},
        "tier": "standard",
        "flag": True,
    }
    assert _merge_max({"n": "text"}, {"n": 4}) == {"n": 4}  # a number replaces a non-number
    assert _merge_max({}, {"flag": False}) == {"flag": False}  # a bool is a value, not a count
    assert _merge_max({"flag": True}, {"flag": False}) == {"flag": True}
    assert _merge_max({"cache": None}, {"cache": {"read": 1}}) == {"cache": {"read": 1}}
    assert a["cache"] == {"read": 5}  # inputs are not edited


def test_chat_usage_rides_on_the_last_chunk(caplog: pytest.LogCaptureFixture) -> None:
    usage = SimpleNamespace(prompt_tokens=12)
    chunks = [SimpleNamespace(usage=None), object(), SimpleNamespace(usage=usage)]  # object(): no usage field
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        assert _observe("chat", chunks) == [usage]
    assert caplog.records == []


def test_responses_usage_comes_with_the_final_event(caplog: pytest.LogCaptureFixture) -> None:
    usage = SimpleNamespace(input_tokens=30)
    for end in ("response.completed", "response.incomplete", "response.failed"):
        events = [
            object(),
            SimpleNamespace(type="response.output_text.delta"),
            SimpleNamespace(type=end, response=SimpleNamespace(usage=usage)),
        ]
        with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
            assert _observe("responses", events) == [usage]
    no_response = [SimpleNamespace(type="response.completed")]
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        assert _observe("responses", no_response) == [None]
    assert caplog.records == []


def test_anthropic_counts_are_merged_from_start_and_delta(caplog: pytest.LogCaptureFixture) -> None:
    start = SimpleNamespace(
        type="message_start",
        message=SimpleNamespace(usage=Usage(input_tokens=20, output_tokens=1, cache_read_input_tokens=0)),
    )
    delta = SimpleNamespace(
        type="message_delta",
        usage=MessageDeltaUsage(output_tokens=40, cache_read_input_tokens=1024, input_tokens=None),
    )
    events = [object(), start, SimpleNamespace(type="content_block_delta"), delta]
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        (usage,) = _observe("messages", events)
    assert usage["input_tokens"] == 20
    assert usage["output_tokens"] == 40
    assert usage["cache_read_input_tokens"] == 1024
    assert caplog.records == []
    assert _observe("messages", [SimpleNamespace(type="ping")]) == [None]


def test_an_unreadable_item_is_logged_and_the_stream_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    broken = SimpleNamespace(type="message_start")  # no .message
    delta = SimpleNamespace(type="message_delta", usage={"output_tokens": 5})
    with caplog.at_level(logging.ERROR, logger="prefixlint.sdk"):
        assert _observe("messages", [broken, delta]) == [{"output_tokens": 5}]
    assert [r.getMessage() for r in caplog.records] == ["prefixlint: could not read a stream item"]


def test_anthropic_nested_cache_counts_of_message_start_survive_a_sparser_delta() -> None:
    """A ``message_delta`` whose ``cache_creation`` lacks a field or has a lower count keeps the
    counts ``message_start`` gave."""
    start = SimpleNamespace(
        type="message_start",
        message=SimpleNamespace(
            usage={
                "input_tokens": 10,
                "cache_creation": {"ephemeral_1h_input_tokens": 200, "ephemeral_5m": 7},
            }
        ),
    )
    delta = SimpleNamespace(
        type="message_delta", usage={"output_tokens": 3, "cache_creation": {"ephemeral_5m": 0}}
    )
    (usage,) = _observe("messages", [start, delta])
    assert usage["cache_creation"] == {"ephemeral_1h_input_tokens": 200, "ephemeral_5m": 7}
