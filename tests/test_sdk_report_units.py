"""``Accountant.report`` as a unit: each field of the report on a known call and response (no HTTP)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.model.pieces import SKETCH_BLOCK
from prefixlint.model.prefix_cache import Flight, Prediction
from prefixlint.model.providers import get_provider
from prefixlint.model.tokens import tokenizer_for
from prefixlint.sdk.accounting import Accountant
from prefixlint.sdk.call import Call
from prefixlint.sdk.report import CacheReport, Divergence, Verdict, make_report
from prefixlint.sdk.sightings import Sighting
from prefixlint.sdk.stats import Stats
from prefixlint.sdk.tracker import PrefixTracker

CACHE = PieceCache(tokenizer_for("openai", "gpt-4o"))
SYSTEM = "Rules. " + " ".join(f"rule{i}" for i in range(700))
BODY = {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "q"}]}
PIECES = pieces_from_request(BODY, "chat", CACHE)
LOCAL = PIECES[-1].end  # the prompt's tokens as counted here
DOMAIN = ("openai", "org", "gpt-4o", "cache-key")


def _call(provider: str = "openai", model: str = "gpt-4o", **fields: Any) -> Call:
    """A call whose every report field has a value of its own (none equals its default)."""
    values: dict[str, Any] = {
        "api": "chat",
        "provider": provider,
        "model": model,
        "rules": get_provider(provider).rules_for(model),
        "pieces": PIECES,
        "domain": DOMAIN,
        "tenant_hash": "tenant-hash",
        "template": "app.py:12",
        "drift_key": "site",
        "drift_kind": "site",
        "caller_marks": False,
        "prefix_hash": "prefix-hash",
        "key": "cache-key",
        "salted": True,
        "breakpoints": 2,
        "changes": ("prompt_cache_key: set",),
        "dry_run": True,
        "stream": True,
        "ttl": None,
        "tokens_exact": True,
        "helper": False,
        "body": BODY,
        "cache": CACHE,
        "now": 100.0,
        "mono": 100.0,
        "prediction": Prediction(1024, 1152, 1100, LOCAL),
        "overhead_ms": 0.25,
    }
    values.update(fields)
    return Call(**values)


def _report(call: Call, usage: Any, verify: bool = True, tracker: PrefixTracker | None = None) -> CacheReport:
    spec = get_provider(call.provider)
    opts = SimpleNamespace(verify=verify)
    return Accountant(opts, spec, tracker or PrefixTracker(spec), Stats(), clock=None).report(call, usage)  # type: ignore[arg-type]


def _openai_usage(prompt: int, cached: int, write: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "prompt_tokens_details": {"cached_tokens": cached, "cache_write_tokens": write},
    }


def test_every_field_of_a_report_with_usage() -> None:
    assert LOCAL > 1200  # the cases below need a prompt above OpenAI's 1024-token minimum
    report = _report(_call(), _openai_usage(LOCAL, 1024))
    price = get_provider("openai").rules_for("gpt-4o").price
    assert report == CacheReport(
        provider="openai",
        model="gpt-4o",
        api="chat",
        verdict=Verdict.HIT,
        predicted_cached=1024,  # the shared 1100 tokens on OpenAI's grid (1024 + 128-token steps)
        reported_cached=1024,
        prompt_tokens=LOCAL,
        local_prompt_tokens=LOCAL,
        upper_bound=1152,
        cache_write=0,
        cache_write_5m=0,
        cache_write_1h=0,
        causes=(),
        divergence=None,
        tokens_saved=1024,
        usd_saved=1024 * (price.input - price.cached_input) / 1e6,
        tenant_hash="tenant-hash",
        template="app.py:12",
        prefix_hash="prefix-hash",
        cache_key="cache-key",
        salted=True,
        breakpoints=2,
        stream=True,
        dry_run=True,
        changes=("prompt_cache_key: set",),
        tokens_exact=True,
        counted=True,
        overhead_ms=0.25,
    )
    assert report.extra == {}
    assert report.usd_saved == pytest.approx(1024 * 1.25 / 1e6)


@pytest.mark.parametrize("usage", [None, {}, {"prompt_tokens_details": {"cached_tokens": 5}}])
def test_without_usage_the_report_is_unverified_and_counts_nothing(usage: Any) -> None:
    report = _report(_call(), usage)
    assert report.verdict is Verdict.UNVERIFIED
    assert report.causes == ("no usage reported",)
    assert (report.reported_cached, report.prompt_tokens) == (None, None)
    assert (report.cache_write, report.cache_write_5m, report.cache_write_1h) == (0, 0, 0)
    assert (report.tokens_saved, report.usd_saved) == (0, 0.0)
    assert isinstance(report.usd_saved, float)
    # the prediction stays in local tokens (no provider prompt size to scale it by)
    assert (report.predicted_cached, report.upper_bound, report.local_prompt_tokens) == (1024, 1152, LOCAL)
    assert report.counted is True


def test_verification_off_reports_usage_as_unverified_with_its_cause() -> None:
    report = _report(_call(), _openai_usage(LOCAL, 1024), verify=False)
    assert report.verdict is Verdict.UNVERIFIED
    assert report.causes == ("verification is off (verify=False)",)
    assert (report.reported_cached, report.prompt_tokens, report.tokens_saved) == (1024, LOCAL, 1024)
    # without usage the judge's own cause stays: there is nothing to verify either way
    none = _report(_call(), None, verify=False)
    assert (none.verdict, none.causes) == (Verdict.UNVERIFIED, ("no usage reported",))


def test_local_prompt_tokens_come_from_the_pieces_and_scale_the_prediction() -> None:
    assert _report(_call(pieces=None), None).local_prompt_tokens == 0
    assert _report(_call(pieces=[]), None).local_prompt_tokens == 0
    # a prediction without its own prompt size is scaled by the pieces' count: the provider counts
    # twice as many tokens, so the shared 1100 local tokens are 2200 of its own, on its grid
    rules = get_provider("openai").rules_for("gpt-4o")
    call = _call(prediction=Prediction(1024, 1152, 1100, 0))
    report = _report(call, _openai_usage(2 * LOCAL, rules.cacheable(2200, 2 * LOCAL)))
    assert report.local_prompt_tokens == LOCAL
    assert report.predicted_cached == rules.cacheable(2200, 2 * LOCAL) == 2176
    assert report.upper_bound == 2304  # 1152 scaled by 2
    assert report.verdict is Verdict.HIT


def _sighting(counted: bool, flight: Flight | None = None) -> Sighting:
    s = Sighting(DOMAIN, 7, PIECES, [], CACHE, 100.0, 100.0, None, math.inf, 0)
    s.counted, s.flight = counted, flight
    return s


def test_an_uncounted_first_sighting_reports_no_local_tokens() -> None:
    report = _report(_call(sighting=_sighting(False)), _openai_usage(LOCAL, 0))
    assert (report.counted, report.local_prompt_tokens) == (False, 0)
    counted = _report(_call(sighting=_sighting(True)), _openai_usage(LOCAL, 1024))
    assert (counted.counted, counted.local_prompt_tokens) == (True, LOCAL)


def test_requests_sent_during_the_flight_widen_the_upper_bound() -> None:
    """A request with the same prompt sent while this one was in flight may have written all of it."""
    rules = get_provider("openai").rules_for("gpt-4o")
    widest = rules.cacheable(LOCAL, LOCAL)
    assert widest > 1152
    flight = Flight(PIECES, 100.0, [PIECES])
    assert _report(_call(flight=flight), _openai_usage(LOCAL, 1024)).upper_bound == widest
    assert _report(_call(flight=Flight(PIECES, 100.0, [])), _openai_usage(LOCAL, 1024)).upper_bound == 1152
    # the flight of a first sighting that was counted meanwhile is the one widened
    counted = _sighting(True, flight)
    assert _report(_call(sighting=counted), _openai_usage(LOCAL, 1024)).upper_bound == widest


def test_the_tolerance_is_one_increment_on_a_grid_and_a_sketch_block_otherwise() -> None:
    """100 tokens short of the prediction on a 2000-token prompt: within OpenAI's 128-token increment,
    beyond Anthropic's tolerance (3% of the prompt, 60 tokens, as its grid is exact)."""
    pred = Prediction(1500, 1500, 1500, 2000)
    pieces = [replace(PIECES[-1], end=2000)]
    openai = _report(_call(prediction=pred, pieces=pieces), _openai_usage(2000, 1408 - 100))
    assert (openai.predicted_cached, openai.verdict) == (1408, Verdict.HIT)  # 1500 on OpenAI's grid
    anthropic_usage = {
        "input_tokens": 100,
        "cache_read_input_tokens": 1400,
        "cache_creation_input_tokens": 500,
    }
    call = _call("anthropic", "claude-sonnet-4-5", api="messages", prediction=pred, pieces=pieces)
    anthropic = _report(call, anthropic_usage)
    assert anthropic.prompt_tokens == 2000
    assert (anthropic.predicted_cached, anthropic.verdict) == (1500, Verdict.UNEXPECTED_MISS)
    assert anthropic.causes == ("partial hit", "eviction")
    assert max(SKETCH_BLOCK, round(0.03 * 2000)) == 60 < 100 < 128


