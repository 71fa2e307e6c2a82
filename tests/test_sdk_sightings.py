"""First sightings: the prediction for an unseen head, and the bounds on what waits uncounted."""

from __future__ import annotations

import dataclasses

import pytest

from prefixlint.model.pieces import SKETCH_BLOCK
from prefixlint.model.prefix_cache import Prediction
from prefixlint.model.providers import get_provider
from prefixlint.sdk import sightings
from prefixlint.sdk.sightings import Heads, Sighting, unseen_prediction


def _sighting(key: int, *, chars: int = 10, sent: float = 1000.0, begun: float | None = 1000.0) -> Sighting:
    return Sighting(
        domain=("openai", "org", "gpt-4o", "tenant"),
        key=key,
        pieces=[],
        texts=["x" * chars],
        cache=None,  # type: ignore[arg-type]
        sent=sent,
        mono=sent,
        ttl=None,
        lifetime=300.0,
        chars=chars,
        begun=begun,
    )


@pytest.mark.parametrize(
    ("provider", "expected_upper"),
    [
        ("openai", 0),  # one sketch block is far below the 1,024-token minimum
        ("anthropic", 0),  # breakpoint model: nothing without a marked, matching block
        ("gemini", 0),  # token granularity, but a 2,048-token minimum
        ("vllm", 16),  # block of 16, no minimum beyond one block: a shared start may hit
    ],
)
def test_an_unseen_head_is_surely_uncached_with_at_most_its_block_slack(
    provider: str, expected_upper: int
) -> None:
    rules = get_provider(provider).rules_for(None)
    assert unseen_prediction(rules) == Prediction(0, expected_upper, 0, 0)


def test_an_unseen_head_under_exact_or_no_caching_has_no_slack() -> None:
    rules = dataclasses.replace(get_provider("vllm").rules_for(None), min_cacheable_tokens=0)
    assert unseen_prediction(rules).upper == SKETCH_BLOCK
    assert unseen_prediction(dataclasses.replace(rules, granularity="exact")).upper == 0
    assert unseen_prediction(dataclasses.replace(rules, supports_caching=False)).upper == 0


def test_a_key_has_one_waiting_sighting_that_is_taken_once() -> None:
    heads = Heads()
    a = _sighting(1, chars=7)
    heads.add(a)
    assert heads.chars == 7 and list(heads.waiting) == [a]
    assert heads.take(2) is None
    assert heads.take(1) is a
    assert heads.keys == {1: None} and heads.chars == 0
    assert heads.take(1) is None  # the key stays known, nothing waits


def test_overflow_counts_the_oldest_past_the_count_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sightings, "MAX_WAITING", 2)
    heads = Heads()
    a, b, c = (_sighting(k) for k in (1, 2, 3))
    for s in (a, b):
        heads.add(s)
    assert heads.overflow(now=1001.0) == []  # at the bound, not past it
    heads.add(c)
    assert heads.overflow(now=1001.0) == [a]
    assert heads.keys[1] is None and heads.chars == 20 and list(heads.waiting) == [b, c]


def test_overflow_counts_the_oldest_past_the_text_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sightings, "MAX_WAITING_CHARS", 16)
    heads = Heads()
    a, b = _sighting(1, chars=8), _sighting(2, chars=8)
    heads.add(a)
    heads.add(b)
    assert heads.overflow(now=1001.0) == []  # 16 characters: at the bound
    c = _sighting(3, chars=1)
    heads.add(c)
    assert heads.overflow(now=1001.0) == [a]
    assert heads.chars == 9


def test_overflow_skips_taken_sightings_and_drops_expired_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sightings, "MAX_WAITING", 1)
    heads = Heads()
    taken, expired, fresh, last = _sighting(1), _sighting(2, begun=0.0), _sighting(3), _sighting(4)
    for s in (taken, expired, fresh, last):
        heads.add(s)
    heads.take(1)
    # taken: counted already (skipped); expired: its cache entries are gone (dropped uncounted)
    assert heads.overflow(now=1001.0) == [fresh]
    assert expired.texts is None and heads.keys[2] is None
    assert fresh.texts is not None
    assert list(heads.waiting) == [last] and heads.chars == 10


def test_a_sighting_is_over_when_its_lifetime_has_passed() -> None:
    begun = _sighting(1, begun=1000.0)
    assert not begun.over(1300.0) and begun.over(1300.5)
    lost = _sighting(2, sent=1000.0, begun=None)  # never began: lost after LOST_FLIGHT_S
    assert not lost.over(1000.0 + sightings.LOST_FLIGHT_S + 300.0)
    assert lost.over(1000.0 + sightings.LOST_FLIGHT_S + 300.5)


def test_stop_hands_back_every_waiting_sighting_and_stops_deferring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sightings, "MAX_KEYS", 2)
    heads = Heads()
    a, b = _sighting(1), _sighting(2)
    heads.add(a)
    assert not heads.full()
    heads.add(b)
    assert heads.full()
    heads.take(1)
    assert heads.stop() == [b]
    assert heads.keys == {} and not heads.waiting and heads.chars == 0 and heads.deferring is False
