"""The tracker's first sightings: a request recorded uncounted is counted, as sent, when its head recurs."""

from __future__ import annotations

import math

import pytest

from prefixlint.analysis.payloads.markers import VolatileText
from prefixlint.analysis.payloads.pieces import (
    PieceCache,
    _raw_pieces,
    head_key,
    pieces_from_request,
    uncounted_pieces,
)
from prefixlint.model.providers import get_provider
from prefixlint.model.tokens import tokenizer_for
from prefixlint.sdk import sightings
from prefixlint.sdk.sightings import Sighting
from prefixlint.sdk.tracker import PrefixTracker

SYSTEM = "You are a careful assistant for a library. " * 20  # about 180 tokens, many 16-token blocks
DOMAIN = ("vllm", "", "m", "")
CACHE = PieceCache(tokenizer_for("openai", "gpt-4o"))


def _body(question: str, system: str = SYSTEM) -> dict:
    return {
        "model": "m",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
    }


def _sighting(body: dict, now: float, domain: tuple[str, str, str, str] = DOMAIN) -> Sighting:
    pieces, texts = uncounted_pieces(body, "chat", CACHE)
    key = head_key(body, "chat")
    assert key is not None
    return Sighting(domain, key, pieces, texts, CACHE, now, now, None, math.inf, sum(map(len, texts)))


def _predict(tracker: PrefixTracker, body: dict, now: float):
    return tracker.predict(DOMAIN, pieces_from_request(body, "chat", CACHE), now)


def test_a_request_without_pieces_is_never_deferred() -> None:
    tracker = PrefixTracker(get_provider("vllm"))
    assert tracker.new_head(None) is False
    assert tracker._heads.keys == {}


def test_a_head_is_new_once() -> None:
    tracker = PrefixTracker(get_provider("vllm"))
    assert tracker.new_head(7) is True
    assert tracker.new_head(7) is False
    assert tracker.new_head(8) is True


def test_a_sighting_that_began_is_cached_for_the_next_request_with_its_head() -> None:
    tracker = PrefixTracker(get_provider("vllm"))
    first = _body("What is a prefix cache?")
    s = _sighting(first, 100.0)
    assert tracker.new_head(s.key) is True
    tracker.sighted(s)
    assert tracker.sighting_state(s) == (None, False)  # waiting, nothing tokenized
    tracker.sighting_begun(s, 101.0)
    assert s.begun == 101.0 and tracker.sighting_state(s) == (None, False)

    second = _body("And a KV page?")
    assert _predict(tracker, second, 102.0).cached == 0  # not counted yet: the tracker has nothing
    assert tracker.new_head(s.key) is False  # the second sighting counts the first
    flight, counted = tracker.sighting_state(s)
    assert counted and flight is not None and s.texts is None
    assert [p.tokens for p in s.pieces] == [p.tokens for p in pieces_from_request(first, "chat", CACHE)]
    pred = _predict(tracker, second, 102.0)
    system_tokens = pieces_from_request(second, "chat", CACHE)[0].end
    assert 0 < pred.cached <= pred.upper
    assert system_tokens - 16 <= pred.cached <= system_tokens  # the system prompt, to its last full block


def test_a_counted_sighting_in_flight_is_possible_until_it_begins_or_fails() -> None:
    for outcome in ("begun", "failed"):
        tracker = PrefixTracker(get_provider("vllm"))
        s = _sighting(_body("first"), 100.0)
        assert tracker.new_head(s.key)
        tracker.sighted(s)
        assert tracker.new_head(s.key) is False  # counted while still in flight
        pred = _predict(tracker, _body("second"), 101.0)
        assert pred.cached == 0 and pred.upper > 0
        if outcome == "begun":
            tracker.sighting_begun(s, 102.0)
            after = _predict(tracker, _body("third"), 103.0)
            assert after.cached > 0
            tracker.sighting_failed(s)  # too late: it began
            assert s.failed is False
            assert _predict(tracker, _body("fourth"), 104.0).cached == after.cached
        else:
            tracker.sighting_failed(s)
            after = _predict(tracker, _body("third"), 103.0)
            assert after.cached == 0 and after.upper == pred.upper  # it may have written the cache
            tracker.sighting_begun(s, 104.0)  # too late: it failed
            assert s.begun is None
            assert _predict(tracker, _body("fourth"), 105.0).cached == 0
        assert tracker._interval(DOMAIN)._flights == {}  # the flight ended either way


def test_a_failed_sighting_is_recorded_as_failed_when_counted() -> None:
    tracker = PrefixTracker(get_provider("vllm"))
    s = _sighting(_body("first"), 100.0)
    assert tracker.new_head(s.key)
    tracker.sighted(s)
    tracker.sighting_failed(s)
    assert s.failed and tracker.sighting_state(s) == (None, False)
    assert tracker.new_head(s.key) is False
    flight, counted = tracker.sighting_state(s)
    assert counted and flight is not None
    assert tracker._interval(DOMAIN)._flights == {}  # recorded as sent, then as failed
    pred = _predict(tracker, _body("second"), 101.0)
    assert pred.cached == 0 and pred.upper > 0  # a failed request may have written the cache


