"""The prefix tracker on its own: extended retention and the routing rate per prefix."""

from __future__ import annotations

import pytest

from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.model.providers import get_provider
from prefixlint.model.tokens import tokenizer_for
from prefixlint.sdk import tracker as tracker_module
from prefixlint.sdk.tracker import PrefixTracker, tracker_for

CACHE = PieceCache(tokenizer_for("openai", "gpt-4o"))
DOMAIN = ("openai", "org", "gpt-4o", "k")
SYSTEM = " ".join(f"rule{i}: refunds within {i} days." for i in range(300))  # about 3,000 tokens


def _pieces(system: str = SYSTEM, question: str = "q") -> list:
    body = {
        "model": "gpt-4o",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
    }
    return pieces_from_request(body, "chat", CACHE)


def test_a_request_sent_with_extended_retention_stays_cached_past_the_default_lifetime() -> None:
    hours = 2 * 3600.0
    for ttl, cached in ((86400.0, True), (None, False)):
        tracker = PrefixTracker(get_provider("openai"))
        flight = tracker.sent(DOMAIN, _pieces(), 0.0, ttl)
        tracker.begun(DOMAIN, flight, 1.0, ttl)
        assert (tracker.predict(DOMAIN, _pieces(question="q2"), hours).cached > 0) is cached


def test_a_failed_request_with_extended_retention_may_still_be_cached_hours_later() -> None:
    hours = 2 * 3600.0
    for ttl, possible in ((86400.0, True), (None, False)):
        tracker = PrefixTracker(get_provider("openai"))
        tracker.failed(DOMAIN, tracker.sent(DOMAIN, _pieces(), 0.0, ttl))
        pred = tracker.predict(DOMAIN, _pieces(question="q2"), hours)
        assert pred.cached == 0 and (pred.upper > 0) is possible


def test_the_routing_rate_counts_requests_per_routing_prefix() -> None:
    tracker = PrefixTracker(get_provider("openai"))
    other = " ".join(f"clause{i}: shipping in {i} days." for i in range(300))
    assert [tracker.route_rate(DOMAIN, _pieces(), t) for t in (0.0, 1.0, 2.0)] == [1, 2, 3]
    assert tracker.route_rate(DOMAIN, _pieces(other), 3.0) == 1  # another head: another route
    assert tracker.route_rate(DOMAIN, _pieces(question="later"), 90.0) == 1  # a minute later: alone again


def test_each_provider_gets_one_tracker_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """``tracker_for`` keeps one tracker per provider, built with that provider's spec (its cache model
    and routing), and hands the same one to every client of the provider."""
    monkeypatch.setattr(tracker_module, "_TRACKERS", {})  # as in a fresh process
    openai_spec, anthropic_spec = get_provider("openai"), get_provider("anthropic")
    first = tracker_for(openai_spec)
    other = tracker_for(anthropic_spec)
    assert tracker_for(openai_spec) is first and tracker_for(anthropic_spec) is other
    assert other is not first
    assert first.spec is openai_spec and other.spec is anthropic_spec
    # a fresh tracker watches drift: a changed stable part of one template is named
    old, new = _pieces(), _pieces(system=SYSTEM.replace("rule7:", "rule 7:"))
    assert first.drift.check("bot", "template", old[:1], old) is None
    assert first.drift.check("bot", "template", new[:1], new) is not None
