"""``wrap(client) -> client``: patch one openai/anthropic client instance, LangSmith-style.

The same object comes back, so static types and every method the wrapper does not know keep
working. Only instance attributes are set (``client.chat.completions.create = ...``); ``unwrap``
deletes them again. ``with_raw_response`` / ``with_streaming_response`` helpers are rebuilt from the
patched methods, so raw calls go through the wrapper too.
"""

from __future__ import annotations

import atexit
import hashlib
import inspect
import logging
import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, TypeVar

from prefixlint.analysis.payloads.pieces import (
    SKETCH_BLOCK,
    Piece,
    PieceCache,
    head_pieces,
    pieces_from_request,
)
from prefixlint.model.layout import Section
from prefixlint.model.prefix_cache import Prediction
from prefixlint.model.providers import ModelCacheRules, ProviderSpec, get_provider
from prefixlint.model.tokens import tokenizer_for
from prefixlint.sdk import breakpoints as bp
from prefixlint.sdk import otel
from prefixlint.sdk.canonical import canonicalize
from prefixlint.sdk.options import RequestInfo, SdkOptions, decode_secret, options_from
from prefixlint.sdk.report import CacheReport, Divergence, judge, make_report
from prefixlint.sdk.stats import Stats, StatsSnapshot
from prefixlint.sdk.streams import StreamObserver, observe_any, observe_manager
from prefixlint.sdk.tenancy import (
    TenantRequiredError,
    derive_cache_salt,
    derive_prompt_cache_key,
    resolve_tenant,
    tenant_hash,
)
from prefixlint.sdk.tracker import Domain, PrefixTracker
from prefixlint.sdk.usage import normalize_usage
from prefixlint.sdk.volatile import has_volatile, move_volatile

log = logging.getLogger("prefixlint.sdk")
C = TypeVar("C")

_STATE_ATTR = "_prefixlint_state"
_TRANSPORT = ("extra_headers", "extra_query", "extra_body", "timeout")
_CALL_KW = ("prefixlint_tenant", "prefixlint_volatile", "prefixlint_template", "prefixlint_conversation")
_RAW_HEADER = "X-Stainless-Raw-Response"
_HELPERS = ("with_raw_response", "with_streaming_response")
# (resource path, method, api)
_OPENAI_TARGETS = (
    ("chat.completions", "create", "chat"),
    ("chat.completions", "parse", "chat"),  # structured output: the same request, parsed reply
    ("responses", "create", "responses"),
)
_ANTHROPIC_TARGETS = (("messages", "create", "messages"), ("messages", "stream", "messages.stream"))
_SKIP_DIRS: tuple[str, ...] = ()
_TTL = attrgetter("ttl")
_NO_PREDICTION = Prediction(0, 0, 0, 0)


def _skip_dirs() -> tuple[str, ...]:
    global _SKIP_DIRS
    if not _SKIP_DIRS:
        dirs = [__file__.rsplit("/", 1)[0]]
        for mod in ("openai", "anthropic"):
            m = sys.modules.get(mod)
            if m is not None and getattr(m, "__file__", None):
                dirs.append(m.__file__.rsplit("/", 1)[0])  # type: ignore[union-attr]
        _SKIP_DIRS = tuple(dirs)
    return _SKIP_DIRS


_OWN_FILE: dict[str, bool] = {}  # file name -> inside this package, the SDKs or functools


def _call_site() -> str:
    f = sys._getframe(2)
    for _ in range(12):
        if f is None:
            break
        name = f.f_code.co_filename
        own = _OWN_FILE.get(name)
        if own is None:
            if len(_OWN_FILE) > 10_000:
                _OWN_FILE.clear()
            own = _OWN_FILE[name] = name.startswith(_skip_dirs()) or "functools" in name
        if not own:
            return f"{name}:{f.f_lineno}"
        f = f.f_back
    return "unknown"


