"""Replay one partition of a log (a provider, organisation and tenant) through provider cache models.

:class:`PartitionReplay` is fed the partition's records in time order and gives an
:class:`~prefixlint.audit.summary.AuditSummary`; nothing outside the partition changes what it
computes (:func:`replay_partition` is the pure form), so partitions can be replayed in any process.

Inside a partition each cache domain (model, and ``prompt_cache_key`` or ``cache_salt``) has its own
:class:`~prefixlint.model.prefix_cache.CacheInterval` (behind a
:class:`~prefixlint.model.prefix_cache.RoutedCache` where the provider routes by prefix and key), the
SDK's own: a request is predicted when it is sent, may be cached from then on (upper bound), is
cached once its response begins (lower bound), and is judged with
:func:`~prefixlint.model.verdict.judge` once its response is there, as the SDK judges it.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from prefixlint.analysis.payloads.divergence import SharedPrefix, first_divergence
from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.audit.causes import changed_parameters, parameters
from prefixlint.audit.classify import classify, redact, volatile_spans
from prefixlint.audit.fixed import fixed_request
from prefixlint.audit.records import LogRecord
from prefixlint.audit.sessions import Request, Sessions, Templates, head_end, stable_end, template_end
from prefixlint.audit.summary import TIMELINE_STEP, AuditSummary
from prefixlint.audit.trace import trace_entry
from prefixlint.model.layout import Section
from prefixlint.model.pieces import SKETCH_BLOCK, Piece
from prefixlint.model.prefix_cache import CacheInterval, CacheModel, Flight, Prediction, RoutedCache
from prefixlint.model.prices import PriceBook
from prefixlint.model.providers import ModelCacheRules, Price, get_provider
from prefixlint.model.tokens import Tokenizer, tokenizer_for
from prefixlint.model.usage import NormalizedUsage, normalize_usage
from prefixlint.model.verdict import Divergence, judge

_PIECE_ENTRIES = 30_000  # distinct texts whose token counts are kept (memory: their text)
_PURGE_EVERY = 300.0  # seconds of log time between purges of expired entries and idle sessions
_SELF_HOSTED = ("block", "token")
# A session idle for twice the longest cache lifetime in its partition (at least an hour, at most a
# day; engines without a TTL count as an hour) is closed: its cache entries are gone by then.
_SESSION_IDLE = (3600.0, 86400.0)

TraceSink = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class ReplayOptions:
    """How to replay (``verdicts``: judge every request as the SDK does)."""

    capacity_tokens: int | None = None  # LRU capacity of self-hosted engines (None: never full)
    capacity_points: tuple[int, ...] = ()  # capacities of the hit-rate curve
    redact: bool = False
    routing: bool = True
    prices: PriceBook = field(default_factory=PriceBook.default)
    verdicts: bool = True
    trace_block: int = 16
    trace_key: bytes = b""


_CACHES: dict[tuple[str, str], tuple[Tokenizer, PieceCache]] = {}


_TOKENIZERS: dict[tuple[str, str | None], Tokenizer] = {}


def piece_cache(provider: str, model: str | None) -> tuple[Tokenizer, PieceCache]:
    """The tokenizer and the (process-wide) message-level token cache for a provider's model."""
    tok = _TOKENIZERS.get((provider, model))
    if tok is None:
        if len(_TOKENIZERS) > 10_000:
            _TOKENIZERS.clear()
        tok = _TOKENIZERS[(provider, model)] = tokenizer_for(provider, model)
    key = (tok.name, tok.source)
    hit = _CACHES.get(key)
    if hit is None:
        hit = _CACHES[key] = (tok, PieceCache(tok, max_entries=_PIECE_ENTRIES, snapshots=False))
    return hit[0] if hit[0] == tok else tok, hit[1]


Source = RoutedCache[CacheInterval] | CacheInterval


@dataclass(slots=True)
class _Domain:
    rules: ModelCacheRules
    original: Source
    fixed: Source
    curve: list[CacheModel]
    writes: OrderedDict[bytes, list[float]] = field(
        default_factory=OrderedDict
    )  # chain -> [tokens, expires, read]


