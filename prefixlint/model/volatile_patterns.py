"""Text patterns of values that change between requests (timestamps, uuids, hex ids, JWTs, digit runs).

The patterns live in ``data/catalog.toml`` (``[[volatile-patterns]]``), each with texts that hold such a
value (``invalid``) and texts that do not (``valid``). Rendered payloads have no code to read, so their
text is all there is: the volatile-pattern rule flags the ``per_request`` ones, and sample alignment
and ``prefixlint diff`` use all of them to name the kind of a value that varies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from prefixlint.model.data import data_toml
from prefixlint.model.layout import DynamicKind


@dataclass(frozen=True)
class VolatilePattern:
    """One kind of volatile text, with the examples that pin down what it matches."""

    name: str
    kind: DynamicKind
    description: str
    per_request: bool
    regex: re.Pattern[str]
    invalid: tuple[str, ...]
    valid: tuple[str, ...]


@dataclass(frozen=True)
class VolatileMatch:
    """Where a pattern matched: ``start``/``end`` index the searched text."""

    pattern: VolatilePattern
    start: int
    end: int
    text: str


@cache
def volatile_patterns() -> tuple[VolatilePattern, ...]:
    """Every pattern of the catalog, in file order (the more specific ones first)."""
    out = []
    for entry in data_toml("catalog.toml").get("volatile-patterns", ()):
        out.append(
            VolatilePattern(
                name=entry["name"],
                kind=DynamicKind(entry["kind"]),
                description=entry["description"],
                per_request=bool(entry.get("per_request", True)),
                regex=re.compile(entry["regex"]),
                invalid=tuple(entry.get("invalid", ())),
                valid=tuple(entry.get("valid", ())),
            )
        )
    return tuple(out)


def find_volatile(text: str, per_request_only: bool = True) -> list[VolatileMatch]:
    """Non-overlapping matches in ``text``, by position; an earlier pattern wins an overlap."""
    found: list[VolatileMatch] = []
    for pattern in volatile_patterns():
        if per_request_only and not pattern.per_request:
            continue
        for m in pattern.regex.finditer(text):
            if any(m.start() < f.end and f.start < m.end() for f in found):
                continue
            found.append(VolatileMatch(pattern, m.start(), m.end(), m.group()))
    return sorted(found, key=lambda f: f.start)


def classify_values(values: list[str]) -> VolatilePattern | None:
    """The pattern that every one of ``values`` holds, or None (per-request patterns first)."""
    present = [v for v in values if v]
    if not present:
        return None
    for pattern in sorted(volatile_patterns(), key=lambda p: not p.per_request):
        if all(pattern.regex.search(v) for v in present):
            return pattern
    return None
