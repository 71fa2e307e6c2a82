"""``wrap(client) -> client``: patch one openai/anthropic client instance, LangSmith-style.

The same object comes back, so static types and every method the wrapper does not know keep
working. Only instance attributes are set (``client.chat.completions.create = ...``); ``unwrap``
deletes them again. ``with_raw_response`` / ``with_streaming_response`` helpers are rebuilt from the
patched methods, so raw calls go through the wrapper too; ``client.copy()`` / ``with_options()``
return wrapped clients with the same options.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from prefixlint.sdk import onwire
from prefixlint.sdk.options import SdkConfigError, SdkOptions, check_isolation, options_from
from prefixlint.sdk.state import ClientState
from prefixlint.sdk.stats import StatsSnapshot
from prefixlint.sdk.tracker import forget_all
from prefixlint.sdk.worker import WORKER

log = logging.getLogger("prefixlint.sdk")
C = TypeVar("C")

_STATE_ATTR = "_prefixlint_state"
_HELPERS = ("with_raw_response", "with_streaming_response")
_COPIES = ("copy", "with_options")
# (resource path, method, api)
_OPENAI_TARGETS = (
    ("chat.completions", "create", "chat"),
    ("chat.completions", "parse", "chat"),  # structured output: the same request, parsed reply
    ("responses", "create", "responses"),
)
_ANTHROPIC_TARGETS = (("messages", "create", "messages"), ("messages", "stream", "messages.stream"))
_WARNED: set[str] = set()


def _sync_wrapper(state: ClientState, api: str, orig: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs, call = state.prepare(api, kwargs)
        if call is None:
            return orig(*args, **kwargs)
        try:
            result = orig(*args, **kwargs)
        except BaseException:
            state.account.failed(call)
            raise
        return state.after(call, result, kwargs)

    return wrapper


def _async_wrapper(state: ClientState, api: str, orig: Callable[..., Any]) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs, call = state.prepare(api, kwargs)
        if call is None:
            return await orig(*args, **kwargs)
        try:
            result = await orig(*args, **kwargs)
        except BaseException:
            state.account.failed(call)
            raise
        return await state.after_async(call, result, kwargs)

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


def _warn_keys_without_secret(state: ClientState) -> None:
    """Say once per process that tenant keys derived without a secret can be tested against names."""
    opts = state.opts
    if state.secret or not state._key_knob or not opts.prompt_cache_key or opts.cache_key_fn is not None:
        return
    if "pck" not in _WARNED:
        _WARNED.add("pck")
        log.info(
            "prefixlint: prompt_cache_key is derived without a secret, so anyone who knows a prompt can "
            "test tenant names against its key; set $PREFIXLINT_CACHE_SALT_SECRET (or salt_secret)"
        )


def wrap(client: C, options: SdkOptions | None = None, **kwargs: Any) -> C:
    """Make every request of ``client`` cache-friendly, tenant-isolated and verified.

    Options are :class:`SdkOptions` fields, given as keywords or as an object; they are validated
    here (:class:`~prefixlint.sdk.options.SdkConfigError`). Wrapping a wrapped client again applies
    the new options on top of the current ones (its stats carry over). Returns ``client`` itself.
    """
    old: ClientState | None = getattr(client, _STATE_ATTR, None)
    if old is not None:
        if options is None and not kwargs:
            return client
        opts = options_from(kwargs, options if options is not None else old.opts)
        unwrap(client)
        _wrap(client, opts, old)
        return client
    _wrap(client, options_from(kwargs, options))
    return client


def _wrap(client: Any, opts: SdkOptions, previous: ClientState | None = None) -> ClientState:
    provider = opts.provider or detect_provider(client)
    check_isolation(opts, provider)
    secret_id = f"{getattr(client, 'base_url', '')}|{getattr(client, 'api_key', '') or ''}"
    org = hashlib.sha256(secret_id.encode()).hexdigest()[:16]
    state = ClientState(opts, provider, org)
    if previous is not None:  # a second wrap: the counts go on
        state.stats = state.account.stats = previous.stats
        previous.stats.configure(opts.hit_rate_threshold, opts.hit_rate_window)
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
        state.native_key[api] = _takes(orig, "prompt_cache_key")
        resource.__dict__[method] = _finish_wrapper(wrapper, orig)
        for helper in _HELPERS:
            resource.__dict__.pop(helper, None)
        state.patches.append((resource, method))
    if not state.patches:
        raise SdkConfigError(f"{type(client).__name__} has no chat, responses or messages resource to wrap")
    _patch_copies(client, state)
    state.on_wire = onwire.install(client)
    _warn_keys_without_secret(state)
    setattr(client, _STATE_ATTR, state)
    return state


def _takes(fn: Callable[..., Any], name: str) -> bool:
    """True when ``fn`` accepts the keyword ``name`` (True when its signature cannot be read)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _patch_copies(client: Any, state: ClientState) -> None:
    """``client.copy(...)`` and ``client.with_options(...)`` return clients wrapped with the same options."""
    for name in _COPIES:
        orig = getattr(client, name, None)
        if not callable(orig):
            continue

        def copied(*args: Any, __orig: Callable[..., Any] = orig, **kwargs: Any) -> Any:
            new = __orig(*args, **kwargs)
            if getattr(new, _STATE_ATTR, None) is None:
                _wrap(new, state.opts)
            return new

        copied.__name__ = name
        copied.__doc__ = getattr(orig, "__doc__", None)
        copied.__wrapped__ = orig  # type: ignore[attr-defined]
        client.__dict__[name] = copied
        state.patches.append((client, name))


def unwrap(client: C) -> C:
    """Remove the patches of :func:`wrap`; the client behaves as before. Returns ``client``."""
    state: ClientState | None = getattr(client, _STATE_ATTR, None)
    if state is None:
        return client
    for resource, method in state.patches:
        resource.__dict__.pop(method, None)
        if resource is not client:
            for helper in _HELPERS:
                resource.__dict__.pop(helper, None)
    if state.on_wire:
        onwire.uninstall(client)
    delattr(client, _STATE_ATTR)
    return client


def is_wrapped(client: Any) -> bool:
    return getattr(client, _STATE_ATTR, None) is not None


def stats(client: Any) -> StatsSnapshot:
    """Aggregates of a wrapped client's reports: hit rate, tokens and dollars saved, verdict counts."""
    state: ClientState | None = getattr(client, _STATE_ATTR, None)
    if state is None:
        raise ValueError("client is not wrapped by prefixlint.sdk.wrap")
    WORKER.flush()
    return state.stats.snapshot()


def flush(client: Any = None, timeout: float = 10.0) -> bool:
    """Wait for background accounting (``background=True``) to finish; False on timeout."""
    return WORKER.flush(timeout)


def forget() -> None:
    """Forget every request this process has sent (for example after the provider's cache was flushed).

    Predictions then start from an empty cache, as after a restart. Tests that reset their server
    between cases call it too.
    """
    WORKER.flush()
    forget_all()
