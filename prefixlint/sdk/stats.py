"""Aggregates over a wrapped client's reports, and the low-hit-rate alarm."""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from prefixlint.sdk.report import CacheReport


@dataclass(frozen=True)
class StatsSnapshot:
    """Totals since ``wrap`` (or the last reset)."""

    requests: int
    verified: int
    prompt_tokens: int
    cached_tokens: int
    tokens_saved: int
    usd_saved: float
    verdicts: dict[str, int] = field(default_factory=dict)

    @property
    def hit_rate(self) -> float:
        """Cached prompt tokens over prompt tokens, for requests with reported usage."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


class Stats:
    """Thread-safe running totals plus a rolling hit rate per tenant and per template."""

    def __init__(
        self,
        threshold: float | None = None,
        window: int = 20,
    ) -> None:
        self.threshold = threshold
        self.window = window
        self._lock = threading.Lock()
        self._verdicts: Counter[Any] = Counter()  # by Verdict (its .value is a Python-level property)
        self._requests = self._verified = self._prompt = self._cached = self._saved = 0
        self._usd = 0.0
        self._rolling: dict[tuple[str, str], deque[tuple[int, int]]] = {}
        self._alarmed: set[tuple[str, str]] = set()

    def configure(self, threshold: float | None, window: int) -> None:
        """New alarm settings (a second ``wrap``); the totals stay. :meth:`add` returns the alarms and
        the caller hands them to its ``on_low_hit_rate``."""
        with self._lock:
            self.threshold, self.window = threshold, window
            self._rolling.clear()
            self._alarmed.clear()

    def add(self, report: CacheReport) -> list[tuple[str, str, float]]:
        """Count ``report``; returns the (kind, key, rate) alarms to fire (outside the lock)."""
        alarms: list[tuple[str, str, float]] = []
        with self._lock:
            self._requests += 1
            self._verdicts[report.verdict] += 1
            if report.reported_cached is None or not report.prompt_tokens:
                return alarms
            self._verified += 1
            self._prompt += report.prompt_tokens
            self._cached += report.reported_cached
            self._saved += report.tokens_saved
            self._usd += report.usd_saved
            if self.threshold is None:
                return alarms
            for key in (("tenant", report.tenant_hash or "-"), ("template", report.template)):
                q = self._rolling.setdefault(key, deque(maxlen=self.window))
                q.append((report.reported_cached, report.prompt_tokens))
                if len(q) < self.window:
                    continue
                rate = sum(c for c, _ in q) / max(1, sum(p for _, p in q))
                if rate < self.threshold and key not in self._alarmed:
                    self._alarmed.add(key)
                    alarms.append((key[0], key[1], rate))
                elif rate >= self.threshold:
                    self._alarmed.discard(key)
        return alarms

    def snapshot(self) -> StatsSnapshot:
        with self._lock:
            return StatsSnapshot(
                self._requests,
                self._verified,
                self._prompt,
                self._cached,
                self._saved,
                self._usd,
                {getattr(v, "value", v): n for v, n in self._verdicts.items()},
            )
