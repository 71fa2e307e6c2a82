"""Accounting: predict a request when it leaves, record it when its response begins, report it.

Send-side work (cutting the request into pieces, tokenizing new text, the prediction interval,
drift, the routing rate) runs on the process-wide worker while the request is in flight, in the
order requests were made; the worker is woken once the request is on the wire (:mod:`.onwire`), so
that it runs while the calling thread waits for the response, not while it builds the request. A
request whose head no earlier request had is not tokenized: it can only miss, and it is counted when
a later request shares its head (:mod:`.sightings`). With ``background=False`` (the default) the
report is built on the calling thread once the response is there, so it is ready when the call
returns; with ``background=True`` the worker builds it too. The "response began" record and a
background report wait for the worker's next wake-up (the next request on the wire, at the latest
:data:`~.worker.LAZY_S`), as the queue keeps their order with later requests' jobs.
Nothing here raises into the caller.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from prefixlint.analysis.payloads.pieces import SKETCH_BLOCK, head_key, pieces_from_request, uncounted_pieces
from prefixlint.model.verdict import Verdict, judge
from prefixlint.sdk import otel, worker
from prefixlint.sdk.breakpoints import has_cache_control
from prefixlint.sdk.call import Call
from prefixlint.sdk.drift import stable_end, template_end
from prefixlint.sdk.options import SdkOptions
from prefixlint.sdk.report import CacheReport, make_report
from prefixlint.sdk.sightings import Sighting, unseen_prediction
from prefixlint.sdk.stats import Stats
from prefixlint.sdk.tracker import PrefixTracker
from prefixlint.sdk.usage import normalize_usage
from prefixlint.sdk.worker import WORKER

log = logging.getLogger("prefixlint.sdk")


class Accountant:
    """The accounting of one wrapped client (its options and stats; the tracker is the process's)."""

    def __init__(self, opts: SdkOptions, spec: Any, tracker: PrefixTracker, stats: Stats, clock: Any) -> None:
        self.opts = opts
        self.spec = spec
        self.tracker = tracker
        self.stats = stats
        self.clock = clock

    # -- when the request leaves ----------------------------------------------------------------
    def sent(self, call: Call, on_wire: bool = False) -> None:
        """Queue the send-side job. With ``on_wire`` it waits for the worker's next wake-up, which
        comes when the request is on the wire (:mod:`.onwire`); otherwise the worker runs it now."""
        call.sent_job = WORKER.submit(self._sent, call, lazy=on_wire)

    def _sent(self, call: Call) -> None:
        """Pieces, prediction interval, routing rate and drift as of the moment the request left."""
        opts = self.opts
        seen = None
        if call.pieces is None:
            seen = self._first_sighting(call) if opts.verify else None
            if seen is None:
                keep = opts.keep_excerpts
                call.pieces = pieces_from_request(call.body, call.api, call.cache, keep_text=keep)
            if call.api == "messages" and call.pieces:  # cut only now: the caller's own breakpoints
                call.caller_marks = has_cache_control(call.body, call.pieces)
                call.breakpoints = sum(1 for p in call.pieces if p.ttl)
        if call.pieces and any(p.estimated for p in call.pieces):  # an image: counted by a rule
            call.tokens_exact = False
        if not opts.verify or not call.pieces:
            return
        pieces = call.pieces
        if seen is not None:  # nothing this process sent shares its head: exact without counting
            call.prediction = unseen_prediction(call.rules)
            call.route_rpm = 1 if self.spec.routing_rpm else 0  # nothing else shares its route
        else:
            call.prediction = self.tracker.predict(call.domain, pieces, call.now)
            if self.spec.routing_rpm:
                call.route_rpm = self.tracker.route_rate(call.domain, pieces, call.mono)
        end = stable_end(pieces)
        if call.drift_kind != "conversation":
            end = template_end(pieces, end, call.caller_marks)
        excerpts = opts.excerpt_chars if opts.keep_excerpts else 0
        # uncounted pieces are safe here: their first piece shares no sketch block with any stable part
        # seen before, so a divergence from one of them is at token 0
        call.drift = self.tracker.drift.check(call.drift_key, call.drift_kind, pieces[:end], pieces, excerpts)
        if seen is not None:
            self.tracker.sighted(seen)
        else:
            call.flight = self.tracker.sent(call.domain, pieces, call.now, call.ttl)

    def _first_sighting(self, call: Call) -> Sighting | None:
        """``call`` as an uncounted sighting (its pieces set) when its head is new to this process."""
        key = head_key(call.body, call.api)
        if key is None or not self.tracker.new_head(key):
            return None
        pieces, texts = uncounted_pieces(call.body, call.api, call.cache, keep_text=self.opts.keep_excerpts)
        if not pieces:
            return None
        call.pieces = pieces
        call.sighting = Sighting(
            call.domain,
            key,
            pieces,
            texts,
            call.cache,
            call.now,
            call.mono,
            call.ttl,
            self._lifetime(call),
            sum(map(len, texts)),
        )
        return call.sighting

    def _lifetime(self, call: Call) -> float:
        """The longest a cache entry of ``call`` can live after its response began (inf: no expiry)."""
        ttls = [call.rules.ttl_seconds, call.ttl or 0, *self.spec.extended_ttls.values()]
        return math.inf if call.rules.ttl_seconds <= 0 else float(max(ttls))

    def wait(self, call: Call) -> bool:
        """Block until the send-side accounting of ``call`` ran; False if it failed or timed out."""
        job = call.sent_job
        if job is None:
            return False
        WORKER.run_until(job)  # the worker has not got to it yet: run the queue up to it here
        try:
            job.result(worker.WAIT_S)
        except Exception:  # logged by the worker, or a timeout
            return False
        return True

    # -- when the response is there -------------------------------------------------------------
    def done(self, call: Call, usage: Any) -> None:
        """The response began (or ended, for streams): record it, then report. Never raises."""
        try:
            if not call.begun:
                call.begun = True
                if self.opts.verify:  # runs before any later job, whenever the worker wakes
                    WORKER.submit(self._begun, call, self.clock(), lazy=True)
            if self.opts.background:
                WORKER.submit(self._finish, call, usage, lazy=True)
            else:
                self._finish(call, usage, wait=True)
        except Exception:
            log.exception("prefixlint: accounting failed")

    def _begun(self, call: Call, now: float) -> None:
        if call.flight is not None:
            self.tracker.begun(call.domain, call.flight, now, call.ttl)
        elif call.sighting is not None:
            self.tracker.sighting_begun(call.sighting, now)

    def failed(self, call: Call) -> None:
        """The call raised: the request may still have written the cache; its flight ends."""
        try:
            if not call.begun:
                call.begun = True
                WORKER.submit(self._failed, call)
        except Exception:
            log.exception("prefixlint: accounting failed")

    def _failed(self, call: Call) -> None:
        if call.flight is not None:
            self.tracker.failed(call.domain, call.flight)
        elif call.sighting is not None:
            self.tracker.sighting_failed(call.sighting)

    def _finish(self, call: Call, usage: Any, wait: bool = False) -> None:
        try:
            if wait:
                self.wait(call)
            report = self.report(call, usage)
        except Exception:
            log.exception("prefixlint: could not build the cache report")
            return
        self.emit(report)

    def report(self, call: Call, usage: Any) -> CacheReport:
        u = normalize_usage(usage, self.spec, call.api)
        pred = call.prediction
        flight, counted = call.flight, True
        if call.sighting is not None:  # counted meanwhile if a later request shared its head
            flight, counted = self.tracker.sighting_state(call.sighting)
        if flight is not None:
            pred = self.tracker.widen(call.domain, flight, pred)
        local = call.pieces[-1].end if call.pieces and counted else 0
        rules = call.rules
        grid = rules.granularity in ("increment", "block")
        verdict, causes, low, up = judge(
            predicted=pred.cached,
            upper=pred.upper,
            local_prompt=pred.prompt or local,
            reported_cached=u.cached if u else None,
            reported_prompt=u.prompt_tokens if u else None,
            tolerance_tokens=rules.increment if grid else SKETCH_BLOCK,
            expired=pred.expired,
            below_minimum=pred.below_minimum,
            shared=pred.shared,
            drift=call.drift,
            route_rpm=call.route_rpm,
            route_limit=self.spec.routing_rpm,
            tokens_exact=call.tokens_exact,
            minimum=rules.min_cacheable_tokens,
            regrid=rules.cacheable if grid else None,
            shared_upper=pred.shared_upper,
        )
        if not self.opts.verify and u is not None:
            verdict, causes = Verdict.UNVERIFIED, ("verification is off (verify=False)",)
        cached = (u.cached or 0) if u else 0
        return make_report(
            {
                "provider": call.provider,
                "model": call.model,
                "api": call.api,
                "verdict": verdict,
                "predicted_cached": low,
                "reported_cached": u.cached if u else None,
                "prompt_tokens": u.prompt_tokens if u else None,
                "local_prompt_tokens": local,
                "upper_bound": up,
                "cache_write": u.cache_write if u else 0,
                "cache_write_5m": u.cache_write_5m if u else 0,
                "cache_write_1h": u.cache_write_1h if u else 0,
                "causes": causes,
                "divergence": call.drift,
                "tokens_saved": cached,
                "usd_saved": _usd_saved(rules, cached, u),
                "tenant_hash": call.tenant_hash,
                "template": call.template,
                "prefix_hash": call.prefix_hash,
                "cache_key": call.key,
                "salted": call.salted,
                "breakpoints": call.breakpoints,
                "stream": call.stream,
                "dry_run": call.dry_run,
                "changes": call.changes,
                "tokens_exact": call.tokens_exact,
                "counted": counted,
                "overhead_ms": call.overhead_ms,
            }
        )

    def emit(self, report: CacheReport) -> None:
        """Count ``report``, fire alarms, call ``on_report``, log it, add it to the active span."""
        opts = self.opts
        try:
            alarms = self.stats.add(report)
        except Exception:
            log.exception("prefixlint: stats failed")
            alarms = []
        for kind, key, rate in alarms:
            try:
                if opts.on_low_hit_rate is not None:
                    opts.on_low_hit_rate(kind, key, rate)
                else:
                    log.warning(
                        "prefixlint: rolling cache hit rate of %s %s fell to %.0f%%", kind, key, rate * 100
                    )
            except Exception:
                log.exception("prefixlint: on_low_hit_rate callback failed")
        if opts.on_report is not None:
            try:
                opts.on_report(report)
            except Exception:
                log.exception("prefixlint: on_report callback failed")
        if opts.log_level is not None and log.isEnabledFor(opts.log_level):
            log.log(opts.log_level, report.summary())
        if opts.otel:
            try:
                otel.emit(report)
            except Exception:
                log.exception("prefixlint: opentelemetry export failed")


def _usd_saved(rules: Any, cached: int, u: Any) -> float:
    """Dollars saved by ``cached`` tokens, net of the write premiums the provider reported."""
    price = rules.price
    usd = price.saved_usd(cached)
    if u and u.cache_write:
        w1 = u.cache_write_1h
        w5 = u.cache_write - w1
        if price.cache_write is not None:
            usd -= w5 * (price.cache_write - price.input) / 1e6
        if price.cache_write_1h is not None:
            usd -= w1 * (price.cache_write_1h - price.input) / 1e6
        elif rules.cache_write_multiplier:
            usd -= u.cache_write * (rules.cache_write_multiplier - 1) * price.input / 1e6
    return float(usd)


def perf_ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000