def test_a_second_sighting_recorded_before_the_first_was_counted_is_counted_at_once() -> None:
    tracker = PrefixTracker(get_provider("vllm"))
    a, b = _sighting(_body("first"), 100.0), _sighting(_body("second"), 100.5)
    assert tracker.new_head(a.key)
    tracker.sighted(a)
    tracker.sighted(b)  # same head, a still waits: b cannot wait too
    assert tracker.sighting_state(b)[1] is True
    assert tracker.sighting_state(a)[1] is False


def test_past_the_key_bound_every_waiting_sighting_is_counted_and_deferring_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sightings, "MAX_KEYS", 1)
    tracker = PrefixTracker(get_provider("vllm"))
    a = _sighting(_body("first"), 100.0)
    assert tracker.new_head(a.key)
    tracker.sighted(a)
    other = _sighting(_body("q", system="Another application entirely. " * 10), 101.0)
    assert tracker.new_head(other.key) is False  # full: stop deferring
    assert tracker.sighting_state(a)[1] is True
    assert tracker.new_head(12345) is False
    late = _sighting(_body("q", system="A third one. " * 10), 102.0)
    tracker.sighted(late)  # not deferring any more: counted at once
    assert tracker.sighting_state(late)[1] is True


def test_past_the_waiting_bound_the_oldest_sighting_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sightings, "MAX_WAITING", 1)
    tracker = PrefixTracker(get_provider("vllm"))
    a = _sighting(_body("q"), 100.0)
    b = _sighting(_body("q", system="Another application entirely. " * 10), 101.0)
    for s in (a, b):
        assert tracker.new_head(s.key)
        tracker.sighted(s)
    assert tracker.sighting_state(a)[1] is True
    assert tracker.sighting_state(b)[1] is False
    assert _predict(tracker, _body("next"), 102.0).upper > 0  # a is in flight, may be cached


def test_a_counted_sighting_joins_the_routing_rate_when_it_was_sent() -> None:
    tracker = PrefixTracker(get_provider("openai"))
    domain = ("openai", "org", "gpt-4o", "")
    long_system = "Rules of the house, read them all. " * 120
    s = _sighting(_body("first", system=long_system), 100.0, domain)
    assert tracker.new_head(s.key)
    tracker.sighted(s)
    assert tracker.new_head(s.key) is False
    pieces = pieces_from_request(_body("second", system=long_system), "chat", CACHE)
    assert tracker.route_rate(domain, pieces, 110.0) == 2  # the sighting at 100 s and this one
    assert tracker.route_rate(domain, pieces, 161.0) == 2  # the first fell out of the 60 s window


def _first_text_key(body: dict, api: str) -> int | None:
    """What ``head_key`` is defined as: a hash of the first bytes of the first raw piece's text."""
    raw = [text for _, _, _, text, _, _, _ in _raw_pieces(body, api)]
    return hash(raw[0][:16].encode("utf-8", "surrogatepass")[:16]) if raw else None


@pytest.mark.parametrize(
    ("body", "api"),
    [
        (_body("q"), "chat"),  # the plain first message (the fast path)
        ({"messages": [{"role": "user", "content": "é" * 40}]}, "chat"),  # 16 bytes cut inside a character
        ({"input": [{"role": "user", "content": "hello there"}]}, "responses"),
        ({"input": "a plain string input"}, "responses"),
        ({"instructions": "be brief", "input": [{"role": "user", "content": "x"}]}, "responses"),
        ({"system": "sys text", "messages": [{"role": "user", "content": "x"}]}, "messages"),
        (
            {"tools": [{"name": "t", "description": "d"}], "messages": [{"role": "user", "content": "x"}]},
            "chat",
        ),
        (
            {"response_format": {"type": "json_object"}, "messages": [{"role": "user", "content": "x"}]},
            "chat",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "part one"}]}]}, "chat"),
        ({"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}]}, "chat"),
        ({"messages": [{"role": "user", "content": VolatileText("today is monday", "d")}]}, "chat"),
        ({"messages": [{"role": "user"}]}, "chat"),
        ({"messages": ["not a dict"]}, "chat"),
        ({"messages": []}, "chat"),
        ({"model": "m"}, "chat"),
    ],
)
def test_head_key_is_the_hash_of_the_first_pieces_first_bytes(body: dict, api: str) -> None:
    assert head_key(body, api) == _first_text_key(body, api)


def test_head_keys_differ_when_the_first_bytes_differ_and_agree_when_only_later_text_does() -> None:
    a = head_key(_body("q", system="A" * 15 + "b and then more"), "chat")
    assert a == head_key(_body("other", system="A" * 15 + "b but different later"), "chat")
    assert a != head_key(_body("q", system="A" * 15 + "c and then more"), "chat")
    assert head_key({"messages": [{"role": "user", "content": ""}]}, "chat") == hash(b"")
