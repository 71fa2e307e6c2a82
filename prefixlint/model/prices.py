"""Prices with their date: the data file's, or a user's file that overrides them.

A user file (TOML) carries its own date and one table per override::

    as_of = "2026-12-01"

    [[price]]
    provider = "openai"
    match = ["gpt-4o*"]          # fnmatch patterns over the model name (default: every model)
    input = 2.50                 # USD per million input tokens
    cached_input = 1.25
    cache_write = 3.125          # optional (Anthropic 5m writes, OpenAI GPT-5.6+ writes)
    cache_write_1h = 5.0         # optional

The first matching override wins; models without one keep the data file's price.
"""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint.model.providers import Price, get_provider, pricing_meta

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_PRICE_KEYS = ("input", "cached_input", "cache_write", "cache_write_1h")


class PriceFileError(ValueError):
    """A price file that cannot be read: the message names the file and the entry."""


@dataclass(frozen=True)
class _Override:
    provider: str
    patterns: tuple[str, ...]
    price: Price


@dataclass(frozen=True)
class PriceBook:
    """Prices per provider and model, with the date and source of the numbers used."""

    as_of: str
    source: str
    overrides: tuple[_Override, ...] = field(default=())

    @classmethod
    def default(cls) -> PriceBook:
        meta = pricing_meta()
        return cls(meta.get("as_of", "unknown"), meta.get("source", "prefixlint/model/data/providers.toml"))

    @classmethod
    def load(cls, path: Path | None) -> PriceBook:
        """The data file's prices, overridden by ``path`` when given."""
        base = cls.default()
        if path is None:
            return base
        try:
            data = tomllib.loads(Path(path).read_text("utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PriceFileError(f"{path}: {exc}") from exc
        overrides = tuple(_override(path, i, entry) for i, entry in enumerate(data.get("price", [])))
        as_of = data.get("as_of")
        if not isinstance(as_of, str) or not as_of:
            raise PriceFileError(f"{path}: `as_of` (the date of these prices) is required")
        return cls(str(as_of), str(path), overrides)

    def price(self, provider: str, model: str | None) -> Price:
        """The price of ``model`` at ``provider``: an override when one matches, else the data file's."""
        name = model or ""
        for o in self.overrides:
            if o.provider == provider and any(fnmatch.fnmatchcase(name, p) for p in o.patterns):
                return o.price
        return get_provider(provider).rules_for(model).price

    def describe(self) -> dict[str, Any]:
        return {"as_of": self.as_of, "source": self.source, "overrides": len(self.overrides)}


def _override(path: Path, index: int, entry: Any) -> _Override:
    where = f"{path}: price[{index}]"
    if not isinstance(entry, dict):
        raise PriceFileError(f"{where}: expected a table")
    unknown = set(entry) - {"provider", "match", *_PRICE_KEYS}
    if unknown:
        raise PriceFileError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    provider = entry.get("provider")
    if not isinstance(provider, str):
        raise PriceFileError(f"{where}: `provider` is required")
    try:
        get_provider(provider)
    except ValueError as exc:
        raise PriceFileError(f"{where}: {exc}") from exc
    patterns = entry.get("match", ["*"])
    if isinstance(patterns, str):
        patterns = [patterns]
    values: dict[str, float] = {}
    for key in _PRICE_KEYS:
        if key in entry:
            v = entry[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise PriceFileError(f"{where}: `{key}` must be a non-negative number")
            values[key] = float(v)
    if "input" not in values or "cached_input" not in values:
        raise PriceFileError(f"{where}: `input` and `cached_input` are required")
    return _Override(provider.lower(), tuple(map(str, patterns)), Price(**values))
