"""Group-sequential KS decisions for the timing probe: look at the data as it grows, stop once decided.

Looks happen at ``min_samples`` per arm, then at each doubling, up to ``max_samples``. Each look
tests at ``alpha / looks`` (Bonferroni), so stopping at the first significant look keeps the chance of
a false detection over the whole run at or below ``alpha``.

Two decisions, both one-sided two-sample KS tests (``scipy.stats.ks_2samp``, as Gu et al.):

* **detected**: the hit arm is faster than the miss arm (``ks_2samp(hit, miss, "greater")``);
* **ruled out** (levels across tenants only): this level's hits are slower than the hits *within
  one tenant*, which were themselves detected (``ks_2samp(same_tenant_hits, hits, "greater")``).
  The same-tenant hits show what a shared cache looks like on this server; hits clearly slower
  than that are not served from a shared cache.

A level that reaches ``max_samples`` with neither is **undecided**: no detection at ``alpha``, but
no proof of isolation either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prefixlint.live.calibrate import ks_test


def look_points(min_samples: int, max_samples: int) -> list[int]:
    """Samples per arm at each look: ``min``, doubling, and ``max`` last."""
    if min_samples < 2 or max_samples < min_samples:
        raise ValueError("need 2 <= min_samples <= max_samples")
    points, n = [], min_samples
    while n < max_samples:
        points.append(n)
        n *= 2
    points.append(max_samples)
    return points


@dataclass
class Look:
    """One look at a level's data."""

    n: int
    p_detect: float
    p_rule_out: float | None
    decision: str | None  # "detected", "ruled-out" or None (continue)


def decide(
    hits: Sequence[float],
    misses: Sequence[float],
    alpha_look: float,
    same_tenant_hits: Sequence[float] | None = None,
) -> Look:
    """Test one look; ``same_tenant_hits`` (a detected same-tenant level's hits) enables rule-out."""
    if len(hits) < 2 or len(misses) < 2:
        return Look(n=min(len(hits), len(misses)), p_detect=1.0, p_rule_out=None, decision=None)
    _, p_detect, _ = ks_test(hits, misses)
    p_rule = None
    if same_tenant_hits is not None and len(same_tenant_hits) >= 2:
        _, p_rule, _ = ks_test(same_tenant_hits, hits)
    decision = None
    if p_detect < alpha_look:
        decision = "detected"
    elif p_rule is not None and p_rule < alpha_look:
        decision = "ruled-out"
    return Look(n=min(len(hits), len(misses)), p_detect=p_detect, p_rule_out=p_rule, decision=decision)


def smallest_p(n: int) -> float:
    """The smallest one-sided two-sample KS p-value with ``n`` per arm (no overlap at all)."""
    from math import comb

    return 1.0 / comb(2 * n, n)
