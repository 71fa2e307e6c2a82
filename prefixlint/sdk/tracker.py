"""The prefix tracker: this process's view of each cache domain, shared by every wrapped client.

One :class:`~prefixlint.model.prefix_cache.CacheInterval` per cache domain (provider, organisation,
model, key or salt): requests are recorded as "may be cached" when sent and as cached when their
response begins, so concurrent requests and several clients on one key get a prediction interval
that holds what the provider can do. Drift history and the routing rate live here too.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence

from prefixlint.model.pieces import Piece
from prefixlint.model.prefix_cache import CacheInterval, Flight, Prediction
from prefixlint.model.providers import ProviderSpec
from prefixlint.sdk.drift import DriftWatch

# A cache domain: (provider, organisation/workspace id, model, key or salt).
Domain = tuple[str, str, str, str]
_ROUTE_WINDOW = 60.0


class PrefixTracker:
    """Predicts cached tokens per domain as an interval. Thread-safe; CPU-only work under the lock."""

    def __init__(self, spec: ProviderSpec) -> None:
        self.spec = spec
        self._lock = threading.Lock()
        self._domains: dict[Domain, CacheInterval] = {}
        self._routes: dict[tuple[Domain, bytes], deque[float]] = {}
        self._route_limit = int(spec.raw.get("routing_prefix_tokens", 256))
        self.drift = DriftWatch()

    def _interval(self, domain: Domain) -> CacheInterval:
        found = self._domains.get(domain)
        if found is None:
            found = self._domains[domain] = CacheInterval.for_provider(self.spec.name, domain[2] or None)
        return found

    def predict(self, domain: Domain, pieces: Sequence[Piece], now: float) -> Prediction:
        with self._lock:
            return self._interval(domain).predict(pieces, now)

    def sent(self, domain: Domain, pieces: Sequence[Piece], now: float, ttl: float | None = None) -> Flight:
        """The request left: it may be cached from now on."""
        with self._lock:
            return self._interval(domain).sent(pieces, now, ttl)

    def begun(self, domain: Domain, flight: Flight, now: float, ttl: float | None = None) -> None:
        """The response began: what the request wrote is cached."""
        with self._lock:
            self._interval(domain).begun(flight, now, ttl)

    def failed(self, domain: Domain, flight: Flight) -> None:
        with self._lock:
            self._interval(domain).failed(flight)

    def widen(self, domain: Domain, flight: Flight, pred: Prediction) -> Prediction:
        """``pred``'s upper bound with what the requests sent during the flight could have written."""
        with self._lock:
            return self._interval(domain).widen(flight, pred)

    def route_rate(self, domain: Domain, pieces: Sequence[Piece], now: float | None = None) -> int:
        """Requests in the last minute for this domain and routing prefix (about the first 256 tokens)."""
        limit = self._route_limit
        head = b""
        for p in pieces:
            head = p.chain
            if p.end >= limit:
                break
        now = time.monotonic() if now is None else now
        with self._lock:
            q = self._routes.setdefault((domain, head), deque())
            q.append(now)
            while q and q[0] < now - _ROUTE_WINDOW:
                q.popleft()
            if len(self._routes) > 50_000:
                self._routes.clear()
            return len(q)

    def forget(self) -> None:
        with self._lock:
            self._domains.clear()
            self._routes.clear()
        self.drift.forget()


_TRACKERS: dict[str, PrefixTracker] = {}
_TRACKERS_LOCK = threading.Lock()


def tracker_for(spec: ProviderSpec) -> PrefixTracker:
    """The process's tracker for ``spec``'s provider (one per provider, shared by all clients)."""
    found = _TRACKERS.get(spec.name)
    if found is None:
        with _TRACKERS_LOCK:
            found = _TRACKERS.setdefault(spec.name, PrefixTracker(spec))
    return found


def forget_all() -> None:
    """Forget every request this process sent (after a provider's cache was flushed; in tests)."""
    with _TRACKERS_LOCK:
        trackers = list(_TRACKERS.values())
    for t in trackers:
        t.forget()