_OMITTED = ("NotGiven", "Omit")  # the SDKs' sentinels for "not given"


@dataclass(slots=True)
class _Call:
    api: str
    provider: str
    model: str | None
    rules: ModelCacheRules
    pieces: list[Piece] | None
    domain: Domain
    prediction: Prediction
    drift: Divergence | None
    tenant_hash: str | None
    template: str
    prefix_hash: str
    key: str | None
    salted: bool
    breakpoints: int
    changes: tuple[str, ...]
    dry_run: bool
    stream: bool
    route_rpm: int
    ttl: float | None
    tokens_exact: bool
    overhead_ms: float
    helper: bool
    body: dict[str, Any]
    cache: PieceCache
    conversation: str | None
    now: float
    mono: float


class _Worker:
    """One background thread that runs accounting jobs in order (``background=True``)."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[Callable[..., None], tuple[Any, ...]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        _WORKERS.add(self)

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._loop, name="prefixlint-sdk", daemon=True)
                    self._thread.start()
        self.queue.put((fn, args))

    def _loop(self) -> None:
        while True:
            fn, args = self.queue.get()
            try:
                fn(*args)
            except Exception:
                log.exception("prefixlint: background accounting failed")
            finally:
                self.queue.task_done()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued job ran; False on timeout."""
        deadline = time.monotonic() + timeout
        while self.queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True


_WORKERS: weakref.WeakSet[_Worker] = weakref.WeakSet()


@atexit.register
def _flush_all() -> None:
    for worker in list(_WORKERS):
        worker.flush(2.0)