def _shared_pieces(a: list[Piece], b: list[Piece]) -> int:
    """How many leading pieces two requests share (chained hashes: equal at i means equal before i)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[mid - 1].chain == b[mid - 1].chain:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _breakpoint_ends(pieces: list[Piece], rules: ModelCacheRules) -> tuple[int, ...]:
    ends = [p.end for p in pieces if p.ttl]
    if rules.granularity == "exact" and (not ends or ends[-1] != pieces[-1].end):
        ends.append(pieces[-1].end)
    return tuple(ends)


def _cost(
    price: Price, rules: ModelCacheRules, prompt: int, cached: int, written: int, long_ttl: bool
) -> float:
    write_price = price.cache_write_1h if long_ttl and price.cache_write_1h is not None else price.cache_write
    if write_price is None:
        write_price = price.input * (rules.cache_write_multiplier or 1.0)
    fresh = max(0, prompt - cached - written)
    return (fresh * price.input + cached * price.cached_input + written * write_price) / 1e6


@dataclass(slots=True)
class _Judged:
    """What the verdict of a request needs once its response began."""

    source: str
    line: int
    rules: ModelCacheRules
    exact: bool
    pred: Prediction
    drift: SharedPrefix | None
    usage: NormalizedUsage | None
    rate: int
    rpm: int | None


def _route_upper(
    pred: Prediction, machine: CacheInterval, peers: list[CacheInterval], pieces: list[Piece], now: float
) -> Prediction:
    """The upper bound over every machine of an overflowing route: the provider may have sent the
    request to any of them, and the routing model only says which one is likely."""
    upper, shared = pred.upper, pred.shared_upper
    for m in peers:
        if m is not machine:
            other = m.predict(pieces, now)
            upper, shared = max(upper, other.upper), max(shared, other.shared_upper)
    return replace(pred, upper=upper, shared_upper=shared)


class PartitionReplay:
    """The replay state of one partition (its working set: cache entries, open sessions, templates)."""

    def __init__(self, options: ReplayOptions | None = None, trace: TraceSink | None = None) -> None:
        self.options = options or ReplayOptions()
        self.trace = trace
        self.summary = AuditSummary()
        self._domains: dict[tuple[str, str, str], _Domain] = {}
        # responses still to begin: (when, order, interval, flight, ttl, what to judge then)
        self._inflight: list[tuple[float, int, CacheInterval, Flight, float | None, _Judged | None]] = []
        self._seq = 0
        self._last_time: float | None = None
        self._templates = Templates()
        self._sessions = Sessions()
        self._template_last: OrderedDict[str, tuple[Request, bool]] = OrderedDict()
        self._heads: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._volatile_digests: dict[bytes, bool] = {}
        self._span_cache: dict[bytes, list[tuple[int, int]]] = {}
        self._next_purge: float | None = None
        self._longest_ttl = 0.0
        self._divergence: SharedPrefix | None = None
        # (source, line, verdict) of every request, when a caller wants them (tests, small logs)
        self.verdict_log: list[tuple[str, int, str]] | None = None

    # -- cache domains --------------------------------------------------------------------------
    def _domain(self, rec: LogRecord) -> _Domain:
        key = (rec.provider, rec.model or "", rec.cache_key)
        d = self._domains.get(key)
        if d is not None:
            return d
        spec = get_provider(rec.provider)
        rules = spec.rules_for(rec.model)
        self_hosted = rules.granularity in _SELF_HOSTED and rules.ttl_seconds == 0
        cap = self.options.capacity_tokens if self_hosted else None

        def make(capacity: int | None = cap) -> CacheModel:
            return CacheModel.for_provider(rec.provider, rec.model, capacity_tokens=capacity)

        routed = self.options.routing and bool(spec.routing_rpm)
        limit = int(spec.raw.get("routing_prefix_tokens", 256))

        def interval() -> CacheInterval:
            return CacheInterval(make)

        def source() -> Source:
            return RoutedCache(interval, spec.routing_rpm, limit) if routed else interval()

        curve = [make(c) for c in self.options.capacity_points] if self_hosted else []
        d = self._domains[key] = _Domain(rules, source(), source(), curve)
        return d

    @staticmethod
    def _machine(src: Source, pieces: list[Piece], now: float, key: str) -> tuple[CacheInterval, int]:
        if isinstance(src, RoutedCache):
            return src.route(pieces, now, key)
        return src, 0

    def _begin_until(self, now: float) -> None:
        """Responses that began by ``now``: their writes are cached; their requests are judged."""
        q = self._inflight
        while q and q[0][0] <= now:
            at, _, interval, flight, ttl, judged = heapq.heappop(q)
            interval.begun(flight, at, ttl)
            if judged is not None:
                self._verdict(judged, interval.widen(flight, judged.pred))

    def _await(
        self,
        interval: CacheInterval,
        flight: Flight,
        now: float,
        commit: float,
        ttl: float | None,
        judged: _Judged | None,
    ) -> None:
        """The response of a sent request begins at ``commit`` (now, when the log has no duration)."""
        self._seq += 1
        heapq.heappush(self._inflight, (commit, self._seq, interval, flight, ttl, judged))
        if commit <= now:
            self._begin_until(now)

    # -- one request ----------------------------------------------------------------------------
    def feed(self, rec: LogRecord) -> None:
        """Replay one record (records of a partition must come in time order)."""
        s = self.summary
        s.requests += 1
        now = rec.time
        if now is None:
            s.notes["no-timestamp"] += 1
            now = self._last_time or 0.0
        elif self._last_time is not None and now < self._last_time:
            s.notes["out-of-order"] += 1
            now = self._last_time
        self._last_time = now
        tok, cache = piece_cache(rec.provider, rec.model)
        pieces = pieces_from_request(rec.body, rec.api, cache, keep_text=True)
        if not pieces:
            s.notes["empty-request"] += 1
            return
        d = self._domain(rec)
        rules = d.rules
        spec = get_provider(rec.provider)
        prompt = pieces[-1].end
        commit = rec.end if rec.end is not None and rec.end > now else now
        retention = rec.body.get("prompt_cache_retention")
        ttl = spec.extended_ttls.get(retention) if isinstance(retention, str) else None
        ttl_f = float(ttl) if ttl else None
        self._begin_until(now)
        self._longest_ttl = max(self._longest_ttl, ttl_f or float(rules.ttl_seconds))
        if self._next_purge is None:
            self._next_purge = now + _PURGE_EVERY
        elif now >= self._next_purge:
            self._purge(now)
            self._next_purge = now + _PURGE_EVERY

        machine, rate = self._machine(d.original, pieces, now, rec.cache_key)
        pred = machine.predict(pieces, now)
        if isinstance(d.original, RoutedCache) and spec.routing_rpm and rate > spec.routing_rpm:
            pred = _route_upper(pred, machine, d.original.peers(pieces, rec.cache_key), pieces, now)
        flight = machine.sent(pieces, now, ttl_f)

        # grouping and the previous request to compare with
        h_end = head_end(pieces)
        req = Request(
            pieces,
            [p.digest for p in pieces[h_end:]],
            now,
            h_end,
            stable_end(pieces),
            0,
            rec.body.get("tools"),
            parameters(rec.body) | {"model": rec.model},
            _breakpoint_ends(pieces, rules),
        )
        req.template_end = template_end(pieces, h_end, req.stable_end)
        if rec.template is not None:  # named in the log, as the SDK's prefixlint_template names it
            template = f"x:{rec.template}"
        else:
            template = self._templates.of(rec.api, pieces, h_end, req.tools)
        session, how = self._sessions.match(req, template, rec.session)
        prev, first = (
            (session.last, False) if session is not None else self._template_last.get(template, (None, True))
        )

        # the counterfactual fixed request
        add_bp = (
            rules.granularity == "breakpoint"
            and not req.breakpoints
            and rec.body.get("cache_control") is None
        )
        fix = fixed_request(rec.body, rec.api, pieces, self._heads.get(template), add_bp, self._spans)
        fbody = fix.body
        if fix.context is not None:  # the moved values: their count is known, not tokenized again
            cache.seed(Section.MESSAGES.value, "user", fix.context, fix.context_tokens)
        fpieces = pieces if fbody is rec.body else pieces_from_request(fbody, rec.api, cache, keep_text=False)
        fmachine, _ = self._machine(d.fixed, fpieces, now, rec.cache_key)
        fpred = fmachine.predict(fpieces, now)
        fflight = fmachine.sent(fpieces, now, ttl_f)
        for m in d.curve:
            cap_pred = m.observe(pieces, now)
            curve = s.capacity.setdefault((rec.provider, rec.model or ""), {})
            curve.setdefault(m.capacity_tokens or 0, [0, 0])
            curve[m.capacity_tokens or 0][0] += prompt
            curve[m.capacity_tokens or 0][1] += cap_pred.cached

        # divergence, drift and the cause of what was lost
        life = float(ttl or rules.ttl_seconds)
        drift, lost, cause, kind, site = self._diagnose(
            req,
            prev,
            first,
            how,
            pred,
            fpred,
            rules,
            rate,
            spec.routing_rpm,
            prompt,
            fbody is not rec.body,
            life,
        )

        # bookkeeping for the next requests
        self._sessions.add(req, template, session, how, rec.session)
        s.sessions[how] += 1
        self._template_last[template] = (req, session is None)
        self._template_last.move_to_end(template)
        if len(self._template_last) > 2000:
            self._template_last.popitem(last=False)
        self._heads[template] = fix.heads
        self._heads.move_to_end(template)
        if len(self._heads) > 2000:
            self._heads.popitem(last=False)

        judged = self._account(
            rec, d, rules, tok, pieces, pred, fpred, drift, lost, cause, kind, site, rate, template
        )
        self._await(machine, flight, now, commit, ttl_f, judged)
        self._await(fmachine, fflight, now, commit, ttl_f, None)

    def _diagnose(
        self,
        req: Request,
        prev: Request | None,
        first: bool,
        how: str,
        pred: Prediction,
        fpred: Prediction,
        rules: ModelCacheRules,
        rate: int,
        rpm: int | None,
        prompt: int,
        fixed_changed: bool,
        life: float,
    ) -> tuple[SharedPrefix | None, int, str | None, str | None, tuple[str, str, int] | None]:
        """(drift, tokens lost, cause, kind of text, (section, role, position) of the divergence)."""
        pieces = req.pieces
        drift = None
        kind = None
        site = None
        would = 0
        diverged = False
        if prev is not None:
            # drift as the SDK defines it: the stable parts (a conversation: before the last user turn;
            # a template: its head, to the last marked breakpoint) disagree over their common length
            if how != "new":  # the same conversation: everything the previous request wrote
                reuse_idx = len(prev.pieces)
                drift_idx = min(prev.stable_end, req.stable_end)
            else:  # another request of the template: its stable part
                reuse_idx = prev.stable_end if first else prev.template_end
                drift_idx = min(prev.template_end, req.template_end)
            k = _shared_pieces(prev.pieces, pieces)
            reuse_end = prev.pieces[reuse_idx - 1].end if reuse_idx else 0
            if rules.granularity == "breakpoint":
                ends = [e for e in prev.breakpoints if e <= reuse_end]
                would = ends[-1] if ends and ends[-1] >= rules.min_cacheable_tokens else 0
            else:
                would = rules.cacheable(min(reuse_end, prompt), prompt)
            if k < reuse_idx:
                diverged = True
                sp = first_divergence(prev.pieces[:reuse_idx], pieces)
                if k < len(pieces):
                    kind = classify(prev.pieces[k], pieces[k], prev.tools, req.tools)
                    site = (pieces[k].section.value, pieces[k].role or "", sp.tokens)
                else:
                    kind = "request-ended"
                    site = ("messages", "", sp.tokens)
                if sp.path is None:
                    sp = SharedPrefix(sp.tokens, sp.total_a, sp.total_b, "(request ended)")
                if k < drift_idx:
                    drift = sp
                self._divergence = sp
        lost = max(0, max(would, fpred.cached) - pred.cached)
        cause = None
        if lost:
            cause = self._cause(req, prev, how, pred, rules, rate, rpm, diverged, kind, fixed_changed, life)
        return drift, lost, cause, kind, site

    def _cause(
        self,
        req: Request,
        prev: Request | None,
        how: str,
        pred: Prediction,
        rules: ModelCacheRules,
        rate: int,
        rpm: int | None,
        diverged: bool,
        kind: str | None,
        fixed_changed: bool,
        life: float,
    ) -> str:
        if prev is not None:
            if changed_parameters(prev.params, req.params):
                return "parameter-changed"
            if pred.expired or (life > 0 and req.time - prev.time > life):
                return "ttl-expired"
            if diverged:
                if how == "sliding-window":
                    return "history-window-slid"
                if how == "edited-history":
                    return "history-edited"
                if kind in ("reordered-tools", "tools-changed"):
                    return "tools-changed"
                return "prefix-changed"
            if rules.granularity == "breakpoint":
                if not req.breakpoints:
                    return "no-breakpoint"
                if prev.breakpoints and req.breakpoints[-1] < prev.breakpoints[-1]:
                    return "breakpoint-moved-earlier"
                return "lookback-exceeded"
        if rules.granularity == "breakpoint" and not req.breakpoints:
            return "no-breakpoint"
        if pred.evicted:
            return "evicted"
        if rpm and rate > rpm:
            return "routing-overflow"
        if fixed_changed:
            return "prefix-changed"
        return "unexplained"

    # -- sums -----------------------------------------------------------------------------------
    def _account(
        self,
        rec: LogRecord,
        d: _Domain,
        rules: ModelCacheRules,
        tok: Tokenizer,
        pieces: list[Piece],
        pred: Prediction,
        fpred: Prediction,
        drift: SharedPrefix | None,
        lost: int,
        cause: str | None,
        kind: str | None,
        site: tuple[str, str, int] | None,
        rate: int,
        template: str,
    ) -> _Judged | None:
        s = self.summary
        spec = get_provider(rec.provider)
        model = rec.model or ""
        prompt = pieces[-1].end
        price = self.options.prices.price(rec.provider, rec.model)
        long_ttl = any(p.ttl == "1h" for p in pieces)
        m = s.model(rec.provider, model)
        # an image's tokens are the provider rule's estimate (prefixlint/model/images.py)
        m.tokens_exact = m.tokens_exact and tok.exact and not any(p.estimated for p in pieces)
        m.requests += 1
        m.prompt += prompt
        m.simulated += pred.cached
        m.fixed += fpred.cached
        m.written += pred.written
        m.fixed_written += fpred.written
        m.cost_uncached += _cost(price, rules, prompt, 0, 0, False)
        m.cost_now += _cost(price, rules, prompt, pred.cached, pred.written, long_ttl)
        m.cost_fixed += _cost(price, rules, prompt, fpred.cached, fpred.written, long_ttl)
        usage = normalize_usage(rec.usage, spec, rec.api) if rec.usage is not None else None
        if rec.usage is not None and usage is None:
            s.notes["usage-unreadable"] += 1
        bucket = int((rec.time or self._last_time or 0.0) // TIMELINE_STEP)
        row = s.timeline.setdefault(bucket, [0.0] * 7)
        row[0] += prompt
        row[1] += pred.cached
        row[2] += fpred.cached
        tenant = s.tenants.setdefault((rec.tenant or rec.organization or "-", rec.provider, model), [0.0] * 6)
        tenant[0] += 1
        tenant[1] += prompt
        tenant[2] += pred.cached
        tenant[3] += fpred.cached
        reported = usage.cached if usage is not None else None
        if usage is not None and reported is not None:
            m.reported_requests += 1
            m.reported_prompt += usage.prompt_tokens
            m.reported_cached += reported
            m.simulated_on_reported += pred.cached
            m.prompt_on_reported += prompt
            write = usage.cache_write
            m.cost_reported += _cost(
                price, rules, usage.prompt_tokens, reported, write, usage.cache_write_1h > 0
            )
            row[3] += usage.prompt_tokens
            row[4] += reported
            row[5] += prompt
            row[6] += pred.cached
            tenant[4] += usage.prompt_tokens
            tenant[5] += reported
            if pred.cached > 0 and reported == 0 and pred.cached >= rules.min_cacheable_tokens:
                s.cause(
                    "intact-prefix-no-read",
                    pred.cached,
                    price.saved_usd(pred.cached),
                    self._example(rec, None),
                )
        tmpl = s.templates.setdefault(template, [0.0] * 5)
        tmpl[0] += 1
        tmpl[1] += prompt
        tmpl[2] += pred.cached
        tmpl[3] += fpred.cached
        tmpl[4] += lost
        usd = price.saved_usd(lost)
        if cause is not None:
            s.cause(cause, lost, usd, self._example(rec, drift if kind else None, kind))
        if site is not None:
            section, role, position = site
            key = (template, section, role, kind or "text")
            s.site(key, lost, position, self._example(rec, self._divergence, kind))
        self._flags(rec, pieces, rules, prompt, pred)
        self._track_writes(d, pieces, pred, rules, rec, price)
        if self.trace is not None:
            self._emit_trace(rec, pieces, pred)
        if not self.options.verdicts:
            return None
        return _Judged(rec.source, rec.line, rules, tok.exact, pred, drift, usage, rate, spec.routing_rpm)

    def _flags(
        self, rec: LogRecord, pieces: list[Piece], rules: ModelCacheRules, prompt: int, pred: Prediction
    ) -> None:
        s = self.summary
        if pred.below_minimum:
            s.flags["below-minimum"] += 1
        for p in pieces:
            if p.section.value == "messages":
                break
            hit = self._volatile_digests.get(p.digest)
            if hit is None:
                if len(self._volatile_digests) > 50_000:
                    self._volatile_digests.clear()
                hit = self._volatile_digests[p.digest] = bool(self._spans(p))
            if hit:
                s.flags["volatile-in-prefix"] += 1
                break
        if rules.max_breakpoints:
            marks = sum(1 for p in pieces if p.ttl) + (
                1 if isinstance(rec.body.get("cache_control"), dict) else 0
            )
            if marks > rules.max_breakpoints:
                s.flags["too-many-breakpoints"] += 1
        long_enough = rules.granularity == "breakpoint" and prompt >= rules.min_cacheable_tokens
        if long_enough and not any(p.ttl for p in pieces) and rec.body.get("cache_control") is None:
            s.flags["no-breakpoint"] += 1

    def _track_writes(
        self,
        d: _Domain,
        pieces: list[Piece],
        pred: Prediction,
        rules: ModelCacheRules,
        rec: LogRecord,
        price: Price,
    ) -> None:
        """Writes that no later request reads (breakpoint providers, whose writes cost extra)."""
        if rules.granularity not in ("breakpoint", "exact"):
            return
        now = self._last_time or 0.0
        while d.writes:  # expired writes first: what nobody read by then is never read
            chain, w = next(iter(d.writes.items()))
            if w[1] >= now and len(d.writes) < 10_000:
                break
            del d.writes[chain]
            self._unread(w, rules, price)
        if pred.cached:
            for p in pieces:
                if p.end == pred.cached:
                    w = d.writes.get(p.chain)
                    if w is not None:
                        w[2] = 1.0
                    break
        if pred.written:
            last = next((p for p in reversed(pieces) if p.ttl or rules.granularity == "exact"), pieces[-1])
            ttl = 3600.0 if last.ttl == "1h" else float(rules.ttl_seconds or 300)
            w = d.writes.pop(last.chain, None)
            if w is None:
                w = [float(pred.written), now + ttl, 0.0]
            w[1] = now + ttl
            d.writes[last.chain] = w  # kept in order of expiry

    def _unread(self, w: list[float], rules: ModelCacheRules, price: Price) -> None:
        if w[2]:
            return
        tokens = int(w[0])
        premium = (
            price.cache_write
            if price.cache_write is not None
            else price.input * (rules.cache_write_multiplier or 1.0)
        ) - price.input
        self.summary.cause("write-never-read", tokens, tokens * max(0.0, premium) / 1e6, None)

    def _verdict(self, j: _Judged, pred: Prediction) -> None:
        """Judge a request whose response began, with the SDK's verdict logic and interval."""
        rules = j.rules
        gran = rules.increment if rules.granularity in ("increment", "block") else SKETCH_BLOCK
        drift = None
        if j.drift is not None:
            drift = Divergence(j.drift.tokens, j.drift.path or "(request ended)")
        usage = j.usage
        verdict, causes, exp, up = judge(
            predicted=pred.cached,
            upper=pred.upper,
            local_prompt=pred.prompt,
            reported_cached=usage.cached if usage is not None else None,
            reported_prompt=usage.prompt_tokens if usage is not None else None,
            tolerance_tokens=gran,
            expired=pred.expired,
            below_minimum=pred.below_minimum,
            shared=pred.shared,
            drift=drift,
            route_rpm=j.rate,
            route_limit=j.rpm,
            tokens_exact=j.exact,
            minimum=rules.min_cacheable_tokens,
            regrid=rules.cacheable if rules.granularity in ("increment", "block") else None,
            shared_upper=pred.shared_upper,
        )
        example = {
            "source": j.source,
            "line": j.line,
            "predicted": exp,
            "upper": up,
            "reported": usage.cached if usage is not None else None,
            "causes": list(causes),
        }
        self.summary.verdict(verdict.value, example)
        if self.verdict_log is not None:
            self.verdict_log.append((j.source, j.line, verdict.value))

    def _example(self, rec: LogRecord, div: SharedPrefix | None, kind: str | None = None) -> dict[str, Any]:
        ex: dict[str, Any] = {"source": rec.source, "line": rec.line}
        if div is not None:
            before, after = div.excerpt_a, div.excerpt_b
            if self.options.redact:
                before, after = redact(before), redact(after)
            ex.update(path=div.path, position=div.tokens, kind=kind, before=before, after=after)
        return ex

    def _spans(self, piece: Piece) -> list[tuple[int, int]]:
        """Volatile spans of a piece's text, once per distinct text."""
        spans = self._span_cache.get(piece.digest)
        if spans is None:
            if len(self._span_cache) > 20_000:
                self._span_cache.clear()
            spans = self._span_cache[piece.digest] = volatile_spans(piece.text or "")
        return spans

    def _emit_trace(self, rec: LogRecord, pieces: list[Piece], pred: Prediction) -> None:
        self.trace(trace_entry(rec, pieces, pred, self._last_time or 0.0, self.options))  # type: ignore[misc]

    def _purge(self, now: float) -> None:
        for d in self._domains.values():
            for src in (d.original, d.fixed):
                for interval in src.machines() if isinstance(src, RoutedCache) else (src,):
                    interval.lower.purge(now)
                    interval.upper.purge(now)
                if isinstance(src, RoutedCache):  # routes whose machines hold nothing any more
                    src.drop(CacheInterval.empty)
        lo, hi = _SESSION_IDLE
        self._sessions.close_idle(now, min(hi, max(lo, 2 * self._longest_ttl)))

    def finish(self) -> AuditSummary:
        """Let what is in flight begin, count writes never read, and return the partition's summary."""
        self._begin_until(float("inf"))
        for d in self._domains.values():
            price = self.options.prices.price(d.rules.provider, d.rules.model)
            for w in d.writes.values():
                self._unread(w, d.rules, price)
            d.writes.clear()
        return self.summary


def replay_partition(
    records: Iterable[LogRecord], options: ReplayOptions | None = None, trace: TraceSink | None = None
) -> AuditSummary:
    """Replay one partition's records (in time order) and return its summary: a pure function."""
    replay = PartitionReplay(options, trace)
    for rec in records:
        replay.feed(rec)
    return replay.finish()
