"""PFX900: a suppression comment that silences nothing."""

from __future__ import annotations

from collections.abc import Iterable

from prefixlint.model.edits import Applicability
from prefixlint.model.findings import Finding, Severity
from prefixlint.model.layout import Layout
from prefixlint.rules.base import Example, Rule, RuleContext


class UnusedSuppression(Rule):
    """A ``# prefixlint: ignore[...]`` comment that silences nothing.

    Like ruff's RUF100. A suppression whose code no longer fires hides the next real problem on that
    line and misleads readers. Codes of rules that are not enabled for the file are not reported, so a
    narrower ``--select`` does not flag the suppressions of other rules; unknown codes always are.

    The engine that applies suppressions produces this diagnostic; the safe fix removes the unused
    codes, or the whole comment when none is left.

    Example::

        SYSTEM = "You are a helpful assistant."  # prefixlint: ignore[PFX101]

    Fix: delete the comment.

    Fix safety: The fix is safe: it removes only a comment, or codes from it, that silences nothing,
    so the code and every other finding stay the same.
    """

    code = "PFX900"
    name = "unused-suppression"
    fix_applicability = Applicability.SAFE
    default_severity = Severity.INFO
    VALID: list[Example] = []
    INVALID: list[Example] = []

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        """Nothing per layout: see :func:`prefixlint.lint.suppressions.unused_findings`."""
        return ()
