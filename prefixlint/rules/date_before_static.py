"""PFX111: a date (a time value that changes once a day or less often) ahead of static text."""

from __future__ import annotations

from prefixlint.model.findings import Impact, Severity
from prefixlint.model.layout import Segment, Timing
from prefixlint.rules._dynamic import DynamicBeforeStatic
from prefixlint.rules._examples import bad, chat
from prefixlint.rules.base import Example
from prefixlint.rules.cost import coarse


class DateBeforeStatic(DynamicBeforeStatic):
    """A date computed per request sits ahead of static prompt text.

    A date (``date.today()``, ``.date()``, ``strftime("%Y-%m-%d")``, ``"%B %d, %Y"``) changes once a
    day, so it costs about one full miss per cache per day: small next to a value that changes on
    every request, but real for a large prompt with little traffic, or with a cache that lives for
    hours (DeepSeek's disk cache, OpenAI's 24-hour retention). A month or a year is reported here
    too, and says so, as is a flag computed from a date (``date.today().weekday() >= 5``): it
    changes at most as often as the date, and the finding names the date it reads. Low severity and
    on by default; a team that accepts one miss a day turns it off with ``ignore = ["PFX111"]``.
    Timestamps finer than a day are PFX101.

    Fix: put the static text first and the date after it, or in the last user message. The unsafe
    fix moves the line that holds the value to the end.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX111"
    name = "date-before-static"
    default_severity = Severity.LOW

    def matches(self, seg: Segment) -> bool:
        return seg.timing is Timing.REQUEST and coarse(seg)

    def advice(self, seg: Segment, impact: Impact) -> str:
        return super().advice(seg, impact)[:-1] + " (or ignore PFX111 if one miss a day is acceptable)."

    INVALID = [
        bad(
            chat('f"Today is {date.today()}.\\n" + RULES', imports="from datetime import date\n"),
            fixed=chat('RULES + f"Today is {date.today()}.\\n"', imports="from datetime import date\n"),
            unsafe=True,
        ),
    ]
    VALID = [
        Example(
            chat('RULES + f"\\nToday is {date.today()}."', imports="from datetime import date\n"),
            note="the date comes after the static text",
        ),
        Example(
            chat("RULES", user='f"(today: {date.today()}) {q}"', imports="from datetime import date\n"),
            note="the date is in the last user message",
        ),
    ]
