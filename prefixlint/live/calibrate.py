"""Hit/miss TTFT threshold, the KS test of Gu et al., and report-vs-timing disagreements.

The two arms give labelled timing samples. The threshold separates them (``ks``: the point of the
largest gap between the arms' empirical CDFs; ``midpoint``: halfway between the medians). Each
request whose *reported* cached tokens disagree with its *timing* is counted:

* ``reported_hit_slow``: the usage says a large part of the prompt was cached, the TTFT looks like a
  miss (a server that reports, or bills, cached tokens without the speed);
* ``reported_miss_fast``: the usage says nothing (or little) was cached, the TTFT looks like a hit.

When timing does not separate the arms at all (KS p-value above ``alpha``), there is no honest
midpoint and no hit-like speed to compare with. A reported hit then counts as miss-like when it is
no faster than the fastest miss: a cold miss was seen taking that long, so the timing gives no
sign of the claimed cache. A reported hit faster than every miss is **undecidable** (it may be a
real hit, or the fast tail of the same distribution); those are counted and listed with the
reason, never silently dropped. ``reported_miss_fast`` is not counted then.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from prefixlint.live.results import Calibration, Sample

DEFAULT_ALPHA = 0.01
HIT_FRACTION = 0.5


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) with linear interpolation (numpy's default), or None."""
    if not values:
        return None
    data = sorted(values)
    if len(data) == 1:
        return float(data[0])
    pos = (len(data) - 1) * min(max(q, 0.0), 100.0) / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return float(data[lo] + (data[hi] - data[lo]) * (pos - lo))


def _ecdf(data: Sequence[float], x: float) -> float:
    return sum(1 for v in data if v <= x) / len(data)


def ks_split(hit: Sequence[float], miss: Sequence[float]) -> tuple[float, float]:
    """``(threshold, D+)``: where ``F_hit - F_miss`` is largest, mid-gap to the next value."""
    values = sorted(set(hit) | set(miss))
    best_d, best_i = -1.0, 0
    for i, x in enumerate(values):
        d = _ecdf(hit, x) - _ecdf(miss, x)
        if d > best_d:
            best_d, best_i = d, i
    x = values[best_i]
    nxt = values[best_i + 1] if best_i + 1 < len(values) else x
    return (x + nxt) / 2.0, max(best_d, 0.0)


def ks_test(hit: Sequence[float], miss: Sequence[float]) -> tuple[float, float, str]:
    """One-sided two-sample KS test that hits are faster: ``(statistic, p-value, source)``.

    Same call as Gu et al. (``ks_2samp(hit, miss, alternative="greater")``) when scipy is
    installed; otherwise the asymptotic Smirnov bound ``exp(-2 n_eff D^2)``.
    """
    try:
        from scipy.stats import ks_2samp
    except ImportError:
        _, d = ks_split(hit, miss)
        n_eff = len(hit) * len(miss) / (len(hit) + len(miss))
        return d, min(1.0, math.exp(-2.0 * n_eff * d * d)), "asymptotic"
    res = ks_2samp(list(hit), list(miss), alternative="greater")
    return float(res.statistic), float(res.pvalue), "scipy"


def _reporting_mode(samples: Sequence[Sample]) -> str:
    reported = sum(1 for s in samples if s.cached_tokens is not None)
    if reported == 0:
        return "none"
    return "reported" if reported == len(samples) else "omitted-when-zero"


def calibrate(
    hits: Sequence[Sample],
    misses: Sequence[Sample],
    *,
    shared_prefix_tokens: int,
    method: str = "ks",
    alpha: float = DEFAULT_ALPHA,
    hit_fraction: float = HIT_FRACTION,
) -> Calibration:
    """Threshold from the two arms, KS test, and disagreement counts for one prompt length."""
    hits = [s for s in hits if s.ttft_s is not None and s.error is None]
    misses = [s for s in misses if s.ttft_s is not None and s.error is None]
    cal = Calibration(method=method)
    if len(hits) < 2 or len(misses) < 2:
        cal.notes.append("fewer than 2 samples in an arm; no calibration")
        return cal
    hit_t = [s.ttft_s for s in hits]  # type: ignore[misc]
    miss_t = [s.ttft_s for s in misses]  # type: ignore[misc]
    cal.ks_statistic, cal.ks_pvalue, cal.ks_source = ks_test(hit_t, miss_t)
    cal.separable = cal.ks_pvalue < alpha
    if 1.0 / math.comb(len(hit_t) + len(miss_t), len(hit_t)) >= alpha:
        cal.notes.append(
            f"{len(hit_t)} and {len(miss_t)} samples cannot reach KS p < {alpha} even with "
            "no overlap; use --samples 10 or more"
        )
    if cal.separable:
        if method == "midpoint":
            cal.threshold_s = (percentile(hit_t, 50) + percentile(miss_t, 50)) / 2.0  # type: ignore[operator]
        else:
            cal.threshold_s, _ = ks_split(hit_t, miss_t)
    else:
        cal.method = f"{method} (fallback: the fastest miss)"
        cal.threshold_s = min(miss_t)
        cal.notes.append(
            f"timing does not separate hit from miss (one-sided KS p={cal.ks_pvalue:.3g} >= {alpha}); "
            "a reported hit no faster than the fastest miss counts as miss-like "
            "(try longer prompts or more samples)"
        )
    thr = cal.threshold_s
    assert thr is not None
    right = sum(1 for t in hit_t if t < thr) + sum(1 for t in miss_t if t >= thr)
    cal.accuracy = right / (len(hit_t) + len(miss_t))

    everything = [*hits, *misses]
    cal.reporting = _reporting_mode(everything)  # type: ignore[assignment]
    cal.unreported = sum(1 for s in everything if s.cached_tokens is None)
    if cal.reporting == "none":
        cal.notes.append("the server reported no cached-token field; nothing to check against timing")
        return cal
    if cal.reporting == "omitted-when-zero":
        cal.notes.append(
            f"{cal.unreported} responses omitted cached_tokens while others carried it; read as 0 "
            "(vLLM omits the field when nothing was cached)"
        )
    hit_tokens = max(1.0, hit_fraction * shared_prefix_tokens)
    undecidable: list[float] = []
    for s in everything:
        reported_hit = (s.cached_tokens or 0) >= hit_tokens
        fast = s.ttft_s < thr  # type: ignore[operator]
        if reported_hit and not fast:
            cal.reported_hit_slow += 1
        elif reported_hit and not cal.separable:
            undecidable.append(s.ttft_s)  # type: ignore[arg-type]
        elif not reported_hit and fast and cal.separable:
            cal.reported_miss_fast += 1
    cal.disagreements = cal.reported_hit_slow + cal.reported_miss_fast
    cal.undecidable = len(undecidable)
    if undecidable:
        shown = ", ".join(f"{t * 1000:.1f}" for t in sorted(undecidable))
        cal.notes.append(
            f"{len(undecidable)} reported hits undecidable: faster than every miss (fastest miss "
            f"{thr * 1000:.1f} ms; these took {shown} ms), but the arms do not separate, so timing "
            "neither confirms nor refutes them"
        )
    return cal