def test_a_block_grid_puts_the_scaled_shared_prefix_on_the_engines_blocks() -> None:
    rules = get_provider("vllm").rules_for("m")
    call = _call("vllm", "m", prediction=Prediction(1088, 1088, 1100, LOCAL))
    usage = {"prompt_tokens": 2 * LOCAL, "prompt_tokens_details": {"cached_tokens": 2176}}
    report = _report(call, usage)
    assert report.predicted_cached == rules.cacheable(2200, 2 * LOCAL) == 2192  # not 2 * 1088
    assert report.verdict is Verdict.HIT


def test_the_messages_api_adds_reads_and_writes_to_the_prompt_and_reports_each_write() -> None:
    usage = {
        "input_tokens": 10,
        "cache_read_input_tokens": 1400,
        "cache_creation_input_tokens": 600,
        "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 400},
    }
    pred = Prediction(1400, 1400, 1400, 2010)
    call = _call("anthropic", "claude-sonnet-4-5", api="messages", prediction=pred)
    report = _report(call, usage)
    assert (report.prompt_tokens, report.reported_cached) == (2010, 1400)
    assert (report.cache_write, report.cache_write_5m, report.cache_write_1h) == (600, 200, 400)
    assert report.tokens_saved == 1400
    saved = 1400 * (3.0 - 0.3) - 200 * (3.75 - 3.0) - 400 * (6.0 - 3.0)
    assert report.usd_saved == pytest.approx(saved / 1e6, rel=1e-12)
    # an OpenAI-shaped usage on the messages API: its input tokens exclude the cached ones too
    shaped = {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 1024}}
    assert _report(_call(api="messages"), shaped).prompt_tokens == 2024
    assert _report(_call(api="chat"), shaped).prompt_tokens == 1000