class _State:
    """Per-client state: options, patches, caches, tracker and stats."""

    def __init__(self, opts: SdkOptions, provider: str, org: str) -> None:
        self.opts = opts
        self.provider = provider
        self.spec: ProviderSpec = get_provider(provider)
        self.org = org
        self.secret = decode_secret(opts.salt_secret) if opts.salt_secret else None
        self.tracker = PrefixTracker(self.spec)
        self.stats = Stats(opts.hit_rate_threshold, opts.hit_rate_window, opts.on_low_hit_rate)
        self.patches: list[tuple[Any, str]] = []
        self._caches: dict[str | None, tuple[Any, PieceCache]] = {}
        self.clock: Callable[[], float] = opts.clock or time.time
        self.worker: _Worker | None = _Worker() if opts.background else None
        self._tenant_hashes: dict[str, str] = {}
        self._keys: dict[tuple[str, str], str] = {}  # (tenant, prefix hash) -> prompt_cache_key
        self._salts: dict[str, str] = {}  # tenant -> cache_salt
        self._per_model: dict[Any, tuple[ModelCacheRules, Any, PieceCache]] = {}  # rules, tokenizer, cache
        # per-request decisions that depend only on the options and the provider
        knobs = self.spec.request_knobs
        self._canonical = bool(
            opts.sort_keys
            or opts.sort_tools
            or opts.normalize_newlines
            or opts.strip_trailing_whitespace
            or opts.unicode_nfc
        )
        self._key_knob = "prompt_cache_key" in knobs
        self._salt = bool("cache_salt" in knobs and self.secret and opts.send_cache_salt is not False)
        self._cc_knob = "cache_control" in knobs

    def cache_for(self, model: str | None) -> tuple[Any, PieceCache]:
        hit = self._caches.get(model)
        if hit is None:
            tok = tokenizer_for(self.provider, model)
            same = (c for t, c in self._caches.values() if t.name == tok.name and t.source == tok.source)
            shared = next(same, None)
            hit = (tok, shared or PieceCache(tok))
            self._caches[model] = hit
        return hit

    # -- before the request ---------------------------------------------------------------------
    def prepare(self, api: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], _Call | None]:
        t0 = time.perf_counter()
        call_kw = {}
        for k in _CALL_KW:
            if k in kwargs:
                call_kw[k] = kwargs.pop(k)
        who = resolve_tenant(call_kw.get("prefixlint_tenant"), self.opts.tenant)
        if self.opts.require_tenant and not who:
            raise TenantRequiredError("require_tenant=True and no tenant is set; the request was not sent")
        try:
            return self._prepare(api, kwargs, call_kw, who, t0)
        except Exception:
            log.exception("prefixlint: could not prepare the request; sending it unchanged")
            return kwargs, None

    def _prepare(
        self, api: str, kwargs: dict[str, Any], call_kw: dict[str, Any], who: str | None, t0: float
    ) -> tuple[dict[str, Any], _Call | None]:
        opts = self.opts
        body = {}
        for k, v in kwargs.items():  # a loop, not a comprehension: one frame less on every request
            if k not in _TRANSPORT and type(v).__name__ not in _OMITTED:
                body[k] = v
        base_api = "messages" if api == "messages.stream" else api
        model = body.get("model")
        per_model = self._per_model.get(model)
        if per_model is None:
            per_model = self._per_model[model] = (self.spec.rules_for(model), *self.cache_for(model))
        rules, tok, cache = per_model
        changes: list[str] = []
        new = body
        if self._canonical:
            new, ch = canonicalize(new, base_api, opts)
            changes += ch
        per_call = call_kw.get("prefixlint_volatile")
        if per_call or has_volatile(new, base_api):  # marked values present: move them
            new, ch = move_volatile(new, base_api, per_call, opts.volatile_placement, opts.volatile_header)
            changes += ch
        pieces: list[Piece] | None = None
        if self.worker is None or (base_api == "messages" and opts.breakpoints):
            pieces = pieces_from_request(new, base_api, cache, keep_text=opts.keep_excerpts)
            head = []
            for p in pieces:
                if p.section is Section.MESSAGES or not p.stable:
                    break
                head.append(p)
        else:
            head = head_pieces(new, base_api, cache)
        prefix_hash = head[-1].chain.hex()[:16] if head else ""
        t_hash = self._tenant_hashes.get(who) if who else None
        if who and t_hash is None:
            if len(self._tenant_hashes) > 10_000:
                self._tenant_hashes.clear()
            t_hash = self._tenant_hashes[who] = tenant_hash(who, self.secret)
        template = call_kw.get("prefixlint_template") or _call_site()
        conversation = call_kw.get("prefixlint_conversation")
        key: str | None = body.get("prompt_cache_key")
        if base_api != "messages" and self._key_knob and key is None:
            if opts.cache_key_fn is not None:
                info = RequestInfo(self.provider, model, base_api, who, template, conversation, prefix_hash)
                try:
                    key = opts.cache_key_fn(info)
                except Exception:
                    log.exception("prefixlint: cache_key_fn failed; no prompt_cache_key set")
            elif who and opts.prompt_cache_key:
                key = self._keys.get((who, prefix_hash))
                if key is None:
                    if len(self._keys) > 10_000:
                        self._keys.clear()
                    key = derive_prompt_cache_key(who, prefix_hash, self.secret)
                    self._keys[(who, prefix_hash)] = key
            if key:
                new = {**new, "prompt_cache_key": key}
                changes.append("prompt_cache_key: set")
        extra_body = kwargs.get("extra_body")
        salted = False
        if self._salt and who:
            if not (isinstance(extra_body, dict) and "cache_salt" in extra_body):
                salt = self._salts.get(who)
                if salt is None:
                    if len(self._salts) > 10_000:
                        self._salts.clear()
                    salt = self._salts[who] = derive_cache_salt(who, self.secret)  # type: ignore[arg-type]
                extra_body = {**(extra_body or {}), "cache_salt": salt}
                changes.append("extra_body.cache_salt: set")
            salted = True
        nbps = len(pieces) - list(map(_TTL, pieces)).count(None) if pieces else 0
        if (
            base_api == "messages"
            and opts.breakpoints
            and self._cc_knob
            and pieces is not None
            and not bp.has_cache_control(new, pieces)
        ):
            marks = bp.choose(pieces, rules, opts.static_ttl)
            if marks:
                new = bp.apply(new, pieces, marks)
                nbps = len(marks)
                changes.append(f"cache_control: {len(marks)} breakpoint(s) added")
        is_stream = api == "messages.stream" or bool(new.get("stream"))
        if base_api == "chat" and is_stream and opts.include_usage and "stream_options" not in new:
            new = {**new, "stream_options": {"include_usage": True}}
            changes.append("stream_options.include_usage: set")
        if opts.dry_run:
            out = kwargs
            sent = body
            if changes:
                pieces = None
        else:
            out = {}
            for k, v in kwargs.items():
                if k in _TRANSPORT:
                    out[k] = v
            out.update(new)
            if extra_body is not None:
                out["extra_body"] = extra_body
            sent = new
        dom_key = (out.get("prompt_cache_key") or "") if not salted else f"salt:{t_hash}"
        domain: Domain = (self.provider, self.org, model or "", str(dom_key))
        retention = body.get("prompt_cache_retention")
        ttl = self.spec.extended_ttls.get(retention) if isinstance(retention, str) else None
        call = _Call(
            api=base_api,
            provider=self.provider,
            model=model,
            rules=rules,
            pieces=pieces,
            domain=domain,
            prediction=_NO_PREDICTION,
            drift=None,
            tenant_hash=t_hash,
            template=template,
            prefix_hash=prefix_hash,
            key=out.get("prompt_cache_key") if not opts.dry_run else key,
            salted=salted,
            breakpoints=nbps,
            changes=tuple(changes),
            dry_run=opts.dry_run,
            stream=is_stream,
            route_rpm=0,
            ttl=float(ttl) if ttl else None,
            tokens_exact=tok.exact,
            overhead_ms=0.0,
            helper=api == "messages.stream",
            body=sent,
            cache=cache,
            conversation=conversation,
            now=self.clock(),
            mono=time.monotonic(),
        )
        if self.worker is None:
            self._account_send(call)
        else:
            self.worker.submit(self._account_send, call)
        call.overhead_ms = (time.perf_counter() - t0) * 1000
        return out, call

    def _account_send(self, call: _Call) -> None:
        """Pieces, prediction, routing rate and drift of a request, as of the moment it was sent."""
        opts = self.opts
        try:
            if call.pieces is None:
                call.pieces = pieces_from_request(
                    call.body, call.api, call.cache, keep_text=opts.keep_excerpts
                )
            if not opts.verify or not call.pieces:
                return
            call.prediction = self.tracker.predict(call.domain, call.pieces, call.now)
            if self.spec.routing_rpm:
                call.route_rpm = self.tracker.route_rate(call.domain, call.pieces, call.mono)
            key = f"conv|{call.conversation}" if call.conversation else f"{call.tenant_hash}|{call.template}"
            call.drift = self.tracker.drift(
                key,
                call.pieces,
                call.conversation is not None,
                opts.excerpt_chars if opts.keep_excerpts else 0,
            )
        except Exception:
            log.exception("prefixlint: could not account for the request")

    # -- after the request ----------------------------------------------------------------------
    def commit(self, call: _Call) -> None:
        """The response began: what the request wrote is now in the cache."""
        if self.worker is None:
            self._commit(call)
        else:
            self.worker.submit(self._commit, call)

    def _commit(self, call: _Call) -> None:
        try:
            if self.opts.verify and call.pieces:
                self.tracker.record(call.domain, call.pieces, self.clock(), call.ttl)
        except Exception:
            log.exception("prefixlint: could not record the request")

    def finish(self, call: _Call, usage: Any) -> None:
        """Build, count and deliver the report (in the background when asked); never raises."""
        if self.worker is None:
            self._finish(call, usage)
        else:
            self.worker.submit(self._finish, call, usage)

    def _finish(self, call: _Call, usage: Any) -> None:
        try:
            report = self._report(call, usage)
        except Exception:
            log.exception("prefixlint: could not build the cache report")
            return
        self.emit(report)

    def _report(self, call: _Call, usage: Any) -> CacheReport:
        u = normalize_usage(usage, self.spec, call.api)
        pred = call.prediction
        local = call.pieces[-1].end if call.pieces else 0
        rules = call.rules
        gran = rules.increment if rules.granularity in ("increment", "block") else SKETCH_BLOCK
        verdict, causes, exp, up = judge(
            predicted=pred.cached,
            upper=pred.upper,
            local_prompt=pred.prompt or local,
            reported_cached=u.cached if u else None,
            reported_prompt=u.prompt_tokens if u else None,
            tolerance_tokens=gran,
            expired=pred.expired,
            below_minimum=pred.below_minimum,
            shared=pred.shared,
            drift=call.drift,
            route_rpm=call.route_rpm,
            route_limit=self.spec.routing_rpm,
            tokens_exact=call.tokens_exact,
            minimum=rules.min_cacheable_tokens,
            regrid=rules.cacheable if rules.granularity in ("increment", "block") else None,
        )
        cached = (u.cached or 0) if u else 0
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
        return make_report(
            {
                "provider": call.provider,
                "model": call.model,
                "api": call.api,
                "verdict": verdict,
                "predicted_cached": exp,
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
                "usd_saved": usd,
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
                "overhead_ms": call.overhead_ms,
            }
        )

    def emit(self, report: CacheReport) -> None:
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

    def after(self, call: _Call, result: Any, kwargs: dict[str, Any]) -> Any:
        """Account for a sync result; returns what the caller gets."""
        try:
            inline = self.worker is None
            if inline:
                self._commit(call)
            else:
                self.commit(call)
            raw = (kwargs.get("extra_headers") or {}).get(_RAW_HEADER)
            if call.helper:
                return observe_manager(result, StreamObserver("messages", lambda u: self.finish(call, u)))
            if raw == "stream" or (raw and call.stream):
                self.finish(call, None)  # raw streams pass through
                return result
            if raw:
                parsed = result.parse()
                if inspect.isawaitable(parsed):  # pragma: no cover - handled in after_async
                    parsed.close()
                    self.finish(call, None)
                    return result
                self.finish(call, getattr(parsed, "usage", None))
                return result
            if call.stream:
                return observe_any(result, StreamObserver(call.api, lambda u: self.finish(call, u)))
            if inline:
                self._finish(call, getattr(result, "usage", None))
            else:
                self.finish(call, getattr(result, "usage", None))
        except Exception:
            log.exception("prefixlint: accounting failed")
        return result

    async def after_async(self, call: _Call, result: Any, kwargs: dict[str, Any]) -> Any:
        raw = (kwargs.get("extra_headers") or {}).get(_RAW_HEADER)
        if raw == "true" and not call.stream:
            try:
                self.commit(call)
                parsed = result.parse()
                if inspect.isawaitable(parsed):
                    parsed = await parsed
                self.finish(call, getattr(parsed, "usage", None))
            except Exception:
                log.exception("prefixlint: accounting failed")
            return result
        return self.after(call, result, kwargs)


