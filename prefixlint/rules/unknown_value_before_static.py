"""PFX120: a value whose nature is not known sits ahead of a large static text."""

from __future__ import annotations

from prefixlint.model.findings import Impact, Severity
from prefixlint.model.layout import Segment, Timing
from prefixlint.rules._dynamic import DynamicBeforeStatic
from prefixlint.rules._examples import HEADER, RULES, bad
from prefixlint.rules.base import Example, RuleContext

_AGENT = (
    HEADER + f"RULES = {RULES + ' '!r} * 20\n\n\n"
    "class Agent:\n"
    "    def ask(self, q):\n"
    '        system = f"Style: {self.style}\\n" + RULES\n'
    '        return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", '
    '"content": system}, {"role": "user", "content": q}])\n'
)
_SHORT = (
    HEADER + f"RULES = {RULES!r}\n\n\n"
    "class Agent:\n"
    "    def ask(self, q):\n"
    '        system = f"Style: {self.style}\\n" + RULES\n'
    '        return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", '
    '"content": system}, {"role": "user", "content": q}])\n'
)


class UnknownValueBeforeStatic(DynamicBeforeStatic):
    """A value whose nature is not known sits ahead of a large static prompt text.

    An attribute read (``self.style``) or a parameter with no visible caller may be set once at
    start-up or change on every request; prefixlint cannot tell, and says so instead of claiming
    it is computed per request. If it changes, the static text after it is never cached. It is
    reported only when that text matters: at least ``min-impact-tokens`` tokens, in a prompt that
    can reach the provider's minimum cacheable length. Low severity. On by default: on the
    real-code development set it added no false positive (see ``docs/severity.md``).

    Fix: if the value is fixed at start-up, nothing is lost, and a ``# prefixlint: ignore[PFX120]``
    says so; otherwise move it after the static text. A value known to be per request is PFX101
    to PFX109.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX120"
    name = "unknown-value-before-static"
    default_severity = Severity.LOW
    timing = Timing.UNKNOWN

    def matches(self, seg: Segment) -> bool:
        return seg.timing is Timing.UNKNOWN

    def reportable(self, impact: Impact, ctx: RuleContext) -> bool:
        return impact.at_stake > 0 and impact.at_stake >= ctx.settings.min_impact_tokens

    def when(self, seg: Segment) -> str:
        return "of unknown nature (prefixlint cannot tell whether it changes between requests) sits"

    def advice(self, seg: Segment, impact: Impact) -> str:
        return "If it changes between requests, move it after the static text."

    INVALID = [bad(_AGENT, marker="        system =")]
    VALID = [
        Example(_SHORT, note="the prompt stays below the minimum cacheable length: nothing at stake"),
    ]
