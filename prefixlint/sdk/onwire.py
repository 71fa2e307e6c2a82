"""Wake the accounting worker once a wrapped request is on the wire (its body written), not before.

A request's send-side accounting (pieces, tokens, prediction) is queued when the wrapper prepares the
request, but the worker runs Python: woken then, it takes the GIL from the calling thread while the
client still builds and writes the request (the openai and anthropic clients spend milliseconds of
Python there), and its whole job adds to the call. Woken once the request body has been written, it
runs while the calling thread waits for the response with the GIL released.

The signal is httpcore's ``trace`` request extension (``http11.send_request_body.complete``, or
``http2.``), which an httpx ``request`` event hook on the client's HTTP client adds to each request
sent while accounting jobs are queued. Clients without an httpx client keep waking the worker when
the request is prepared (:func:`install` returns False).
"""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from prefixlint.sdk.worker import WORKER

log = logging.getLogger("prefixlint.sdk")

_BODY_SENT = "send_request_body.complete"
Trace = Callable[[str, dict[str, Any]], Any]
# an HTTP client -> how many wrapped clients use its hook (``copy()`` shares the HTTP client)
_USERS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _wake(name: str, info: dict[str, Any]) -> bool:
    """Wake the worker at the step where the body was written; True at that step."""
    if name.endswith(_BODY_SENT):
        WORKER.wake()
        return True
    return False


def _once(ext: dict[str, Any]) -> Trace:
    """A trace that wakes the worker, then removes itself from ``ext`` (the request's extensions,
    which httpcore reads at every step): the steps after the body cost nothing more."""

    def trace(name: str, info: dict[str, Any]) -> None:
        if _wake(name, info) and ext.get("trace") is trace:
            del ext["trace"]

    return trace


def _aonce(ext: dict[str, Any]) -> Trace:
    async def trace(name: str, info: dict[str, Any]) -> None:
        if _wake(name, info) and ext.get("trace") is trace:
            del ext["trace"]

    return trace


def _chain(prev: Trace) -> Trace:
    def trace(name: str, info: dict[str, Any]) -> Any:
        _wake(name, info)
        return prev(name, info)

    return trace


def _achain(prev: Callable[[str, dict[str, Any]], Awaitable[Any]]) -> Trace:
    async def trace(name: str, info: dict[str, Any]) -> Any:
        _wake(name, info)
        return await prev(name, info)

    return trace


def _hook(request: Any) -> None:
    """httpx ``request`` event hook (sync clients): trace the request if accounting waits for it."""
    if WORKER.queued():
        _trace(request, _once, _chain)


async def _ahook(request: Any) -> None:
    """The same for async clients, whose trace callbacks are coroutines."""
    if WORKER.queued():
        _trace(request, _aonce, _achain)


def _trace(request: Any, once: Callable[..., Trace], chain: Callable[..., Trace]) -> None:
    """Add the waking trace to ``request``; never raises into the caller's request (the worker then
    wakes at its deadline)."""
    try:
        ext = dict(request.extensions)
        prev = ext.get("trace")
        ext["trace"] = once(ext) if prev is None else chain(prev)
        request.extensions = ext
    except Exception:
        log.debug("prefixlint: could not trace the request; accounting runs at its deadline", exc_info=True)


def _http_client(client: Any) -> tuple[Any, Callable[..., Any]] | None:
    """``client``'s httpx client and the hook that fits it (sync or async); None if it has none."""
    http = getattr(client, "_client", None)
    hooks = getattr(http, "event_hooks", None)
    if not isinstance(hooks, dict) or not isinstance(hooks.get("request"), list):
        return None
    return http, _ahook if inspect.iscoroutinefunction(getattr(http, "send", None)) else _hook


def install(client: Any) -> bool:
    """Add the hook to ``client``'s HTTP client; False when it has none the hook can use."""
    found = _http_client(client)
    if found is None:
        return False
    http, hook = found
    try:
        hooks = http.event_hooks
        if hook not in hooks["request"]:
            http.event_hooks = {**hooks, "request": [*hooks["request"], hook]}
        _USERS[http] = _USERS.get(http, 0) + 1
    except (AttributeError, TypeError):
        return False
    return True


def uninstall(client: Any) -> None:
    """Remove the hook once no wrapped client of ``client``'s HTTP client uses it."""
    found = _http_client(client)
    if found is None:
        return
    http, hook = found
    users = _USERS.get(http, 0) - 1
    if users > 0:
        _USERS[http] = users
        return
    _USERS.pop(http, None)
    hooks = http.event_hooks
    if hook in hooks["request"]:
        http.event_hooks = {**hooks, "request": [h for h in hooks["request"] if h is not hook]}
