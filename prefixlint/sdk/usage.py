"""Normalise the usage every provider reports, from the field paths in ``data/providers.toml``.

No usage field name is written here: each provider's ``usage.*`` entries list the dotted paths to
read, the first one present wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prefixlint.providers import ProviderSpec

_MISSING = object()


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


def _get(obj: Any, path: str) -> Any:
    cur = obj
    for part in path.split("."):
        if cur is None:
            return _MISSING
        cur = cur.get(part, _MISSING) if isinstance(cur, dict) else getattr(cur, part, _MISSING)
        if cur is _MISSING:
            return _MISSING
    return cur


def _first(obj: Any, paths: tuple[str, ...]) -> int | None:
    for path in paths:
        val = _get(obj, path)
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            return int(val)
    return None


def normalize_usage(usage: Any, spec: ProviderSpec) -> NormalizedUsage | None:
    """The usage object or dict of one response, normalised; None when there is no usage."""
    if usage is None:
        return None
    f = spec.usage
    total = _first(usage, f.prompt_total)
    if total is None:
        return None
    cached = _first(usage, f.cached)
    write = _first(usage, f.cache_write) or 0
    w5 = _first(usage, f.cache_write_5m) or 0
    w1 = _first(usage, f.cache_write_1h) or 0
    miss = _first(usage, f.cache_miss)
    if cached is None and (f.cached_omitted_when_zero or miss is not None or (f.cache_write and write)):
        cached = 0
    if not f.prompt_includes_cached:
        total += (cached or 0) + write
    return NormalizedUsage(total, cached, write, w5, w1, miss)
