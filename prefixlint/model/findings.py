"""Findings, their impact and their fixes: what rules produce and reporters print."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from prefixlint.model.edits import Applicability, Edit, Fix
from prefixlint.model.layout import SourceLocation

__all__ = ["Applicability", "Edit", "Finding", "Fix", "Impact", "Severity"]


class Severity(str, Enum):
    """How much a finding costs; follows the impact, the value's cost model and the thresholds.

    ``INFO`` is informational: fewer than ``min-impact-tokens`` tokens are at stake (or the prompt can
    never reach the provider's minimum cacheable length). Such a finding is shown but does not fail
    the run (see :attr:`Finding.blocking`).
    """

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
    ``history_follows`` says that conversation history comes after the value, so the prompt grows
    with the conversation and can reach the minimum whatever its static text.
    """

    tokens_lost: int
    prefix_tokens: int = 0
    reaches_minimum: bool = False
    minimum: int = 0
    exact: bool = True
    encoding: str = ""
    history_priced: bool = False
    history_follows: bool = False

    @property
    def can_reach_minimum(self) -> bool:
        """False when the prefix plus the static text after the value stays below the provider's
        minimum cacheable length (and no history follows): then nothing is cached either way."""
        return self.history_follows or self.prefix_tokens + self.tokens_lost >= self.minimum

    @property
    def at_stake(self) -> int:
        """Tokens a fix would make cacheable: ``tokens_lost``, or 0 when the prompt can never reach
        the minimum. ``min-impact-tokens`` is compared with this number."""
        return self.tokens_lost if self.can_reach_minimum else 0

    def describe(self) -> str:
        approx = "" if self.exact else "~"
        parts = [f"{approx}{self.tokens_lost} tokens uncacheable"]
        if self.history_priced:
            parts[0] += " plus the conversation history"
        state = "reaches" if self.reaches_minimum else "below"
        parts.append(f"prefix {approx}{self.prefix_tokens} tokens ({state} the {self.minimum}-token minimum)")
        if not self.can_reach_minimum:
            total = self.prefix_tokens + self.tokens_lost
            parts.append(f"{approx}{total} static tokens in all: below the minimum, nothing is cached")
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

    @property
    def blocking(self) -> bool:
        """True when this finding makes ``prefixlint check`` exit 1.

        A finding with an impact is informational (``Severity.INFO``) when fewer than
        ``min-impact-tokens`` tokens are at stake; it is shown but does not fail the run. Findings
        without an impact (unreadable input, configuration problems, unused suppressions) always do.
        """
        return self.impact is None or self.severity is not Severity.INFO

    @property
    def also(self) -> list[dict[str, Any]]:
        """Other values of the same cause in the same prompt: ``{path, line, col, label, kind}`` each.

        One finding is reported per prompt and per cause, at the first value; the rest are listed here
        (the text output's ``= also:`` lines, the JSON ``also`` field).
        """
        return list(self.extra.get("also", ()))

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