def test_a_miss_names_the_routing_overflow_and_a_prefix_near_the_minimum() -> None:
    usage = _openai_usage(LOCAL, 0)
    report = _report(_call(route_rpm=20), usage)
    assert report.verdict is Verdict.UNEXPECTED_MISS
    assert report.causes == ("routing overflow: 20 requests/min for this key and prefix (> 15)", "eviction")
    assert _report(_call(route_rpm=15), usage).causes == ("eviction",)
    estimated = _report(_call(tokens_exact=False), usage)  # 1100 shared < 1.15 x the 1024 minimum
    assert estimated.causes == (
        "below minimum: the shared prefix is close to the model's minimum (token estimate)",
        "eviction",
    )
    assert estimated.tokens_exact is False
    far = _report(_call(tokens_exact=False, prediction=Prediction(1152, 1152, 1200, LOCAL)), usage)
    assert far.causes == ("eviction",)


@pytest.mark.parametrize(
    ("pred", "cause"),
    [
        (Prediction(0, 0, 0, LOCAL, expired=True), "ttl expired"),
        (Prediction(0, 0, 900, LOCAL, below_minimum=True), "below minimum"),
        (Prediction(0, 0, 0, LOCAL), "new prefix"),
    ],
)
def test_an_expected_miss_says_why(pred: Prediction, cause: str) -> None:
    report = _report(_call(prediction=pred), _openai_usage(LOCAL, 0))
    assert (report.verdict, report.causes) == (Verdict.EXPECTED_MISS, (cause,))
    assert (report.predicted_cached, report.upper_bound, report.tokens_saved) == (0, 0, 0)


def test_the_upper_shared_prefix_raises_the_upper_bound_on_the_grid() -> None:
    rules = get_provider("openai").rules_for("gpt-4o")
    pred = Prediction(1024, 1024, 1100, LOCAL, shared_upper=LOCAL - 1)
    report = _report(_call(prediction=pred), _openai_usage(LOCAL, 1024))
    assert report.upper_bound == rules.cacheable(LOCAL - 1, LOCAL) > 1024


def test_drift_is_reported_with_its_divergence() -> None:
    where = Divergence(48, "messages[0].content", "messages[0].content")
    report = _report(_call(drift=where), _openai_usage(LOCAL, 1024))
    assert (report.verdict, report.causes) == (Verdict.DRIFT, ("prefix changed at messages[0].content",))
    assert report.divergence is where


def _plain_report(**fields: Any) -> CacheReport:
    return CacheReport("openai", "gpt-4o", "chat", Verdict.UNEXPECTED_MISS, 0, 0, 100, 100, **fields)


def test_to_dict_is_json_ready_with_the_verdict_as_its_value() -> None:
    d = json.loads(json.dumps(_plain_report().to_dict()))
    assert d["verdict"] == "unexpected_miss"
    assert set(d) == {f for f in CacheReport.__dataclass_fields__}


def test_summary_lists_every_cause() -> None:
    line = _plain_report(causes=("expired", "drift")).summary()
    assert line.endswith(" causes=expired,drift")


@pytest.mark.parametrize(
    "values",
    [
        {"provider": "openai", "model": "m", "api": "chat"},  # required fields missing
        {
            "provider": "openai",
            "model": "m",
            "api": "chat",
            "verdict": Verdict.HIT,
            "predicted_cached": 0,
            "reported_cached": 0,
            "prompt_tokens": 1,
            "local_prompt_tokens": 1,
            "bogus": 1,
        },
    ],
)
def test_make_report_rejects_what_the_dataclass_rejects(values: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        CacheReport(**values)
    with pytest.raises(TypeError):
        make_report(values)


@pytest.mark.parametrize("cached", [90, 110])
def test_a_token_grained_engine_is_judged_within_one_sketch_block(cached: int) -> None:
    """Local counts are sketched in blocks: a small prompt off by less than one block still hits."""
    call = _call("sglang", "x", prediction=Prediction(100, 100, 100, 200))
    report = _report(call, _openai_usage(200, cached))
    assert abs(cached - 100) < SKETCH_BLOCK
    assert report.verdict is Verdict.HIT and report.causes == ()
