"""Cache verdicts: how a request's reported cache use compares with the predicted interval.

Shared by every part that predicts cache hits (the SDK's live reports, the audit's log replay), so
that the same request sequence gets the same verdicts everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum


class Verdict(str, Enum):
    """How a request's reported cache use compares with the prediction."""

    HIT = "hit"  # as expected
    EXPECTED_MISS = "expected_miss"  # a new prefix, below the minimum, or expired
    UNEXPECTED_MISS = "unexpected_miss"  # the same prefix was sent within the TTL
    UNEXPECTED_HIT = "unexpected_hit"  # more cached than this process could have written
    DRIFT = "drift"  # the prefix changed against the previous request of the same template
    UNVERIFIED = "unverified"  # no usage came back (raw stream, stream without usage)


@dataclass(frozen=True)
class Divergence:
    """Where a prefix first differs from the previous request of the same conversation or template.

    ``token_index`` is approximate (16-token blocks) unless excerpts are on. ``before``/``after``
    are short text excerpts, filled only when the user opted in (``keep_excerpts``).
    """

    token_index: int
    path: str
    previous_path: str | None = None
    before: str | None = None
    after: str | None = None


def judge(
    *,
    predicted: int,
    upper: int,
    local_prompt: int,
    reported_cached: int | None,
    reported_prompt: int | None,
    tolerance_tokens: int,
    expired: bool,
    below_minimum: bool,
    shared: int,
    drift: Divergence | None,
    route_rpm: int,
    route_limit: int | None,
    tokens_exact: bool,
    minimum: int,
    regrid: Callable[[int, int], int] | None = None,
    shared_upper: int = 0,
) -> tuple[Verdict, tuple[str, ...], int, int]:
    """(verdict, likely causes, lower, upper) with the predicted interval scaled to the provider's tokens.

    The prediction is an interval: ``predicted`` is what must be cached (written by requests whose
    response had begun), ``upper`` what may be (also requests still in flight, and partial matches).
    ``unexpected_hit`` fires only above the interval, ``unexpected_miss`` only below it, each beyond a
    tolerance of one increment or 3% of the prompt.

    ``regrid(shared, prompt)`` (the provider's minimum, increments or blocks): the shared prefix is
    scaled first and the provider's rule applied to it in its own tokens, so a prediction lands on the
    provider's grid (a block-granular engine reports multiples of its block size).
    """
    ratio = (reported_prompt / local_prompt) if reported_prompt and local_prompt else 1.0
    exp = round(predicted * ratio)
    up = round(upper * ratio)
    if regrid is not None and predicted > 0 and reported_prompt:
        exp = regrid(round(shared * ratio), reported_prompt)
    if regrid is not None and shared_upper > 0 and reported_prompt:
        up = max(up, regrid(round(shared_upper * ratio), reported_prompt))
    up = max(up, exp)
    if reported_cached is None:
        return Verdict.UNVERIFIED, ("no usage reported",), exp, up
    tol = max(tolerance_tokens, round(0.03 * (reported_prompt or local_prompt)))
    causes: list[str] = []
    if reported_cached > up + tol:
        return (
            Verdict.UNEXPECTED_HIT,
            (
                "more cached than this process could have written: another tenant or process shares this "
                "cache domain, or the provider over-reports",
            ),
            exp,
            up,
        )
    if drift is not None:
        return Verdict.DRIFT, (f"prefix changed at {drift.path}",), exp, up
    if exp > 0 and reported_cached < exp - tol:
        if route_limit and route_rpm > route_limit:
            causes.append(
                f"routing overflow: {route_rpm} requests/min for this key and prefix (> {route_limit})"
            )
        if not tokens_exact and shared * ratio < minimum * 1.15:
            causes.append("below minimum: the shared prefix is close to the model's minimum (token estimate)")
        if reported_cached > 0:
            causes.append("partial hit")
        causes.append("eviction")
        return Verdict.UNEXPECTED_MISS, tuple(causes), exp, up
    if exp > 0 or reported_cached > 0:
        if reported_cached > exp + tol:
            causes.append("written by a request still in flight when this one was sent")
        return Verdict.HIT, tuple(causes), exp, up
    if expired:
        causes.append("ttl expired")
    elif below_minimum:
        causes.append("below minimum")
    else:
        causes.append("new prefix")
    return Verdict.EXPECTED_MISS, tuple(causes), exp, up