def _sync_wrapper(state: _State, api: str, orig: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs, call = state.prepare(api, kwargs)
        result = orig(*args, **kwargs)
        return result if call is None else state.after(call, result, kwargs)

    return wrapper


def _async_wrapper(state: _State, api: str, orig: Callable[..., Any]) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs, call = state.prepare(api, kwargs)
        result = await orig(*args, **kwargs)
        return result if call is None else await state.after_async(call, result, kwargs)

    return wrapper


def _finish_wrapper(wrapper: Callable[..., Any], orig: Callable[..., Any]) -> Callable[..., Any]:
    wrapper.__name__ = getattr(orig, "__name__", "create")
    wrapper.__qualname__ = getattr(orig, "__qualname__", wrapper.__name__)
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
    wrapper._prefixlint = True  # type: ignore[attr-defined]
    return wrapper


def detect_provider(client: Any) -> str:
    """``azure``, ``anthropic``, ``deepseek`` or ``openai`` from the client's class and base URL."""
    cls = type(client)
    name, module = cls.__name__, cls.__module__
    if "Azure" in name:
        return "azure"
    if module.startswith("anthropic"):
        return "anthropic"
    base = str(getattr(client, "base_url", "")).lower()
    if "deepseek" in base:
        return "deepseek"
    return "openai"


def _resolve(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def wrap(client: C, options: SdkOptions | None = None, **kwargs: Any) -> C:
    """Make every request of ``client`` cache-friendly, tenant-isolated and verified.

    Options are :class:`SdkOptions` fields, given as keywords or as an object; they are validated
    here (:class:`~prefixlint.sdk.options.SdkConfigError`). Wrapping a wrapped client changes
    nothing. Returns ``client`` itself.
    """
    if getattr(client, _STATE_ATTR, None) is not None:
        log.debug("prefixlint: client already wrapped; leaving it as it is")
        return client
    opts = options_from(kwargs, options)
    provider = opts.provider or detect_provider(client)
    secret_id = f"{getattr(client, 'base_url', '')}|{getattr(client, 'api_key', '') or ''}"
    org = hashlib.sha256(secret_id.encode()).hexdigest()[:16]
    state = _State(opts, provider, org)
    targets = _ANTHROPIC_TARGETS if type(client).__module__.startswith("anthropic") else _OPENAI_TARGETS
    for path, method, api in targets:
        resource = _resolve(client, path)
        orig = getattr(resource, method, None) if resource is not None else None
        if orig is None:
            continue
        is_async = inspect.iscoroutinefunction(orig) or type(resource).__name__.startswith("Async")
        if is_async and method in ("create", "parse"):
            wrapper = _async_wrapper(state, api, orig)
        else:
            wrapper = _sync_wrapper(state, api, orig)
        resource.__dict__[method] = _finish_wrapper(wrapper, orig)
        for helper in _HELPERS:
            resource.__dict__.pop(helper, None)
        state.patches.append((resource, method))
    if not state.patches:
        from prefixlint.sdk.options import SdkConfigError

        raise SdkConfigError(f"{type(client).__name__} has no chat, responses or messages resource to wrap")
    setattr(client, _STATE_ATTR, state)
    return client


def unwrap(client: C) -> C:
    """Remove the patches of :func:`wrap`; the client behaves as before. Returns ``client``."""
    state: _State | None = getattr(client, _STATE_ATTR, None)
    if state is None:
        return client
    for resource, method in state.patches:
        resource.__dict__.pop(method, None)
        for helper in _HELPERS:
            resource.__dict__.pop(helper, None)
    delattr(client, _STATE_ATTR)
    return client


def is_wrapped(client: Any) -> bool:
    return getattr(client, _STATE_ATTR, None) is not None


def stats(client: Any) -> StatsSnapshot:
    """Aggregates of a wrapped client's reports: hit rate, tokens and dollars saved, verdict counts."""
    state: _State | None = getattr(client, _STATE_ATTR, None)
    if state is None:
        raise ValueError("client is not wrapped by prefixlint.sdk.wrap")
    if state.worker is not None:
        state.worker.flush()
    return state.stats.snapshot()


def flush(client: Any, timeout: float = 10.0) -> bool:
    """Wait for background accounting (``background=True``) of ``client`` to finish."""
    state: _State | None = getattr(client, _STATE_ATTR, None)
    if state is None or state.worker is None:
        return True
    return state.worker.flush(timeout)
