"""Streams: collect usage as chunks go by, and report once the stream ends, closes or is dropped.

* OpenAI chat: usage rides on the last chunk (``choices == []``), only with
  ``stream_options.include_usage`` (injected on opt-in).
* OpenAI Responses: the ``response.completed`` event carries ``response.usage``.
* Anthropic: input and cache counts come in ``message_start``, output in ``message_delta``; merged
  with ``max`` per field (some gateways send cache fields only in ``message_delta``).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

log = logging.getLogger("prefixlint.sdk")
_RESPONSE_END = ("response.completed", "response.incomplete", "response.failed")


def _as_dict(obj: Any) -> dict[str, Any]:
    """A usage object (a pydantic model in both SDKs) or dict as a dict; {} for anything else."""
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    return dump() if callable(dump) else {}


def _merge_max(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, dict):
            out[k] = _merge_max(out.get(k) or {}, v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            cur = out.get(k)
            out[k] = max(cur, v) if isinstance(cur, (int, float)) else v
        elif v is not None and k not in out:
            out[k] = v
    return out


class StreamObserver:
    """Watches one stream's items; calls ``finish(usage or None)`` exactly once."""

    def __init__(self, api: str, finish: Callable[[Any], None]) -> None:
        self.api = api
        self._finish = finish
        self._usage: Any = None
        self._merged: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._done = False

    def see(self, item: Any) -> None:
        try:
            if self.api == "chat":
                usage = getattr(item, "usage", None)
                if usage is not None:
                    self._usage = usage
            elif self.api == "responses":
                if getattr(item, "type", "") in _RESPONSE_END:
                    self._usage = getattr(getattr(item, "response", None), "usage", None)
            else:
                kind = getattr(item, "type", "")
                if kind == "message_start":
                    self._merged = _merge_max(self._merged, _as_dict(getattr(item.message, "usage", None)))
                elif kind == "message_delta":
                    self._merged = _merge_max(self._merged, _as_dict(getattr(item, "usage", None)))
                if self._merged:
                    self._usage = self._merged
        except Exception:
            log.exception("prefixlint: could not read a stream item")

    def done(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        try:
            self._finish(self._usage)
        except Exception:
            log.exception("prefixlint: stream accounting failed")


_WARNED: set[str] = set()


def _unsupported(stream: Any, what: str, observer: StreamObserver) -> Any:
    """Leave a stream whose internals changed untouched: say so once, report it unverified."""
    name = f"{type(stream).__module__}.{type(stream).__qualname__}"
    if name not in _WARNED:
        _WARNED.add(name)
        log.warning(
            "prefixlint: %s has no %s (a changed openai/anthropic version?); its streams pass through "
            "unobserved and are reported as unverified",
            name,
            what,
        )
    observer.done()
    return stream


def _iterator_of(stream: Any) -> Any:
    """The ``_iterator`` the SDKs' ``Stream`` objects iterate over (an attribute or a cached property,
    by version), or None when it is not there."""
    try:
        it = stream._iterator
    except Exception:
        return None
    return it if hasattr(it, "__next__") or hasattr(it, "__anext__") else None


def observe_stream(stream: Any, observer: StreamObserver) -> Any:
    """Patch ``stream`` (an openai/anthropic ``Stream``) on the instance to feed ``observer``."""
    orig = _iterator_of(stream)
    if orig is None or not hasattr(orig, "__next__"):
        return _unsupported(stream, "_iterator", observer)

    def gen() -> Any:
        try:
            for item in orig:
                observer.see(item)
                yield item
        finally:
            observer.done()

    stream._iterator = gen()
    orig_close = stream.close

    def close() -> None:
        try:
            orig_close()
        finally:
            observer.done()

    stream.close = close
    weakref.finalize(stream, observer.done)
    return stream


def observe_async_stream(stream: Any, observer: StreamObserver) -> Any:
    """The same for ``AsyncStream``."""
    orig = _iterator_of(stream)
    if orig is None or not hasattr(orig, "__anext__"):
        return _unsupported(stream, "_iterator", observer)

    async def agen() -> Any:
        try:
            async for item in orig:
                observer.see(item)
                yield item
        finally:
            observer.done()

    stream._iterator = agen()
    orig_close = stream.close

    async def close() -> None:
        try:
            await orig_close()
        finally:
            observer.done()

    stream.close = close
    weakref.finalize(stream, observer.done)
    return stream


def observe_any(stream: Any, observer: StreamObserver) -> Any:
    if hasattr(stream, "__aiter__") and not hasattr(stream, "__iter__"):
        return observe_async_stream(stream, observer)
    return observe_stream(stream, observer)


def observe_manager(manager: Any, observer: StreamObserver) -> Any:
    """Hook an Anthropic ``MessageStreamManager`` (sync or async) so its raw stream is observed."""
    name = next((k for k in vars(manager) if k.endswith("__api_request")), None)
    if name is None:
        return _unsupported(manager, "__api_request", observer)
    request = getattr(manager, name)
    if callable(request):

        def make() -> Any:
            return observe_stream(request(), observer)

        setattr(manager, name, make)
    else:  # an awaitable (AsyncMessageStreamManager)

        async def amake() -> Any:
            return observe_async_stream(await request, observer)

        setattr(manager, name, amake())
    weakref.finalize(manager, observer.done)
    return manager
