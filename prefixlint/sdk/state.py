"""Per-client state: options, caches and the steps that prepare each request.

``prepare`` is the one place the wrapper may raise into a call, and only with ``require_tenant``:
:class:`~prefixlint.sdk.tenancy.TenantRequiredError` when no tenant is set, and
:class:`~prefixlint.sdk.tenancy.PrepareError` when preparing failed inside prefixlint (nothing is
sent). Without ``require_tenant`` an internal error sends the request with its tenancy fields only
(key or salt), or unchanged if even that fails, and logs it.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from prefixlint.analysis.payloads.pieces import PieceCache, head_fingerprint, pieces_from_request
from prefixlint.model.pieces import Piece
from prefixlint.model.providers import ModelCacheRules, ProviderSpec, get_provider
from prefixlint.model.tokens import Tokenizer, tokenizer_for
from prefixlint.sdk import breakpoints as bp
from prefixlint.sdk import worker
from prefixlint.sdk.accounting import Accountant, perf_ms
from prefixlint.sdk.call import Call
from prefixlint.sdk.callsite import call_site
from prefixlint.sdk.options import RequestInfo, SdkOptions, decode_secret
from prefixlint.sdk.prepare import outgoing, pop_call_kwargs, request_body, rewrite, with_stream_usage
from prefixlint.sdk.stats import Stats
from prefixlint.sdk.streams import StreamObserver, observe_any, observe_manager
from prefixlint.sdk.tenancy import (
    PrepareError,
    TenantRequiredError,
    derive_cache_salt,
    derive_prompt_cache_key,
    resolve_tenant,
    tenant_hash,
)
from prefixlint.sdk.tracker import tracker_for
from prefixlint.sdk.worker import WORKER

log = logging.getLogger("prefixlint.sdk")
_RAW_HEADER = "X-Stainless-Raw-Response"
_MAX_MEMO = 10_000


class ClientState:
    """What one wrapped client knows: options, provider, organisation id, caches, stats."""

    def __init__(self, opts: SdkOptions, provider: str, org: str) -> None:
        self.opts = opts
        self.provider = provider
        self.spec: ProviderSpec = get_provider(provider)
        self.org = org
        self.secret = decode_secret(opts.salt_secret) if opts.salt_secret else None
        self.tracker = tracker_for(self.spec)
        self.stats = Stats(opts.hit_rate_threshold, opts.hit_rate_window)
        self.clock: Callable[[], float] = opts.clock or time.time
        self.account = Accountant(opts, self.spec, self.tracker, self.stats, self.clock)
        self.patches: list[tuple[Any, str]] = []
        self.on_wire = False  # the client's HTTP client tells the worker when a request is on the wire
        # APIs whose patched method takes ``prompt_cache_key`` as a keyword (older openai releases do
        # not: the key then travels in ``extra_body``, where every release passes it through)
        self.native_key: dict[str, bool] = {}
        self._caches: dict[str | None, tuple[Tokenizer, PieceCache]] = {}
        self._per_model: dict[Any, tuple[ModelCacheRules, Tokenizer, PieceCache]] = {}
        self._tenant_hashes: dict[str, str] = {}
        self._keys: dict[tuple[str, str], str] = {}  # (tenant, prefix hash) -> prompt_cache_key
        self._salts: dict[str, str] = {}  # tenant -> cache_salt
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

    def for_model(self, model: Any) -> tuple[ModelCacheRules, Tokenizer, PieceCache]:
        """The cache rules, tokenizer and piece cache of ``model`` (one piece cache per tokenizer)."""
        found = self._per_model.get(model)
        if found is None:
            tok = tokenizer_for(self.provider, model)
            same = (c for t, c in self._caches.values() if t.name == tok.name and t.source == tok.source)
            cache = next(same, None) or PieceCache(tok)
            self._caches[model] = (tok, cache)
            found = self._per_model[model] = (self.spec.rules_for(model), tok, cache)
        return found

    # -- before the request ---------------------------------------------------------------------
    def prepare(self, api: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], Call | None]:
        """The keywords to call the client with, and the call to account for (None: not accounted)."""
        t0 = time.perf_counter()
        call_kw = pop_call_kwargs(kwargs)
        strict = self.opts.require_tenant
        try:
            who = resolve_tenant(call_kw.get("prefixlint_tenant"), self.opts.tenant)
        except TypeError as exc:
            if strict:
                raise PrepareError(f"{exc}; the request was not sent") from exc
            log.error("prefixlint: %s; the per-call tenant is ignored", exc)
            who = resolve_tenant(None, self.opts.tenant)
        if strict and not who:
            raise TenantRequiredError("require_tenant=True and no tenant is set; the request was not sent")
        try:
            out, call = self._prepare(api, kwargs, call_kw, who)
        except Exception as exc:
            if strict:
                raise PrepareError(
                    f"prefixlint could not prepare the request ({type(exc).__name__}: {exc}); "
                    "with require_tenant=True nothing was sent"
                ) from exc
            log.exception("prefixlint: could not prepare the request; sending it with tenancy fields only")
            return self._tenancy_only(api, kwargs, who), None
        call.overhead_ms = perf_ms(t0)
        return out, call

    def _prepare(
        self, api: str, kwargs: dict[str, Any], call_kw: dict[str, Any], who: str | None
    ) -> tuple[dict[str, Any], Call]:
        opts = self.opts
        body = request_body(kwargs)
        base_api = "messages" if api == "messages.stream" else api
        model = body.get("model")
        rules, tok, cache = self.for_model(model)
        new, changes = rewrite(body, base_api, opts, self._canonical, call_kw.get("prefixlint_volatile"))
        pieces, prefix_hash = self._cut(new, base_api, cache)
        t_hash = self._tenant_hash(who)
        template = call_kw.get("prefixlint_template") or call_site()
        conversation = call_kw.get("prefixlint_conversation")
        extra_body = kwargs.get("extra_body")
        key = self._cache_key(new, extra_body, base_api, model, who, template, conversation, prefix_hash)
        if key:
            new, extra_body = self._place_key(api, key, new, extra_body)
            changes.append("prompt_cache_key: set")
        extra_body, salted = self._cache_salt(extra_body, who, changes)
        caller_marks = bool(pieces) and bp.has_cache_control(new, pieces)  # type: ignore[arg-type]
        new, nbps = self._breakpoints(new, base_api, pieces, rules, caller_marks, changes)
        is_stream = api == "messages.stream" or bool(new.get("stream"))
        with_usage = with_stream_usage(new, base_api, is_stream, opts)
        if with_usage is not new:
            new = with_usage
            changes.append("stream_options.include_usage: set")
        out = outgoing(kwargs, new, extra_body, opts.dry_run)
        if opts.dry_run and changes:
            pieces = None  # what is sent is the original body: cut it in the background
        sent_key = out.get("prompt_cache_key") or _get(out.get("extra_body"), "prompt_cache_key")
        dom_key = f"salt:{t_hash}" if salted else str(sent_key or "")
        retention = body.get("prompt_cache_retention")
        ttl = self.spec.extended_ttls.get(retention) if isinstance(retention, str) else None
        drift_key, drift_kind = _drift_group(
            conversation, call_kw.get("prefixlint_template"), template, t_hash
        )
        call = Call(
            api=base_api,
            provider=self.provider,
            model=model,
            rules=rules,
            pieces=pieces,
            domain=(self.provider, self.org, model or "", dom_key),
            tenant_hash=t_hash,
            template=template,
            drift_key=drift_key,
            drift_kind=drift_kind,
            caller_marks=caller_marks,
            prefix_hash=prefix_hash,
            key=sent_key if not opts.dry_run else key,
            salted=salted,
            breakpoints=nbps,
            changes=tuple(changes),
            dry_run=opts.dry_run,
            stream=is_stream,
            ttl=float(ttl) if ttl else None,
            tokens_exact=tok.exact,
            helper=api == "messages.stream",
            body=body if opts.dry_run else new,
            cache=cache,
            now=self.clock(),
            mono=time.monotonic(),
        )
        self.account.sent(call, on_wire=self.on_wire)  # the stream helper too: it sends on entering
        return out, call

    def _cut(self, body: dict[str, Any], api: str, cache: PieceCache) -> tuple[list[Piece] | None, str]:
        """The pieces when they are needed before sending (breakpoints), and the static-prefix hash.

        Otherwise the pieces are cut on the worker while the request is in flight, and the prefix
        hash comes from content digests alone (nothing is tokenized on the request path).
        """
        if api == "messages" and self.opts.breakpoints and self._cc_knob:
            pieces = pieces_from_request(body, api, cache, keep_text=self.opts.keep_excerpts)
            head = []
            for p in pieces:
                if p.section.value == "messages" or not p.stable:
                    break
                head.append(p)
            return pieces, head[-1].chain.hex()[:16] if head else ""
        return None, head_fingerprint(body, api, cache)

    def _tenant_hash(self, who: str | None) -> str | None:
        if not who:
            return None
        found = self._tenant_hashes.get(who)
        if found is None:
            if len(self._tenant_hashes) > _MAX_MEMO:
                self._tenant_hashes.clear()
            found = self._tenant_hashes[who] = tenant_hash(who, self.secret)
        return found

    def _cache_key(
        self,
        body: dict[str, Any],
        extra_body: Any,
        api: str,
        model: Any,
        who: str | None,
        template: str,
        conversation: str | None,
        prefix_hash: str,
    ) -> str | None:
        """The ``prompt_cache_key`` to add (None: the provider takes none, or the caller set one)."""
        opts = self.opts
        if api == "messages" or not self._key_knob:
            return None
        if body.get("prompt_cache_key") is not None or _get(extra_body, "prompt_cache_key") is not None:
            return None
        if opts.cache_key_fn is not None:
            info = RequestInfo(self.provider, model, api, who, template, conversation, prefix_hash)
            try:
                return opts.cache_key_fn(info)
            except Exception:
                log.exception("prefixlint: cache_key_fn failed; no prompt_cache_key set")
                return None
        if not (who and opts.prompt_cache_key):
            return None
        found = self._keys.get((who, prefix_hash))
        if found is None:
            if len(self._keys) > _MAX_MEMO:
                self._keys.clear()
            found = self._keys[(who, prefix_hash)] = derive_prompt_cache_key(who, prefix_hash, self.secret)
        return found

    def _place_key(
        self, api: str, key: str, body: dict[str, Any], extra_body: Any
    ) -> tuple[dict[str, Any], Any]:
        """(body, extra_body) with ``prompt_cache_key`` where the client takes it."""
        if self.native_key.get(api, True):
            return {**body, "prompt_cache_key": key}, extra_body
        return body, {**(extra_body or {}), "prompt_cache_key": key}

    def _cache_salt(self, extra_body: Any, who: str | None, changes: list[str]) -> tuple[Any, bool]:
        """``extra_body`` with the tenant's ``cache_salt`` (salt-based providers), and whether salted."""
        if not (self._salt and who):
            return extra_body, False
        if isinstance(extra_body, dict) and "cache_salt" in extra_body:
            return extra_body, True
        salt = self._salts.get(who)
        if salt is None:
            if len(self._salts) > _MAX_MEMO:
                self._salts.clear()
            salt = self._salts[who] = derive_cache_salt(who, self.secret)  # type: ignore[arg-type]
        changes.append("extra_body.cache_salt: set")
        return {**(extra_body or {}), "cache_salt": salt}, True

    def _breakpoints(
        self,
        body: dict[str, Any],
        api: str,
        pieces: list[Piece] | None,
        rules: ModelCacheRules,
        caller_marks: bool,
        changes: list[str],
    ) -> tuple[dict[str, Any], int]:
        """Anthropic ``cache_control`` breakpoints added to a request that has none; (body, count)."""
        if not pieces:
            return body, 0
        count = sum(1 for p in pieces if p.ttl)
        if api != "messages" or not self.opts.breakpoints or not self._cc_knob or caller_marks:
            return body, count
        marks = bp.choose(pieces, rules, self.opts.static_ttl)
        if not marks:
            return body, count
        changes.append(f"cache_control: {len(marks)} breakpoint(s) added")
        return bp.apply(body, pieces, marks), len(marks)

    def _tenancy_only(self, api: str, kwargs: dict[str, Any], who: str | None) -> dict[str, Any]:
        """After an internal error: the request as given plus its tenant's key or salt, if possible."""
        try:
            out = dict(kwargs)
            changes: list[str] = []
            base_api = "messages" if api == "messages.stream" else api
            keyed = who and base_api != "messages" and self._key_knob and self.opts.prompt_cache_key
            extra_body = out.get("extra_body")
            given = out.get("prompt_cache_key") or _get(extra_body, "prompt_cache_key")
            if keyed and given is None and self.opts.cache_key_fn is None:
                key = derive_prompt_cache_key(who, "", self.secret)  # type: ignore[arg-type]
                out, extra_body = self._place_key(api, key, out, extra_body)
            extra_body, _ = self._cache_salt(extra_body, who, changes)
            if extra_body is not None:
                out["extra_body"] = extra_body
            return out
        except Exception:
            log.exception("prefixlint: could not add the tenancy fields; sending the request unchanged")
            return kwargs

    # -- after the request ----------------------------------------------------------------------
    def after(self, call: Call, result: Any, kwargs: dict[str, Any]) -> Any:
        """Account for a sync result; returns what the caller gets. Never raises."""
        try:
            raw = _raw_mode(kwargs, call)
            account = self.account
            if call.helper:
                return observe_manager(result, StreamObserver("messages", lambda u: account.done(call, u)))
            if raw == "pass":
                account.done(call, None)  # raw streams pass through
                return result
            if raw == "parse":
                parsed = result.parse()
                if inspect.isawaitable(parsed):  # pragma: no cover - handled in after_async
                    parsed.close()
                    account.done(call, None)
                    return result
                account.done(call, getattr(parsed, "usage", None))
                return result
            if call.stream:
                return observe_any(result, StreamObserver(call.api, lambda u: account.done(call, u)))
            account.done(call, getattr(result, "usage", None))
        except Exception:
            log.exception("prefixlint: accounting failed")
        return result

    async def after_async(self, call: Call, result: Any, kwargs: dict[str, Any]) -> Any:
        """The same for an async result; waits for the send-side accounting without blocking the loop."""
        import asyncio

        try:
            job = call.sent_job
            if job is not None and not job.done() and not self.opts.background:
                WORKER.run_until(job)
                if not job.done():  # the worker is running it: wait without blocking the loop
                    # shielded: a wait that times out must not cancel the job (the worker still runs it)
                    await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(job)), worker.WAIT_S)
        except Exception:
            log.debug("prefixlint: send-side accounting did not finish", exc_info=True)
        if _raw_mode(kwargs, call) == "parse":
            try:
                parsed = result.parse()
                if inspect.isawaitable(parsed):
                    parsed = await parsed
                self.account.done(call, getattr(parsed, "usage", None))
            except Exception:
                log.exception("prefixlint: accounting failed")
            return result
        return self.after(call, result, kwargs)


def _raw_mode(kwargs: dict[str, Any], call: Call) -> str:
    """How a result is read, from the client's raw-response header ("true" in openai, "raw" in
    anthropic, "stream" for a streamed one): "" a plain result, "pass" a raw stream (passed through
    unread), "parse" a raw response (its usage read from ``parse()``)."""
    raw = (kwargs.get("extra_headers") or {}).get(_RAW_HEADER)
    if not raw:
        return ""
    return "pass" if raw == "stream" or call.stream else "parse"


def _drift_group(conversation: Any, named: Any, template: str, t_hash: str | None) -> tuple[str, str]:
    """(key, kind) under which drift compares requests: a conversation, a named template or a call site."""
    if conversation:
        return f"conv|{conversation}", "conversation"
    if named:
        return f"{t_hash}|tpl|{template}", "template"
    return f"{t_hash}|site|{template}", "site"


def _get(mapping: Any, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None
