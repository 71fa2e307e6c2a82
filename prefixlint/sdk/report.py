"""Cache reports: what was predicted, what the provider reported, and the verdict."""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from prefixlint.model.verdict import Divergence, Verdict, judge

__all__ = ["CacheReport", "Divergence", "Verdict", "judge", "make_report"]


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
    # False: the prompt was not tokenized here. Its head was new to this process, so nothing of it
    # could be cached: the predicted interval is exact without counting, ``prompt_tokens`` (the
    # provider's) is the total and ``local_prompt_tokens`` is 0.
    counted: bool = True
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
