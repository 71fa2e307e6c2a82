"""PFX301: a per-request value ahead of the conversation history."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from prefixlint.model.edits import Applicability, Fix
from prefixlint.model.findings import Finding
from prefixlint.model.layout import Layout, Timing
from prefixlint.rules._dynamic import KIND_WORDS, decorate, with_also
from prefixlint.rules._examples import HEADER, RULES, bad
from prefixlint.rules.base import Example, Rule, RuleContext
from prefixlint.rules.cost import coarse, severity_cap
from prefixlint.rules.impact import breaking_values, impact_at

_CHAT = (
    "from datetime import datetime\n" + HEADER + f"RULES = {RULES!r}\n\n\n"
    "def turn(history: list[dict], q: str):\n"
    '    system = RULES + f"\\nCurrent time: {datetime.now().isoformat()}"\n'
    '    messages = [{"role": "system", "content": system}]\n'
    "    messages.extend(history)\n"
    '    messages.append({"role": "user", "content": q})\n'
    '    return client.chat.completions.create(model="gpt-4.1", messages=messages)\n'
)
_GOOD = (
    "from datetime import datetime\n" + HEADER + f"RULES = {RULES!r}\n\n\n"
    "def turn(history: list[dict], q: str):\n"
    "    now = datetime.now().isoformat()\n"
    '    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", '
    '"content": RULES}, *history, {"role": "user", "content": f"{q}\\n(now: {now})"}])\n'
)


class ValueBeforeHistory(Rule):
    """A per-request value sits ahead of the conversation history.

    The end of the system prompt is not the end of the prompt. In a multi-turn chat the history
    follows the system prompt, and every turn of it is re-prefilled when a value before it changes.
    The cost grows with the conversation. One finding per prompt, at the first such value. A date
    (changes once a day) is not reported here: a conversation rarely spans midnight.

    Fix: move the value into the last user message (or a block after the history). This needs a
    code change the tool cannot make safely, so the fix is shown, not applied.

    Fix safety: The fix is shown, not applied: moving a value behind the conversation history means
    building the messages differently (a new message or block after the history), which a text edit
    cannot do reliably.
    """

    code = "PFX301"
    name = "value-before-history"
    fix_applicability = Applicability.DISPLAY_ONLY
    INVALID = [bad(_CHAT, marker="    system =")]
    VALID = [Example(_GOOD, note="the time travels in the last user message")]

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        hits = []
        for i, seg in breaking_values(layout):
            if seg.timing is not Timing.REQUEST or seg.location is None or not layout.history_after(i):
                continue
            if coarse(seg):
                continue  # a date changes once a day: a conversation rarely spans two
            if impact_at(layout, i, ctx.settings).tokens_lost > 0:
                continue  # PFX1xx reports it, priced with the history
            hits.append((i, seg))
        for i, seg in hits[:1]:  # one finding per prompt; the other values are listed in it
            impact = impact_at(layout, i, ctx.settings, price_history=True)
            what = KIND_WORDS.get(seg.kind, "value") if seg.kind else "value"
            label = (seg.label or seg.text or what).strip()[:60]
            message = (
                f"{what.capitalize()} `{label}` changes per request and sits ahead of the conversation "
                f"history: every turn after it is re-prefilled ({impact.describe()}). "
                "Move it into the last user message."
            )
            fix = Fix(
                f"Move `{label}` into the last user message",
                (),
                Applicability.DISPLAY_ONLY,
                "move-to-last-user",
                seg.location.path,
            )
            where = seg.site or seg.location  # a value in an included template: the include to move
            finding = self.finding(where, impact, ctx, message=message, cap=severity_cap(seg))
            finding = replace(decorate(finding, layout, seg, None), fix=fix)
            yield with_also(finding, [s for _, s in hits[1:]])
