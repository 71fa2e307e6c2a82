"""Cache reports: what was predicted, what the provider reported, and the verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields
from enum import Enum
from typing import Any


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


@dataclass(frozen=True)
class CacheReport:
    """One request's cache report. Holds counts, hashes and (opt-in) short excerpts; no prompt text."""

    provider: str
    model: str | None
    api: str
    verdict: Verdict
    predicted_cached: int  # in the provider's tokens (scaled by the reported prompt size)
    reported_cached: int | None
    prompt_tokens: int | None  # reported, including cached and written tokens
    local_prompt_tokens: int  # counted here
    upper_bound: int = 0
    cache_write: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    causes: tuple[str, ...] = ()
    divergence: Divergence | None = None
    tokens_saved: int = 0
    usd_saved: float = 0.0
    tenant_hash: str | None = None
    template: str = ""
    prefix_hash: str = ""
    cache_key: str | None = None
    salted: bool = False
    breakpoints: int = 0
    stream: bool = False
    dry_run: bool = False
    changes: tuple[str, ...] = ()
    tokens_exact: bool = True
    overhead_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def hit_ratio(self) -> float:
        if not self.prompt_tokens or self.reported_cached is None:
            return 0.0
        return self.reported_cached / self.prompt_tokens

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict.value
        return d

    def summary(self) -> str:
        """One log line."""
        s = (
            f"prefixlint cache {self.verdict.value}: {self.provider}/{self.model} {self.api} "
            f"cached={self.reported_cached} predicted={self.predicted_cached} prompt={self.prompt_tokens}"
        )
        if self.causes:
            s += f" causes={','.join(self.causes)}"
        if self.divergence:
            s += f" diverged_at={self.divergence.path}@{self.divergence.token_index}"
        return s


_REPORT_DEFAULTS = {f.name: f.default for f in fields(CacheReport) if f.default is not MISSING}
_REPORT_FIELDS = frozenset(f.name for f in fields(CacheReport))
_REPORT_REQUIRED = frozenset(
    f.name for f in fields(CacheReport) if f.default is MISSING and f.default_factory is MISSING
)


def make_report(values: dict[str, Any]) -> CacheReport:
    """``CacheReport(**values)`` without the per-field ``object.__setattr__`` of a frozen dataclass.

    The result is the same object (same fields, defaults and ``extra``); this runs once per request.
    """
    keys = values.keys()
    if not (_REPORT_REQUIRED <= keys <= _REPORT_FIELDS):
        return CacheReport(**values)  # let the dataclass raise its usual TypeError
    report = object.__new__(CacheReport)
    state = report.__dict__
    state.update(_REPORT_DEFAULTS)
    state["extra"] = {}
    state.update(values)
    return report


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
) -> tuple[Verdict, tuple[str, ...], int, int]:
    """(verdict, likely causes, predicted, upper) with predictions scaled to the provider's tokens.

    ``regrid(shared, prompt)`` (the provider's minimum, increments or blocks): the shared prefix is
    scaled first and the provider's rule applied to it in its own tokens, so a prediction lands on the
    provider's grid (a block-granular engine reports multiples of its block size).
    """
    ratio = (reported_prompt / local_prompt) if reported_prompt and local_prompt else 1.0
    exp = round(predicted * ratio)
    up = round(upper * ratio)
    if regrid is not None and predicted > 0 and reported_prompt:
        exp = regrid(round(shared * ratio), reported_prompt)
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
        return Verdict.HIT, (), exp, up
    if expired:
        causes.append("ttl expired")
    elif below_minimum:
        causes.append("below minimum")
    else:
        causes.append("new prefix")
    return Verdict.EXPECTED_MISS, tuple(causes), exp, up
