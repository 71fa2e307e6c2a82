"""The prefix tracker: one cache model per cache domain, plus per-template history for drift."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter, is_

from prefixlint.model.layout import Section
from prefixlint.model.pieces import SKETCH_BLOCK, Piece, common_blocks
from prefixlint.model.prefix_cache import CacheModel, Prediction
from prefixlint.model.providers import ProviderSpec
from prefixlint.sdk.report import Divergence

# A cache domain: (provider, organisation/workspace id, model, key or salt).
Domain = tuple[str, str, str, str]
_ROUTE_WINDOW = 60.0
_STABLE = attrgetter("stable")


@dataclass
class _Last:
    pieces: list[Piece]
    all_stable: bool | None = None  # None: not computed yet


class PrefixTracker:
    """Predicts cached tokens per domain and finds where a template's prefix drifted.

    Thread-safe; all work under the lock is CPU-only, so it is also safe under asyncio.
    """

    def __init__(self, spec: ProviderSpec, max_templates: int = 10_000) -> None:
        self.spec = spec
        self.max_templates = max_templates
        self._lock = threading.Lock()
        self._models: dict[Domain, CacheModel] = {}
        self._last: dict[str, _Last] = {}
        self._routes: dict[tuple[Domain, bytes], deque[float]] = {}
        self._route_limit = int(spec.raw.get("routing_prefix_tokens", 256))

    def _model(self, domain: Domain) -> CacheModel:
        model = self._models.get(domain)
        if model is None:
            model = CacheModel.for_provider(self.spec.name, domain[2] or None)
            self._models[domain] = model
        return model

    def predict(self, domain: Domain, pieces: Sequence[Piece], now: float) -> Prediction:
        with self._lock:
            return self._model(domain).predict(pieces, now)

    def record(self, domain: Domain, pieces: Sequence[Piece], now: float, ttl: float | None = None) -> None:
        with self._lock:
            self._model(domain).record(pieces, now, ttl)

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

    def drift(
        self, key: str, pieces: list[Piece], conversation: bool, excerpt_chars: int = 0
    ) -> Divergence | None:
        """Where ``pieces`` first differ from the previous request stored under ``key``; remembers them.

        Without an explicit conversation, a difference only counts when it sits in tools/system, or
        after a first user message both requests share (the same conversation, rewritten).
        """
        with self._lock:
            last = self._last.get(key)
            if len(self._last) >= self.max_templates and last is None:
                self._last.clear()
            self._last[key] = cur = _Last(pieces)
        if last is None:
            return None
        lp = last.pieces
        if last.all_stable is None:
            last.all_stable = all(map(_STABLE, lp))
        if len(pieces) >= len(lp) and all(map(is_, pieces, lp)):
            # the same piece objects plus new ones (a conversation that grew): only the new ones cost
            cur.all_stable = last.all_stable and all(map(_STABLE, pieces[len(lp) :]))
            if last.all_stable:
                return None
        # Chained hashes: when the last stable piece of the previous request has the same chain as the
        # piece at its position here, every piece before it matches too (no walk over the history).
        stable = list(map(_STABLE, last.pieces))
        n = stable.count(True)
        if n == 0:
            return None
        if len(pieces) >= n:
            j = len(stable) - 1 - stable[::-1].index(True)
            if pieces[n - 1].chain == last.pieces[j].chain:
                return None
        prev = [p for p in last.pieces if p.stable]
        k = 0
        for a, b in zip(prev, pieces, strict=False):
            if a.chain != b.chain:
                break
            k += 1
        if k >= len(prev):
            return None
        old = prev[k]
        new = pieces[k] if k < len(pieces) else None
        if not conversation:
            head = old.section is not Section.MESSAGES or (
                new is not None and new.section is not Section.MESSAGES
            )
            first_user = next((i for i, p in enumerate(prev) if p.role == "user"), None)
            if not head and (first_user is None or k <= first_user):
                return None
        start = pieces[k - 1].end if k else 0
        if new is None:
            return Divergence(start, "(request ended)", old.path)
        before = after = None
        offset = common_blocks(old.sketch, new.sketch) * SKETCH_BLOCK
        if excerpt_chars and old.text is not None and new.text is not None:
            i = 0
            for x, y in zip(old.text, new.text, strict=False):
                if x != y:
                    break
                i += 1
            lo = max(0, i - excerpt_chars // 3)
            before = old.text[lo : lo + excerpt_chars]
            after = new.text[lo : lo + excerpt_chars]
        return Divergence(start + offset, new.path, old.path, before, after)
