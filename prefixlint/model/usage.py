"""Normalise the usage every provider reports, from the field paths in ``data/providers.toml``.

No usage field name is written here: each provider's ``usage.*`` entries list the dotted paths to
read, the first one present wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prefixlint.model.providers import ProviderSpec

_MISSING = object()
_SPLIT: dict[tuple[str, ...], tuple[tuple[str, ...], ...]] = {}  # dotted paths -> their parts
_ON_CLASS: dict[tuple[type, str], bool] = {}  # (pydantic model, name) -> a class attribute
_MODEL_TYPES: dict[type, bool] = {}  # type -> a pydantic model

try:  # the openai and anthropic SDKs return pydantic models
    from pydantic import BaseModel as _Model
except ImportError:  # pragma: no cover - pydantic comes with both SDKs
    _Model = None  # type: ignore[assignment,misc]


@dataclass(frozen=True)
class NormalizedUsage:
    """Prompt-side usage in one shape.

    ``prompt_tokens`` always includes cached and written tokens (Anthropic's ``input_tokens`` does
    not; it is added up here). ``cached`` is None when the provider said nothing about caching.
    """

    prompt_tokens: int
    cached: int | None
    cache_write: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_miss: int | None = None


def _is_model(obj: Any) -> bool:
    t = type(obj)
    hit = _MODEL_TYPES.get(t)
    if hit is None:
        if len(_MODEL_TYPES) > 1000:
            _MODEL_TYPES.clear()
        hit = _MODEL_TYPES[t] = _Model is not None and isinstance(obj, _Model)
    return hit


def _attr(obj: Any, name: str) -> Any:
    """``getattr(obj, name, _MISSING)``, without pydantic's exception for a missing field."""
    if _is_model(obj):
        fields = obj.__dict__
        if name in fields:
            return fields[name]
        key = (type(obj), name)
        on_class = _ON_CLASS.get(key)
        if on_class is None:  # a property, method or private name: ask getattr
            on_class = _ON_CLASS[key] = name.startswith("_") or hasattr(type(obj), name)
        if not on_class:  # a field pydantic did not set, or an extra one
            extra = obj.__pydantic_extra__
            return extra.get(name, _MISSING) if extra else _MISSING
    return getattr(obj, name, _MISSING)


def _first(obj: Any, paths: tuple[str, ...]) -> int | None:
    """The first of the dotted ``paths`` that holds a number in ``obj`` (dicts and objects)."""
    if not paths:
        return None
    split = _SPLIT.get(paths)
    if split is None:
        split = _SPLIT[paths] = tuple(tuple(p.split(".")) for p in paths)
    for parts in split:
        cur = obj
        for part in parts:
            if cur is None:
                cur = _MISSING
                break
            if isinstance(cur, dict):
                cur = cur.get(part, _MISSING)
            elif _MODEL_TYPES.get(type(cur)) and part in cur.__dict__:  # a set pydantic field
                cur = cur.__dict__[part]
            else:
                cur = _attr(cur, part)
            if cur is _MISSING:
                break
        if isinstance(cur, (int, float)) and not isinstance(cur, bool):
            return int(cur)
    return None


def normalize_usage(usage: Any, spec: ProviderSpec, api: str | None = None) -> NormalizedUsage | None:
    """The usage object or dict of one response, normalised; None when there is no usage.

    ``api="messages"``: the response has Anthropic's shape, whose ``input_tokens`` never include cache
    reads and writes, whichever server sent it (the reference engine's ``/v1/messages`` too).
    """
    if usage is None:
        return None
    f = spec.usage
    total = _first(usage, f.prompt_total)
    if total is None:
        return None
    cached = _first(usage, f.cached)
    write = (_first(usage, f.cache_write) or 0) if f.cache_write else 0
    w5 = (_first(usage, f.cache_write_5m) or 0) if f.cache_write_5m else 0
    w1 = (_first(usage, f.cache_write_1h) or 0) if f.cache_write_1h else 0
    miss = _first(usage, f.cache_miss) if f.cache_miss else None
    if cached is None and (f.cached_omitted_when_zero or miss is not None or (f.cache_write and write)):
        cached = 0
    if not f.prompt_includes_cached or api == "messages":
        total += (cached or 0) + write
    return NormalizedUsage(total, cached, write, w5, w1, miss)
