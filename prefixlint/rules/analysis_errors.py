"""PFX001 and PFX002: input that prefixlint could not analyse.

The analyzers report these as :class:`prefixlint.analysis.result.AnalysisError`; the checker turns
them into findings. The classes here only carry their documentation and selection codes.
"""

from __future__ import annotations

from collections.abc import Iterable

from prefixlint.model.findings import Finding, Severity
from prefixlint.model.layout import Layout
from prefixlint.rules.base import Example, Rule, RuleContext


class UnanalysableInput(Rule):
    """A file that could not be read or parsed, so its prompts were not checked.

    Reported for a syntax error, a binary file, a file that is not valid UTF-8, a file that cannot be
    read (permissions), and an internal error of an analyzer. The location points at the problem (the
    syntax error's line, the first invalid byte). prefixlint never prints a traceback for bad input:
    it reports this diagnostic and goes on with the other files.

    Fix: make the file valid Python (or a valid template), or exclude it with ``exclude`` in
    ``[tool.prefixlint]``.

    Fix safety: There is no automatic fix: the file has to be made readable and valid by hand (or
    excluded).
    """

    code = "PFX001"
    name = "unanalysable-input"
    default_severity = Severity.HIGH
    VALID: list[Example] = []
    INVALID: list[Example] = []

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        """Nothing per layout: the checker reports analysis errors."""
        return ()


class TemplateIncludeError(Rule):
    """A template include, import or extends that cannot be followed.

    The included template is missing, its name is computed at run time, or includes form a loop. The
    part of the prompt that comes from it is unknown, so the analysis of the template is incomplete.

    Fix: use a literal template name that exists under the template search path, or suppress with
    ``{# prefixlint: ignore[PFX002] #}`` on the include's line.

    Fix safety: There is no automatic fix: only the author knows which template the include should
    name.
    """

    code = "PFX002"
    name = "template-include-error"
    default_severity = Severity.MEDIUM
    VALID: list[Example] = []
    INVALID: list[Example] = []

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        """Nothing per layout: the template analyzer reports include problems."""
        return ()
