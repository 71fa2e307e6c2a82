"""Provider cache facts, loaded from ``data/providers.toml``.

Every stage reads provider facts through this module, so a number such as OpenAI's 1024-token
minimum lives in exactly one place.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from prefixlint.model.data import data_toml

_MODEL_KEYS = (
    "min_cacheable_tokens",
    "granularity",
    "increment",
    "ttl_seconds",
    "max_breakpoints",
    "encoding",
    "supports_caching",
    "cache_write_multiplier",
)


class UnknownProviderError(ValueError):
    """Raised for a provider name that is not in the data file."""


@dataclass(frozen=True)
class Price:
    """USD per million input tokens."""

    input: float
    cached_input: float
    cache_write: float | None = None
    cache_write_1h: float | None = None

    def saved_usd(self, cached_tokens: int) -> float:
        """Money saved by reading ``cached_tokens`` from cache instead of prefilling them."""
        return cached_tokens * (self.input - self.cached_input) / 1_000_000


@dataclass(frozen=True)
class UsageFields:
    """Dotted paths of the usage fields a provider reports."""

    cached: tuple[str, ...]
    cache_write: tuple[str, ...] = ()
    cache_write_5m: tuple[str, ...] = ()
    cache_write_1h: tuple[str, ...] = ()
    cache_miss: tuple[str, ...] = ()
    prompt_total: tuple[str, ...] = ()
    prompt_includes_cached: bool = True
    cached_omitted_when_zero: bool = False


@dataclass(frozen=True)
class ModelCacheRules:
    """The cache rules that apply to one model of one provider."""

    provider: str
    model: str | None
    min_cacheable_tokens: int
    granularity: str
    increment: int
    ttl_seconds: int
    max_breakpoints: int
    encoding: str
    exact_tokenizer: bool
    supports_caching: bool
    price: Price
    cache_write_multiplier: float | None = None

    def cacheable(self, shared_prefix_tokens: int, prompt_tokens: int | None = None) -> int:
        """Tokens a provider can serve from cache when ``shared_prefix_tokens`` match a cached entry.

        Applies the minimum length and granularity, and the "recompute the last token" cap of
        self-hosted engines when ``prompt_tokens`` is given.
        """
        if not self.supports_caching:
            return 0
        n = shared_prefix_tokens
        if prompt_tokens is not None and self.granularity in ("block", "token"):
            n = min(n, prompt_tokens - 1)
        if n < self.min_cacheable_tokens or n <= 0:
            return 0
        if self.granularity == "increment":
            extra = n - self.min_cacheable_tokens
            return self.min_cacheable_tokens + (extra // self.increment) * self.increment
        if self.granularity == "block":
            return (n // self.increment) * self.increment
        return n

    def reaches_minimum(self, prefix_tokens: int) -> bool:
        """True when a prefix of this many tokens is long enough to be cached at all."""
        return self.supports_caching and prefix_tokens >= self.min_cacheable_tokens


@dataclass(frozen=True)
class ProviderSpec:
    """Everything the data file says about one provider."""

    name: str
    display_name: str
    isolation: str
    request_knobs: tuple[str, ...]
    usage: UsageFields
    routing_rpm: int | None
    extended_ttls: dict[str, int]
    raw: dict[str, Any] = field(repr=False)

    def rules_for(self, model: str | None = None) -> ModelCacheRules:
        """The cache rules for ``model`` (provider defaults when the model is unknown)."""
        return _rules_for(self.name, model or "")


def pricing_meta() -> dict[str, str]:
    """When the prices in the data file were read (``as_of``), their currency, unit and source."""
    return {k: str(v) for k, v in data_toml("providers.toml").get("pricing", {}).items()}


@cache
def _data() -> dict[str, Any]:
    data = dict(data_toml("providers.toml"))
    data.pop("pricing", None)  # the date of the prices, not a provider (see ``pricing_meta``)
    for name, entry in data.items():
        parent = entry.get("inherits")
        if parent:
            merged = {k: v for k, v in data[parent].items()}
            merged.update(entry)
            data[name] = merged
    return data


def provider_names() -> list[str]:
    """Names of every provider in the data file."""
    return sorted(_data())


@cache
def get_provider(name: str) -> ProviderSpec:
    """Look up a provider by name (``openai``, ``anthropic``, ``vllm``, ...)."""
    data = _data()
    key = name.lower()
    if key not in data:
        raise UnknownProviderError(f"unknown provider {name!r}; known: {', '.join(provider_names())}")
    raw = data[key]
    usage = raw.get("usage", {})
    return ProviderSpec(
        name=key,
        display_name=raw.get("display_name", key),
        isolation=raw.get("isolation", "unknown"),
        request_knobs=tuple(raw.get("request_knobs", ())),
        usage=UsageFields(
            cached=tuple(usage.get("cached", ())),
            cache_write=tuple(usage.get("cache_write", ())),
            cache_write_5m=tuple(usage.get("cache_write_5m", ())),
            cache_write_1h=tuple(usage.get("cache_write_1h", ())),
            cache_miss=tuple(usage.get("cache_miss", ())),
            prompt_total=tuple(usage.get("prompt_total", ())),
            prompt_includes_cached=bool(usage.get("prompt_includes_cached", True)),
            cached_omitted_when_zero=bool(usage.get("cached_omitted_when_zero", False)),
        ),
        routing_rpm=raw.get("routing_rpm"),
        extended_ttls=dict(raw.get("extended_ttls", {})),
        raw=raw,
    )


def _model_entry(raw: dict[str, Any], model: str) -> dict[str, Any]:
    for entry in raw.get("models", ()):
        if any(fnmatch.fnmatchcase(model, pattern) for pattern in entry["match"]):
            return entry
    return {}


@cache
def _rules_for(provider: str, model: str) -> ModelCacheRules:
    raw = get_provider(provider).raw
    entry = _model_entry(raw, model) if model else {}
    merged = {key: raw.get(key) for key in _MODEL_KEYS}
    merged.update({k: v for k, v in entry.items() if k in _MODEL_KEYS})
    price = entry.get("price") or raw.get("default_price") or {"input": 0.0, "cached_input": 0.0}
    return ModelCacheRules(
        provider=provider,
        model=model or None,
        min_cacheable_tokens=int(merged["min_cacheable_tokens"] or 0),
        granularity=str(merged["granularity"] or "token"),
        increment=int(merged["increment"] or 1),
        ttl_seconds=int(merged["ttl_seconds"] or 0),
        max_breakpoints=int(merged["max_breakpoints"] or 0),
        encoding=str(merged["encoding"] or "cl100k_base"),
        exact_tokenizer=bool(raw.get("exact_tokenizer", False)),
        supports_caching=merged["supports_caching"] is not False,
        price=Price(**price),
        cache_write_multiplier=merged["cache_write_multiplier"],
    )


def guess_provider(model: str | None) -> str:
    """Best guess of the provider that serves ``model`` (``openai`` when unsure)."""
    m = (model or "").lower()
    if m.startswith("claude") or "anthropic" in m:
        return "anthropic"
    if m.startswith("gemini"):
        return "gemini"
    if m.startswith("deepseek"):
        return "deepseek"
    return "openai"
