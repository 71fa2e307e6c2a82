"""Statistics of the bench: percentiles, KS split and test, disagreement counting, prompts."""

from __future__ import annotations

import random

import pytest

from prefixlint.live.calibrate import calibrate, ks_split, ks_test, percentile
from prefixlint.live.client import cached_tokens_from_usage
from prefixlint.live.prompts import PromptFactory, SharedPrefix, split_lengths
from prefixlint.live.results import Sample
from prefixlint.model.tokens import get_tokenizer


def test_percentile_matches_numpy_linear() -> None:
    np = pytest.importorskip("numpy")
    rng = random.Random(3)
    data = [rng.random() for _ in range(37)]
    for q in (0, 10, 50, 90, 99, 100):
        assert percentile(data, q) == pytest.approx(float(np.percentile(data, q)))
    assert percentile([], 50) is None
    assert percentile([2.0], 99) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5


def test_ks_split_finds_the_gap() -> None:
    hit = [0.010, 0.011, 0.012, 0.013]
    miss = [0.050, 0.051, 0.060, 0.070]
    thr, d = ks_split(hit, miss)
    assert d == 1.0
    assert thr == pytest.approx((0.013 + 0.050) / 2)


def test_ks_test_one_sided_direction() -> None:
    hit = [0.01 * (1 + i / 100) for i in range(20)]
    miss = [0.05 * (1 + i / 100) for i in range(20)]
    stat, p, _ = ks_test(hit, miss)
    assert stat == 1.0 and p < 1e-6
    # Hits slower than misses: the one-sided test must not call that a cache.
    stat, p, _ = ks_test(miss, hit)
    assert p > 0.5


def _s(arm: str, ttft: float, cached: int | None) -> Sample:
    return Sample(arm=arm, prompt_tokens_target=1000, ttft_s=ttft, cached_tokens=cached)  # type: ignore[arg-type]


def test_calibrate_counts_both_kinds_of_disagreement() -> None:
    hits = [_s("hit", 0.010 + i * 1e-4, 896) for i in range(8)]
    misses = [_s("miss", 0.100 + i * 1e-4, 0) for i in range(8)]
    honest = calibrate(hits, misses, shared_prefix_tokens=900)
    assert honest.separable and honest.disagreements == 0 and honest.accuracy == 1.0
    assert honest.reporting == "reported"
    # Two hits report nothing (fast but "miss"), one miss claims a hit (slow but "hit").
    hits[0].cached_tokens = 0
    hits[1].cached_tokens = 0
    misses[0].cached_tokens = 896
    cal = calibrate(hits, misses, shared_prefix_tokens=900)
    assert (cal.reported_miss_fast, cal.reported_hit_slow, cal.disagreements) == (2, 1, 3)


def test_calibrate_inseparable_arms_still_catch_reported_hits() -> None:
    rng = random.Random(1)
    hits = [_s("hit", 0.1 + rng.random() * 0.01, 896) for _ in range(10)]
    misses = [_s("miss", 0.1 + rng.random() * 0.01, 0) for _ in range(10)]
    cal = calibrate(hits, misses, shared_prefix_tokens=900)
    assert not cal.separable
    assert not any("cannot reach" in n for n in cal.notes)
    assert cal.reported_hit_slow >= 8
    assert cal.reported_miss_fast == 0


def test_calibrate_omitted_field_vllm_style() -> None:
    hits = [_s("hit", 0.01, 896) for _ in range(4)]
    misses = [_s("miss", 0.1, None) for _ in range(4)]
    cal = calibrate(hits, misses, shared_prefix_tokens=900)
    assert cal.reporting == "omitted-when-zero" and cal.unreported == 4 and cal.disagreements == 0
    none = calibrate([_s("hit", 0.01, None)] * 3, [_s("miss", 0.1, None)] * 3, shared_prefix_tokens=900)
    assert none.reporting == "none" and none.disagreements == 0
    assert not none.separable and any("cannot reach" in n for n in none.notes)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 8}},
            (8, "prompt_tokens_details.cached_tokens"),
        ),
        ({"prompt_tokens": 10, "prompt_tokens_details": None}, (None, None)),
        ({"prompt_tokens": 10}, (None, None)),
        (
            {"prompt_tokens": 10, "prompt_cache_hit_tokens": 0, "prompt_cache_miss_tokens": 10},
            (0, "prompt_cache_hit_tokens"),
        ),
        (
            {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}},
            (4, "input_tokens_details.cached_tokens"),
        ),
        (None, (None, None)),
    ],
)
def test_cached_tokens_from_usage(usage: dict | None, expected: tuple) -> None:
    assert cached_tokens_from_usage(usage) == expected


def test_prompts_have_exact_lengths_and_stable_prefix() -> None:
    tok = get_tokenizer("cl100k_base")
    factory = PromptFactory(seed=7)
    for n in (1, 17, 1024):
        assert tok.count(factory.text(n)) == n
    shared = SharedPrefix(factory, 100, 28)
    a, b = shared.prompt(), shared.prompt()
    ta, tb = tok.encode(a), tok.encode(b)
    assert len(ta) == len(tb) == 128
    assert ta[:100] == tb[:100] and ta[100:] != tb[100:]
    miss = tok.encode(shared.miss_prompt())
    assert len(miss) == 128 and miss[:16] != ta[:16]
    # Seeded: the same seed gives the same prompts, a fresh factory (random seed) does not.
    assert PromptFactory(seed=7).text(50) == PromptFactory(seed=7).text(50)
    assert PromptFactory().text(50) != PromptFactory().text(50)


def test_split_lengths() -> None:
    assert split_lengths(1024, 0.9, None) == (922, 102)
    assert split_lengths(1024, 0.9, 64) == (960, 64)
    assert split_lengths(10, 0.9, 64) == (1, 9)
    with pytest.raises(ValueError):
        split_lengths(100, 1.0, None)
