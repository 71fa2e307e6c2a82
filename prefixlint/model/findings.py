"""Findings, their impact and their fixes: what rules produce and reporters print."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from prefixlint.model.edits import Applicability, Edit, Fix
from prefixlint.model.layout import SourceLocation

__all__ = ["Applicability", "Edit", "Finding", "Fix", "Impact", "Severity"]


class Severity(str, Enum):
    """How much a finding costs; follows the impact and configurable thresholds."""

    INFO = "info"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return ("info", "low", "medium", "high").index(self.value)


@dataclass(frozen=True)
class Impact:
    """What a finding costs the cache.

    ``tokens_lost`` static tokens sit after the dynamic value and are re-prefilled on every request.
    ``prefix_tokens`` still match before it; ``reaches_minimum`` says whether that prefix is long
    enough for the provider to cache at all. ``exact`` is False when counts are estimates.
    """

    tokens_lost: int
    prefix_tokens: int = 0
    reaches_minimum: bool = False
    minimum: int = 0
    exact: bool = True
    encoding: str = ""
    history_priced: bool = False

    def describe(self) -> str:
        approx = "" if self.exact else "~"
        parts = [f"{approx}{self.tokens_lost} tokens uncacheable"]
        if self.history_priced:
            parts[0] += " plus the conversation history"
        state = "reaches" if self.reaches_minimum else "below"
        parts.append(f"prefix {approx}{self.prefix_tokens} tokens ({state} the {self.minimum}-token minimum)")
        return ", ".join(parts)


@dataclass(frozen=True)
class Finding:
    """One diagnostic, in ruff's shape: a code at a location, with a message and an optional fix."""

    code: str
    message: str
    location: SourceLocation
    severity: Severity = Severity.MEDIUM
    impact: Impact | None = None
    fix: Fix | None = None
    chain: tuple[SourceLocation, ...] = ()
    confidence: float = 1.0
    snippet: str = ""
    rule_name: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def path(self) -> str:
        return self.location.path

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.location.path, self.location.line, self.location.col, self.code)


def error_finding(path: str, message: str, line: int = 1, col: int = 0, code: str = "PFX001") -> Finding:
    """A diagnostic for input prefixlint cannot analyse."""
    name = "unanalysable-input" if code == "PFX001" else "template-include-error"
    return Finding(
        code=code,
        message=message,
        location=SourceLocation(path, line, col),
        severity=Severity.HIGH,
        rule_name=name,
    )
