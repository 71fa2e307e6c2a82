"""The running totals, the low-hit-rate alarm and the dollars saved, as units (no HTTP)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from prefixlint.model.providers import Price
from prefixlint.sdk.accounting import Accountant, _usd_saved
from prefixlint.sdk.report import CacheReport, Verdict
from prefixlint.sdk.stats import Stats


def _report(
    cached: int | None, prompt: int | None, tenant: str | None = "t1", template: str = "a.py:1"
) -> CacheReport:
    return CacheReport(
        provider="openai",
        model="gpt-4.1",
        api="chat",
        verdict=Verdict.HIT if cached else Verdict.EXPECTED_MISS,
        predicted_cached=cached or 0,
        reported_cached=cached,
        prompt_tokens=prompt,
        local_prompt_tokens=prompt or 0,
        tokens_saved=cached or 0,
        usd_saved=(cached or 0) / 1e6,
        tenant_hash=tenant,
        template=template,
    )


def test_requests_without_usage_are_counted_but_not_verified() -> None:
    stats = Stats(threshold=0.5, window=1)
    assert stats.add(_report(None, 1000)) == []
    assert stats.add(_report(10, 0)) == []  # no prompt size: nothing to rate
    snap = stats.snapshot()
    assert (snap.requests, snap.verified, snap.prompt_tokens, snap.cached_tokens) == (2, 0, 0, 0)
    assert snap.verdicts == {"expected_miss": 1, "hit": 1}


def test_totals_without_an_alarm_threshold() -> None:
    stats = Stats()
    for cached in (0, 800, 900):
        assert stats.add(_report(cached, 1000)) == []
    snap = stats.snapshot()
    assert (snap.requests, snap.verified, snap.prompt_tokens, snap.cached_tokens, snap.tokens_saved) == (
        3,
        3,
        3000,
        1700,
        1700,
    )
    assert snap.usd_saved == pytest.approx(1700 / 1e6)
    assert snap.hit_rate == pytest.approx(1700 / 3000)


def test_the_alarm_fires_once_per_key_when_a_full_window_is_low_and_again_after_recovery() -> None:
    stats = Stats(threshold=0.5, window=3)
    assert stats.add(_report(0, 1000)) == []
    assert stats.add(_report(100, 1000)) == []  # the window is not full yet
    # tokens over the window, not the mean of ratios: (0 + 100 + 1400) / (1000 + 1000 + 2000) = 0.375
    fired = stats.add(_report(1400, 2000))
    assert fired == [("tenant", "t1", pytest.approx(0.375)), ("template", "a.py:1", pytest.approx(0.375))]
    assert stats.add(_report(0, 1000)) == []  # still low: no second alarm for the same keys
    for _ in range(3):
        assert stats.add(_report(900, 1000)) == []  # recovered: at or above the threshold
    assert stats.add(_report(0, 1000)) == []  # 1800 / 3000 = 0.6: not low yet
    fired = stats.add(_report(0, 1000))  # 900 / 3000: low again, so it fires again
    assert [(kind, key) for kind, key, _ in fired] == [("tenant", "t1"), ("template", "a.py:1")]
    assert fired[0][2] == pytest.approx(0.3)


def test_a_rate_exactly_at_the_threshold_is_not_low() -> None:
    stats = Stats(threshold=0.5, window=2)
    stats.add(_report(500, 1000))
    assert stats.add(_report(500, 1000)) == []


def test_each_tenant_and_template_has_its_own_window() -> None:
    stats = Stats(threshold=0.5, window=2)
    assert stats.add(_report(0, 1000, tenant=None, template="x.py:1")) == []
    assert stats.add(_report(900, 1000, tenant="t2", template="y.py:1")) == []
    fired = stats.add(_report(0, 1000, tenant=None, template="x.py:1"))
    assert [(kind, key) for kind, key, _ in fired] == [("tenant", "-"), ("template", "x.py:1")]


def _rules(price: Price, multiplier: float | None = None) -> SimpleNamespace:
    return SimpleNamespace(price=price, cache_write_multiplier=multiplier)


def test_dollars_saved_net_of_the_write_premiums_reported() -> None:
    price = Price(input=3.0, cached_input=0.3, cache_write=3.75, cache_write_1h=6.0)
    usage = SimpleNamespace(cache_write=1000, cache_write_1h=400)
    saved = 1_000_000 * (3.0 - 0.3) / 1e6
    premiums = 600 * (3.75 - 3.0) / 1e6 + 400 * (6.0 - 3.0) / 1e6
    assert _usd_saved(_rules(price), 1_000_000, usage) == pytest.approx(saved - premiums)
    assert _usd_saved(_rules(price), 1_000_000, None) == pytest.approx(saved)
    assert _usd_saved(
        _rules(price), 1_000_000, SimpleNamespace(cache_write=0, cache_write_1h=0)
    ) == pytest.approx(saved)


def test_dollars_saved_with_a_write_multiplier_instead_of_a_1h_price() -> None:
    price = Price(input=2.0, cached_input=0.5)
    usage = SimpleNamespace(cache_write=1000, cache_write_1h=0)
    expected = 2000 * 1.5 / 1e6 - 1000 * (1.25 - 1) * 2.0 / 1e6
    assert _usd_saved(_rules(price, 1.25), 2000, usage) == pytest.approx(expected)
    assert _usd_saved(_rules(price, None), 2000, usage) == pytest.approx(2000 * 1.5 / 1e6)
    assert isinstance(_usd_saved(_rules(price), 0, None), float)


def _accountant(**opts: object) -> tuple[Accountant, Stats]:
    stats = Stats(threshold=0.5, window=1)
    settings = SimpleNamespace(on_low_hit_rate=None, on_report=None, log_level=None, otel=False)
    settings.__dict__.update(opts)
    return Accountant(settings, spec=None, tracker=None, stats=stats, clock=None), stats  # type: ignore[arg-type]


def test_emit_calls_the_alarm_callback_with_each_key_and_rate(caplog: pytest.LogCaptureFixture) -> None:
    alarms: list[tuple[str, str, float]] = []
    reports: list[CacheReport] = []
    acc, _ = _accountant(on_low_hit_rate=lambda *a: alarms.append(a), on_report=reports.append)
    report = _report(100, 1000)
    with caplog.at_level(logging.WARNING, logger="prefixlint"):
        acc.emit(report)
    assert alarms == [("tenant", "t1", pytest.approx(0.1)), ("template", "a.py:1", pytest.approx(0.1))]
    assert reports == [report]
    assert not [r for r in caplog.records if "hit rate" in r.getMessage()]  # the callback replaces the log


def test_emit_logs_the_alarm_without_a_callback(caplog: pytest.LogCaptureFixture) -> None:
    acc, _ = _accountant()
    with caplog.at_level(logging.WARNING, logger="prefixlint"):
        acc.emit(_report(125, 1000, template="app.py:7"))
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert messages == [
        "prefixlint: rolling cache hit rate of tenant t1 fell to 12%",
        "prefixlint: rolling cache hit rate of template app.py:7 fell to 12%",
    ]


def test_emit_survives_every_failing_callback_and_still_reports(caplog: pytest.LogCaptureFixture) -> None:
    reports: list[CacheReport] = []

    def broken_alarm(*_: object) -> None:
        raise RuntimeError("alarm")

    acc, stats = _accountant(on_low_hit_rate=broken_alarm, on_report=reports.append, log_level=logging.INFO)
    report = _report(100, 1000)
    with caplog.at_level(logging.INFO, logger="prefixlint"):
        acc.emit(report)
    assert reports == [report]  # a broken alarm callback does not stop the report callback
    texts = [r.getMessage() for r in caplog.records]
    assert texts.count("prefixlint: on_low_hit_rate callback failed") == 2
    assert report.summary() in texts  # logged at the level asked for

    def broken_report(_: CacheReport) -> None:
        raise RuntimeError("report")

    acc.opts.on_report = broken_report
    stats.add = None  # type: ignore[method-assign]  # the stats fail too
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="prefixlint"):
        acc.emit(report)
    texts = [r.getMessage() for r in caplog.records]
    assert "prefixlint: stats failed" in texts
    assert "prefixlint: on_report callback failed" in texts
    assert report.summary() in texts


def test_emit_adds_the_report_to_the_active_span_with_otel_on() -> None:
    from opentelemetry import trace

    class Recording(trace.NonRecordingSpan):
        def __init__(self) -> None:
            super().__init__(trace.INVALID_SPAN_CONTEXT)
            self.attrs: dict = {}

        def is_recording(self) -> bool:
            return True

        def set_attributes(self, attributes: dict) -> None:
            self.attrs.update(attributes)

    acc, _ = _accountant(otel=True)
    span = Recording()
    with trace.use_span(span):
        acc.emit(_report(900, 1000))
    assert span.attrs["prefixlint.cache.verdict"] == "hit"
    assert span.attrs["gen_ai.usage.cache_read.input_tokens"] == 900


def test_a_million_written_tokens_cost_the_per_million_premium() -> None:
    """Prices are per million tokens: a million tokens written and none read cost exactly the premium."""
    million = SimpleNamespace(cache_write=1_000_000, cache_write_1h=0)
    with_price = _rules(Price(input=3.0, cached_input=0.3, cache_write=3.75))
    assert _usd_saved(with_price, 0, million) == pytest.approx(-0.75, rel=1e-12)
    with_multiplier = _rules(Price(input=2.0, cached_input=0.5), 1.25)
    assert _usd_saved(with_multiplier, 0, million) == pytest.approx(-0.5, rel=1e-12)


def test_overhead_is_measured_in_milliseconds() -> None:
    import time

    from prefixlint.sdk.accounting import perf_ms

    assert 250 <= perf_ms(time.perf_counter() - 0.25) < 350


def test_a_rate_back_at_the_threshold_rearms_the_alarm() -> None:
    """Low, then exactly at the threshold (recovered), then low again: the alarm fires twice."""
    stats = Stats(threshold=0.5, window=1)
    assert len(stats.add(_report(0, 1000))) == 2
    assert stats.add(_report(500, 1000)) == []
    assert len(stats.add(_report(0, 1000))) == 2


def test_a_one_token_prompt_fully_cached_has_a_rate_of_one() -> None:
    stats = Stats(threshold=0.9, window=1)
    assert stats.add(_report(1, 1)) == []


def test_snapshot_verdicts_are_keyed_by_plain_names() -> None:
    """The verdict counts print as ``hit``/``expected_miss``, not as enum members."""
    stats = Stats()
    stats.add(_report(100, 1000))
    stats.add(_report(0, 1000))
    assert sorted(str(name) for name in stats.snapshot().verdicts) == ["expected_miss", "hit"]
