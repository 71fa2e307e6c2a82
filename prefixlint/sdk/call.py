"""One request on its way through the wrapper: what was sent, and what the report needs."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from prefixlint.analysis.payloads.pieces import PieceCache
from prefixlint.model.pieces import Piece
from prefixlint.model.prefix_cache import Flight, Prediction
from prefixlint.model.providers import ModelCacheRules
from prefixlint.model.verdict import Divergence
from prefixlint.sdk.sightings import Sighting
from prefixlint.sdk.tracker import Domain

NO_PREDICTION = Prediction(0, 0, 0, 0)


@dataclass(slots=True)
class Call:
    api: str
    provider: str
    model: str | None
    rules: ModelCacheRules
    pieces: list[Piece] | None  # None until the send-side accounting cut them
    domain: Domain
    tenant_hash: str | None
    template: str  # the hit-rate key: the explicit template, else the call site
    drift_key: str
    drift_kind: str  # "conversation", "template" or "site"
    caller_marks: bool  # the request carried cache_control breakpoints of its own
    prefix_hash: str
    key: str | None
    salted: bool
    breakpoints: int
    changes: tuple[str, ...]
    dry_run: bool
    stream: bool
    ttl: float | None
    tokens_exact: bool
    helper: bool
    body: dict[str, Any]
    cache: PieceCache
    now: float
    mono: float
    prediction: Prediction = NO_PREDICTION
    drift: Divergence | None = None
    route_rpm: int = 0
    overhead_ms: float = 0.0
    sent_job: Future[Any] | None = None
    begun: bool = False
    flight: Flight | None = None
    sighting: Sighting | None = None  # recorded uncounted: its head was new (see sightings.py)
