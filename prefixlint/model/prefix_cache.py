"""A provider prefix-cache simulator.

Feed it the requests one cache domain receives, in time order, as :class:`Piece` sequences (from a
request body, a :class:`~prefixlint.model.layout.Layout` or raw token ids). It predicts how many prompt
tokens each request gets from the cache under the provider's rules (minimum length, granularity,
TTL, Anthropic breakpoints with their 20-block lookback, the "recompute the last token" cap of
self-hosted engines), and remembers what each request writes.

The SDK's tracker runs one model per cache domain; the audit can replay a log through it.
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from hashlib import blake2b
from typing import Generic, TypeVar

from prefixlint.model.layout import Layout, Section
from prefixlint.model.pieces import SKETCH_BLOCK, Piece, common_blocks
from prefixlint.model.providers import ModelCacheRules, get_provider

_SIBLINGS = 4  # siblings kept per parent for partial-match estimates
_M = TypeVar("_M")


@dataclass(slots=True)
class _Node:
    end: int
    expires: float
    ttl: float
    breakpoint: bool
    sketch: tuple[int, ...]


@dataclass(frozen=True)
class Prediction:
    """What the cache should do with one request (all counts in local tokens).

    ``cached`` is the expected read; ``upper`` the most the provider could serve from anything this
    model has seen; ``shared`` the longest shared prefix before rules apply; ``written`` the tokens
    expected to be written (breakpoint providers). From a :class:`CacheInterval`, ``cached`` and
    ``shared`` are the lower bound (finished requests) and ``upper`` and ``shared_upper`` the upper
    bound (requests in flight too).
    """

    cached: int
    upper: int
    shared: int
    prompt: int
    written: int = 0
    expired: bool = False
    below_minimum: bool = False
    shared_upper: int = 0
    evicted: bool = False


class CacheModel:
    """The prefix cache of one domain (organisation or workspace, salt or key, model)."""

    def __init__(
        self,
        rules: ModelCacheRules,
        ttls: dict[str, int] | None = None,
        lookback: int = 20,
        max_nodes: int = 200_000,
        capacity_tokens: int | None = None,
    ) -> None:
        self.rules = rules
        self.lookback = lookback
        self.max_nodes = max_nodes
        # LRU with a set capacity (self-hosted engines' KV memory): None never evicts by size
        self.capacity_tokens = capacity_tokens
        self._lru: OrderedDict[bytes, int] = OrderedDict()  # node -> tokens it holds, oldest first
        self._used = 0
        self._evicted: OrderedDict[bytes, None] = OrderedDict()  # recently evicted nodes (causes)
        self.evictions = 0
        base = rules.ttl_seconds
        self.ttls = {"5m": base, **(ttls or {})}
        self.breakpoint_mode = rules.granularity in ("breakpoint", "exact")
        self._nodes: dict[bytes, _Node] = {}
        self._children: dict[bytes, list[bytes]] = {}
        # The last prefix-mode record, whose refreshed expiry is not yet written to its nodes: a
        # conversation that extends it then costs only its new pieces (see ``_flush``).
        self._pending: tuple[tuple[Piece, ...], float] | None = None

    @classmethod
    def for_provider(cls, provider: str, model: str | None = None, **kw: object) -> CacheModel:
        spec = get_provider(provider)
        ttls = {"5m": spec.rules_for(model).ttl_seconds, **spec.extended_ttls}
        return cls(spec.rules_for(model), ttls=ttls, lookback=int(spec.raw.get("lookback_blocks", 20)), **kw)

    def _ttl(self, label: str | None, default: float | None = None) -> float:
        if default is not None:
            return default
        secs = self.ttls.get(label or "5m", self.rules.ttl_seconds)
        return math.inf if secs <= 0 else float(secs)

    def _alive(self, node: _Node | None, now: float) -> bool:
        return node is not None and node.expires >= now

    # -- prediction -----------------------------------------------------------------------------
    def predict(self, pieces: Sequence[Piece], now: float) -> Prediction:
        """Expected cache read for ``pieces`` at time ``now``; changes nothing."""
        if not pieces or not self.rules.supports_caching:
            return Prediction(0, 0, 0, pieces[-1].end if pieces else 0)
        if self.breakpoint_mode:
            return self._predict_breakpoints(pieces, now)
        return self._predict_prefix(pieces, now)

    def _extends_pending(self, pieces: Sequence[Piece]) -> float | None:
        """The pending expiry when ``pieces`` start with the pending record's pieces, else None.

        Chained hashes: equal chains at its last position mean the whole prefix is the same.
        """
        pend = self._pending
        if pend is None:
            return None
        recorded, expires = pend
        m = len(recorded)
        if len(pieces) >= m and pieces[m - 1].chain == recorded[m - 1].chain:
            return expires
        return None

    def _flush(self) -> None:
        """Write the pending record's expiry to its nodes (before anything else reads or changes them)."""
        pend = self._pending
        if pend is None:
            return
        self._pending = None
        recorded, expires = pend
        nodes = self._nodes
        for p in recorded:
            node = nodes.get(p.chain)
            if node is not None:
                node.expires = expires

    def _predict_prefix(self, pieces: Sequence[Piece], now: float) -> Prediction:
        prompt = pieces[-1].end
        shared = 0
        expired = False
        k = 0
        pending = self._extends_pending(pieces)
        if pending is None:
            self._flush()
        elif pending < now:  # every node of the pending prefix expires together
            expired = True
        else:  # no other write since: the pending prefix is cached and alive
            k = len(self._pending[0])  # type: ignore[index]
            shared = pieces[k - 1].end
        evicted = False
        for p in pieces[k:] if not expired else ():
            node = self._nodes.get(p.chain)
            if node is None:
                evicted = p.chain in self._evicted
                break
            if node.expires < now:
                expired = True
                break
            shared = p.end
            k += 1
        partial = 0
        if k < len(pieces) and not expired:
            partial = self._partial(pieces, k, now)
        total = shared + partial
        cached = self.rules.cacheable(total, prompt)
        slack = SKETCH_BLOCK if k < len(pieces) else 0
        upper = self.rules.cacheable(min(prompt, total + slack), prompt)
        below = total > 0 and cached == 0
        return Prediction(cached, max(upper, cached), total, prompt, 0, expired, below, evicted=evicted)

    def _partial(self, pieces: Sequence[Piece], k: int, now: float) -> int:
        parent = pieces[k - 1].chain if k else b""
        start = pieces[k - 1].end if k else 0
        best = 0
        piece = pieces[k]
        overhead = piece.tokens - SKETCH_BLOCK * len(piece.sketch)  # tokens not covered by blocks
        for child in self._children.get(parent, ()):
            node = self._nodes.get(child)
            if not self._alive(node, now):
                continue
            n = common_blocks(node.sketch, piece.sketch) * SKETCH_BLOCK  # type: ignore[union-attr]
            if n:
                n += min(overhead, SKETCH_BLOCK)
            best = max(best, min(n, piece.end - start))
        return best

    def _breakpoints(self, pieces: Sequence[Piece]) -> list[int]:
        bps = [i for i, p in enumerate(pieces) if p.ttl]
        if self.rules.granularity == "exact" and (not bps or bps[-1] != len(pieces) - 1):
            bps.append(len(pieces) - 1)  # the implicit breakpoint at the latest message
        return bps[-50:] if self.rules.granularity == "exact" else bps

    def _predict_breakpoints(self, pieces: Sequence[Piece], now: float) -> Prediction:
        prompt = pieces[-1].end
        best = 0
        expired = False
        for b in reversed(self._breakpoints(pieces)):
            for j in range(b, max(-1, b - self.lookback), -1):
                node = self._nodes.get(pieces[j].chain)
                if node is None or not node.breakpoint:
                    continue
                if node.expires < now:
                    expired = True
                    continue
                best = max(best, pieces[j].end)
                break
            if best:
                break
        minimum = self.rules.min_cacheable_tokens
        cached = best if best >= minimum else 0
        written = 0
        bps = self._breakpoints(pieces)
        for b in bps:
            if pieces[b].end >= minimum and pieces[b].end > cached:
                written = pieces[b].end - cached
        below = bool(bps) and max(pieces[b].end for b in bps) < minimum
        return Prediction(cached, cached, best, prompt, written, expired and not cached, below)

    # -- recording ------------------------------------------------------------------------------
    def record(self, pieces: Sequence[Piece], now: float, ttl_seconds: float | None = None) -> None:
        """Remember what ``pieces`` write to (and refresh in) the cache at ``now``."""
        if not pieces or not self.rules.supports_caching:
            return
        if self.capacity_tokens is not None and not self.breakpoint_mode:
            self._record_lru(pieces, now, ttl_seconds)
            return
        start = 0
        if self._extends_pending(pieces) is not None and len(self._nodes) <= self.max_nodes:
            # nothing was written since the pending record: its pieces have nodes, and their
            # expiry becomes this record's (written lazily by ``_flush``)
            start = len(self._pending[0])  # type: ignore[index]
        else:
            self._flush()
        if len(self._nodes) > self.max_nodes:
            for key in list(self._nodes)[: self.max_nodes // 2]:
                del self._nodes[key]
            self._children.clear()
        if self.breakpoint_mode:
            self._record_breakpoints(pieces, now, ttl_seconds)
            return
        ttl = self._ttl(None, ttl_seconds)
        parent = pieces[start - 1].chain if start else b""
        for p in pieces[start:] if start else pieces:
            node = self._nodes.get(p.chain)
            if node is None:
                self._nodes[p.chain] = _Node(p.end, now + ttl, ttl, False, p.sketch)
                kids = self._children.setdefault(parent, [])
                kids.append(p.chain)
                if len(kids) > _SIBLINGS:
                    del kids[0]
            else:
                node.expires = now + ttl
            parent = p.chain
        self._pending = (tuple(pieces), now + ttl)

    def _record_lru(self, pieces: Sequence[Piece], now: float, ttl_seconds: float | None) -> None:
        """Record with a size limit: touch the pieces tail first, so a chain's head is the most recent
        and the tail of the least recently used chain is evicted first (vLLM frees blocks in reverse)."""
        ttl = self._ttl(None, ttl_seconds)
        nodes, lru = self._nodes, self._lru
        parent = b""
        step = self.rules.increment if self.rules.granularity == "block" else 1
        for p in pieces:
            node = nodes.get(p.chain)
            if node is None:
                nodes[p.chain] = _Node(p.end, now + ttl, ttl, False, p.sketch)
                self._evicted.pop(p.chain, None)
                size = -(-p.tokens // step) * step
                lru[p.chain] = size
                self._used += size
                kids = self._children.setdefault(parent, [])
                kids.append(p.chain)
                if len(kids) > _SIBLINGS:
                    del kids[0]
            else:
                node.expires = now + ttl
            parent = p.chain
        for p in reversed(pieces):
            if p.chain in lru:
                lru.move_to_end(p.chain)
        cap = self.capacity_tokens or 0
        while self._used > cap and lru:
            chain, size = lru.popitem(last=False)
            self._used -= size
            nodes.pop(chain, None)
            self.evictions += 1
            self._evicted[chain] = None
            if len(self._evicted) > 10_000:
                self._evicted.popitem(last=False)

    def purge(self, now: float) -> int:
        """Forget entries that expired before ``now``, so memory follows the live working set."""
        self._flush()
        dead = [k for k, n in self._nodes.items() if n.expires < now]
        for k in dead:
            del self._nodes[k]
            size = self._lru.pop(k, None)
            if size is not None:
                self._used -= size
        if dead:
            nodes = self._nodes
            self._children = {
                parent: [c for c in kids if c in nodes]
                for parent, kids in self._children.items()
                if not parent or parent in nodes
            }
        return len(dead)

    def __len__(self) -> int:
        """Entries held (prefix pieces or breakpoints)."""
        return len(self._nodes)

    @property
    def used_tokens(self) -> int:
        """Tokens held under the LRU capacity (0 without one)."""
        return self._used

    def _record_breakpoints(self, pieces: Sequence[Piece], now: float, ttl_seconds: float | None) -> None:
        minimum = self.rules.min_cacheable_tokens
        bps = self._breakpoints(pieces)
        for b in bps:
            for j in range(b, max(-1, b - self.lookback), -1):  # refresh what was read
                node = self._nodes.get(pieces[j].chain)
                if node is not None and node.breakpoint and node.expires >= now:
                    node.expires = now + node.ttl
                    break
            p = pieces[b]
            if p.end < minimum:
                continue
            ttl = self._ttl(p.ttl or "5m", ttl_seconds)
            node = self._nodes.get(p.chain)
            if node is None or node.expires < now:
                self._nodes[p.chain] = _Node(p.end, now + ttl, ttl, True, p.sketch)
            else:
                node.expires = max(node.expires, now + ttl)
                node.breakpoint = True

    def observe(self, pieces: Sequence[Piece], now: float) -> Prediction:
        """Predict, then record: one step of a replay."""
        pred = self.predict(pieces, now)
        self.record(pieces, now)
        return pred


@dataclass(slots=True)
class Flight:
    """A request in flight: its pieces and those of the requests sent while it was in the air."""

    pieces: Sequence[Piece]
    sent: float
    later: list[Sequence[Piece]]


def _overlap(a: Sequence[Piece], b: Sequence[Piece]) -> int:
    """Tokens at the start of ``a`` that ``b`` shares (whole pieces by chained hash, then sketch blocks)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # chains: equal at k means equal before k, so the equal prefix is found by bisection
        mid = (lo + hi + 1) // 2
        if a[mid - 1].chain == b[mid - 1].chain:
            lo = mid
        else:
            hi = mid - 1
    shared = a[lo - 1].end if lo else 0
    if lo < len(a) and lo < len(b):
        shared += common_blocks(a[lo].sketch, b[lo].sketch) * SKETCH_BLOCK
    return shared


class CacheInterval:
    """One domain's cache as an interval: what surely was written, and what may have been.

    A request writes the cache while the provider reads its prompt, before its response begins, and a
    provider may serve concurrent requests in any order. So the requests in flight around a request,
    sent before it or after it while it waited, may or may not have written what it reads:

    * ``sent`` records a request in the upper model and returns its :class:`Flight`;
    * ``begun`` (its response started) records it in both models and ends the flight;
    * :meth:`predict` at send time gives the lower bound (``cached``, ``shared``: finished requests)
      and an upper bound (``upper``, ``shared_upper``: in flight too); :meth:`widen` adds, once the
      response is there, what the requests sent during the flight could have written.

    A request that failed in flight stays "may be cached" in the upper model.
    """

    def __init__(self, make: Callable[[], CacheModel], max_flight_s: float = 600.0) -> None:
        self.lower = make()
        self.upper = make()
        self.rules = self.lower.rules
        self.max_flight_s = max_flight_s
        self._flights: dict[int, Flight] = {}

    @classmethod
    def for_provider(cls, provider: str, model: str | None = None) -> CacheInterval:
        return cls(lambda: CacheModel.for_provider(provider, model))

    def predict(self, pieces: Sequence[Piece], now: float) -> Prediction:
        low = self.lower.predict(pieces, now)
        high = self.upper.predict(pieces, now)
        # the constructor, not dataclasses.replace (which costs three times as much; once per request)
        return Prediction(
            cached=low.cached,
            upper=max(low.upper, high.upper),
            shared=low.shared,
            prompt=low.prompt,
            written=low.written,
            expired=low.expired,
            below_minimum=low.below_minimum,
            shared_upper=max(low.shared, high.shared),
            evicted=low.evicted,
        )

    def sent(self, pieces: Sequence[Piece], now: float, ttl_seconds: float | None = None) -> Flight:
        """A request left: from now on it may be cached. Returns its flight (for ``begun``/``widen``)."""
        self.upper.record(pieces, now, ttl_seconds)
        flights = self._flights
        if flights:
            stale = now - self.max_flight_s
            for key, f in list(flights.items()):
                if f.sent < stale:  # lost (the call failed or was never finished)
                    del flights[key]
                else:
                    f.later.append(pieces)
        flight = Flight(pieces, now, [])
        flights[id(flight)] = flight
        return flight

    def begun(self, flight: Flight, now: float, ttl_seconds: float | None = None) -> None:
        """A request's response began: what it wrote is cached (and refreshed as of ``now``)."""
        self._flights.pop(id(flight), None)
        self.lower.record(flight.pieces, now, ttl_seconds)
        self.upper.record(flight.pieces, now, ttl_seconds)

    def empty(self) -> bool:
        """Nothing cached and nothing in flight (a replay may then forget this interval)."""
        return not self._flights and not len(self.lower) and not len(self.upper)

    def failed(self, flight: Flight) -> None:
        """A request failed: it may have written the cache (it stays in the upper model)."""
        self._flights.pop(id(flight), None)

    def widen(self, flight: Flight, pred: Prediction) -> Prediction:
        """``pred`` with its upper bound raised by what requests sent during ``flight`` could have written."""
        pieces = flight.pieces
        if not flight.later or not pieces:
            return pred
        shared = max(_overlap(pieces, other) for other in list(flight.later))
        prompt = pieces[-1].end
        upper = self.rules.cacheable(min(shared, prompt), prompt)
        if upper <= pred.upper and shared <= pred.shared_upper:
            return pred
        return replace(pred, upper=max(pred.upper, upper), shared_upper=max(pred.shared_upper, shared))


class RoutedCache(Generic[_M]):
    """Routing in front of per-machine caches (OpenAI: a hash of about the first 256 tokens plus
    ``prompt_cache_key``; above about ``rpm`` requests a minute for one route, traffic overflows to
    more machines, each with its own, cold, cache).

    ``route`` counts one request and returns the machine's cache (a :class:`CacheModel` or a
    :class:`CacheInterval`, whatever ``factory`` makes); predict on it when the request is sent and
    record on it when its response begins. Machines are served round-robin.
    """

    def __init__(
        self,
        factory: Callable[[], _M],
        rpm: int | None,
        prefix_tokens: int = 256,
        window: float = 60.0,
    ) -> None:
        self.factory = factory
        self.rpm = rpm
        self.prefix_tokens = prefix_tokens
        self.window = window
        self._times: dict[tuple[bytes, str], deque[float]] = {}
        self._turn: dict[tuple[bytes, str], int] = {}
        self._machines: dict[tuple[bytes, str, int], _M] = {}
        self.overflows = 0  # requests sent to a machine other than the route's first

    def head(self, pieces: Sequence[Piece]) -> bytes:
        """The routing prefix: about the first ``prefix_tokens`` tokens (the pieces before, then the
        block hashes of the piece that reaches the limit, so a long first piece routes by its start)."""
        prev = b""
        start = 0
        for p in pieces:
            if p.end >= self.prefix_tokens:
                blocks = -(-(self.prefix_tokens - start) // SKETCH_BLOCK)
                if len(p.sketch) >= blocks:
                    return blake2b(prev + repr(p.sketch[:blocks]).encode(), digest_size=16).digest()
                return p.chain
            prev, start = p.chain, p.end
        return prev

    def route(self, pieces: Sequence[Piece], now: float, key: str = "") -> tuple[_M, int]:
        """(the machine's cache, the route's requests in the last window, this one included)."""
        route = (self.head(pieces), key)
        if len(self._times) > 50_000:  # forget idle routes (their machines keep their caches)
            self._times = {r: q for r, q in self._times.items() if q and q[-1] >= now - self.window}
        q = self._times.setdefault(route, deque())
        q.append(now)
        while q and q[0] < now - self.window:
            q.popleft()
        rate = len(q)
        machines = max(1, -(-rate // self.rpm)) if self.rpm else 1
        turn = self._turn.get(route, -1) + 1
        self._turn[route] = turn
        index = turn % machines
        if index:
            self.overflows += 1
        model = self._machines.get((*route, index))
        if model is None:
            model = self._machines[(*route, index)] = self.factory()
        return model, rate

    def machines(self) -> list[_M]:
        return list(self._machines.values())

    def drop(self, empty: Callable[[_M], bool]) -> int:
        """Forget the machines whose cache is ``empty`` (everything on them expired), and their routes."""
        dead = [k for k, m in self._machines.items() if empty(m)]
        for k in dead:
            del self._machines[k]
        live = {(h, key) for h, key, _ in self._machines}
        self._turn = {r: t for r, t in self._turn.items() if r in live}
        self._times = {r: q for r, q in self._times.items() if r in live}
        return len(dead)

    def peers(self, pieces: Sequence[Piece], key: str = "") -> list[_M]:
        """Every machine of the route of ``pieces`` (the overflow may have gone to any of them)."""
        head = self.head(pieces)
        return [m for (h, k, _), m in self._machines.items() if h == head and k == key]


def pieces_from_ids(ids: Sequence[int], block: int = SKETCH_BLOCK) -> list[Piece]:
    """Pieces of ``block`` tokens each from raw token ids (for engines and replayed logs)."""
    out: list[Piece] = []
    prev = b""
    for i in range(0, len(ids), block):
        chunk = ids[i : i + block]
        data = ",".join(map(str, chunk)).encode()
        digest = blake2b(data, digest_size=16).digest()
        prev = blake2b(prev + digest, digest_size=16).digest()
        sketch = (hash(tuple(chunk)),) if len(chunk) == block else ()
        out.append(
            Piece(
                f"ids[{i}:{i + len(chunk)}]",
                Section.MESSAGES,
                None,
                len(chunk),
                digest,
                prev,
                i + len(chunk),
                sketch,
            )
        )
    return out


def pieces_from_layout(layout: Layout) -> list[Piece]:
    """Pieces from a layout's segments (static text hashed; dynamic values never match)."""
    out: list[Piece] = []
    prev = b""
    end = 0
    for i, seg in enumerate(layout.segments):
        h = blake2b(digest_size=16)
        h.update(f"{seg.section.value}\x00{seg.role or ''}\x00".encode())
        h.update(seg.text.encode() if seg.static else b"\x00dynamic\x00" + os.urandom(16))
        digest = h.digest()
        prev = blake2b(prev + digest, digest_size=16).digest()
        end += seg.tokens
        ttl = seg.cache_control.ttl if seg.cache_control else None
        out.append(
            Piece(
                seg.label or f"segments[{i}]",
                seg.section,
                seg.role,
                seg.tokens,
                digest,
                prev,
                end,
                (),
                seg.static,
                ttl,
                seg.message_index,
            )
        )
    return out
