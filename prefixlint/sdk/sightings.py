"""First sightings: requests recorded without tokenizing them, until another request shares their head.

A request's **head key** hashes the first bytes of its first piece
(:func:`~prefixlint.analysis.payloads.pieces.head_key`). When no request of this process had the same
key, the request shares no cached prefix with anything this process sent: not its first piece, not
that piece's first sketch block, so nothing after them. Its prediction is then known without counting
its tokens (:func:`unseen_prediction`), and the tokenizing waits: the request is kept as a
:class:`Sighting` (its pieces with hashes but no counts, and their texts). When a later request has the
same key (the second sighting), every waiting sighting of that key is counted and recorded in the
tracker as it would have been when it was sent (in flight, begun or failed), before the later request
is predicted, so the tracker holds exact token boundaries whenever they can matter.

Memory is bounded: at most :data:`MAX_WAITING` sightings and :data:`MAX_WAITING_CHARS` characters of
text wait; beyond that, sightings whose cache lifetime is over are dropped and then the oldest are
counted. At most :data:`MAX_KEYS` head keys are remembered; past that the process stops deferring
(every waiting sighting is counted) until :func:`~prefixlint.sdk.forget`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from prefixlint.analysis.payloads.pieces import PieceCache
from prefixlint.model.pieces import SKETCH_BLOCK, Piece
from prefixlint.model.prefix_cache import Flight, Prediction
from prefixlint.model.providers import ModelCacheRules

MAX_KEYS = 1 << 18  # head keys remembered (about 50 bytes each)
MAX_WAITING = 4096  # sightings waiting to be counted
MAX_WAITING_CHARS = 64 << 20  # characters of text they keep alive
LOST_FLIGHT_S = 600.0  # a request in flight this long is lost (CacheInterval.max_flight_s)


@dataclass(slots=True, eq=False)
class Sighting:
    """A request recorded uncounted: what the tracker needs to record it later, as of when it was sent."""

    domain: tuple[str, str, str, str]
    key: int
    pieces: list[Piece]  # hashes only until counted (then filled in place)
    texts: list[str] | None  # the text of each piece; dropped once counted
    cache: PieceCache
    sent: float
    mono: float
    ttl: float | None  # the request's retention, None: the model's default
    lifetime: float  # seconds its cache entries live after its response began (inf: no expiry)
    chars: int
    begun: float | None = None
    failed: bool = False
    flight: Flight | None = None  # set when counted while still in flight
    counted: bool = False

    def over(self, now: float) -> bool:
        """True when nothing this request wrote can be cached at ``now`` any more."""
        start = self.begun if self.begun is not None else self.sent + LOST_FLIGHT_S
        return start + self.lifetime < now


def unseen_prediction(rules: ModelCacheRules) -> Prediction:
    """The prediction for a request whose head no request of this process had (local counts unknown).

    Nothing of it is surely cached. The cache model's upper bound for a request that matches no
    recorded piece is its block slack (a shared start shorter than one sketch block), which only
    providers without a minimum length can serve; under a breakpoint model it is 0.
    """
    bp = rules.granularity in ("breakpoint", "exact")
    upper = 0 if bp or not rules.supports_caching else rules.cacheable(SKETCH_BLOCK)
    return Prediction(0, upper, 0, 0)


class Heads:
    """The head keys a tracker has seen and the sightings still waiting. Guarded by the tracker's lock."""

    def __init__(self) -> None:
        self.keys: dict[int, Sighting | None] = {}  # None: nothing of that key waits
        self.waiting: deque[Sighting] = deque()  # oldest first (counted ones are skipped)
        self.chars = 0
        self.deferring = True

    def full(self) -> bool:
        return len(self.keys) >= MAX_KEYS

    def add(self, s: Sighting) -> None:
        self.keys[s.key] = s
        self.waiting.append(s)
        self.chars += s.chars

    def take(self, key: int) -> Sighting | None:
        """The sighting of ``key`` still waiting, if any (the key stays known). A key has at most one:
        the next request with it is its second sighting."""
        found = self.keys.get(key)
        if found is None:
            return None
        self.keys[key] = None
        self.chars -= found.chars
        return found

    def overflow(self, now: float) -> list[Sighting]:
        """Sightings to count now to stay within the bounds (expired ones are dropped uncounted)."""
        out: list[Sighting] = []
        waiting = self.waiting
        while waiting and (len(waiting) > MAX_WAITING or self.chars > MAX_WAITING_CHARS):
            s = waiting.popleft()
            if self.keys.get(s.key) is not s:  # counted already
                continue
            self.keys[s.key] = None
            self.chars -= s.chars
            if s.over(now):  # no longer cacheable: a later request with its head can only miss
                s.texts = None
                continue
            out.append(s)
        return out

    def stop(self) -> list[Sighting]:
        """Stop deferring (too many keys): every waiting sighting, to count now."""
        out = [s for s in self.waiting if self.keys.get(s.key) is s]
        self.keys.clear()
        self.waiting.clear()
        self.chars = 0
        self.deferring = False
        return out
