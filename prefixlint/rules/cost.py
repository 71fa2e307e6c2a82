"""What a dynamic value costs the cache, by how many texts it takes: words for the message and a
severity ceiling (the cost model of the design notes).

A value that takes a new text on every request makes every request miss. A date takes one text a
day (about one full miss per cache per day); a value with a few texts (a locale, a plan tier, a
flag) splits the cache into a few warm copies; a user id splits it per user. The analysis reads
:attr:`Segment.granularity` and :attr:`Segment.cardinality` from the code; where it leaves the
cardinality unset, the value's kind says what is known about it (a user's identity is per user;
retrieved context, tool output, random values and the user's input differ on every request; an id may be per
request or per session, so it is not claimed), and otherwise
nothing is claimed.
"""

from __future__ import annotations

from prefixlint.model.findings import Severity
from prefixlint.model.layout import Cardinality, DynamicKind, Granularity, Segment, Timing

_GRANULARITY_WORDS = {
    Granularity.SUB_SECOND: "to the sub-second",
    Granularity.SECOND: "to the second",
    Granularity.MINUTE: "to the minute",
    Granularity.HOUR: "to the hour",
    Granularity.DAY: "a date",
    Granularity.MONTH: "a month",
    Granularity.YEAR: "a year",
}
_CHANGES = {
    Granularity.SUB_SECOND: "it changes on every request, so every request misses",
    Granularity.SECOND: "it changes on every request, so every request misses",
    Granularity.MINUTE: "it changes every minute, so nearly every request misses",
    Granularity.HOUR: "it changes every hour, about one full miss per cache per hour",
    Granularity.DAY: "it changes once a day, about one full miss per cache per day",
    Granularity.MONTH: "it changes once a month, about one full miss per cache per month",
    Granularity.YEAR: "it changes once a year",
}
_KIND_CARDINALITY = {
    DynamicKind.USER_IDENTITY: Cardinality.PER_USER,
    DynamicKind.RANDOM: Cardinality.PER_REQUEST,
    DynamicKind.RETRIEVED_CONTEXT: Cardinality.PER_REQUEST,
    DynamicKind.TOOL_OUTPUT: Cardinality.PER_REQUEST,
    DynamicKind.USER_INPUT: Cardinality.PER_REQUEST,
}
_CARDINALITY_WORDS = {
    Cardinality.FEW: "it takes a few values, so the cache splits into a few warm copies",
    Cardinality.PER_USER: "it takes one value per user, so the cache splits per user",
    Cardinality.PER_SESSION: "it takes one value per conversation, so each conversation starts cold",
    Cardinality.PER_REQUEST: "it changes on every request, so every request misses",
}
# The most a finding can weigh when the value takes this many texts.
_CARDINALITY_CAP = {
    Cardinality.FEW: Severity.LOW,
    Cardinality.PER_USER: Severity.MEDIUM,
    Cardinality.PER_SESSION: Severity.MEDIUM,
    Cardinality.PER_REQUEST: None,
}


def coarse(seg: Segment) -> bool:
    """True for a time value that changes at most once a day (a date, a month, a year)."""
    return seg.granularity is not None and not seg.granularity.sub_day


def cardinality(seg: Segment) -> Cardinality | None:
    """How many texts the value takes: read by the analysis, else implied by its kind or its
    granularity, else None (not known, and then not claimed)."""
    if seg.cardinality is not None:
        return seg.cardinality
    if seg.granularity is not None:
        return Cardinality.PER_REQUEST if seg.granularity.sub_day else None
    if seg.timing is Timing.REQUEST:
        return _KIND_CARDINALITY.get(seg.kind) if seg.kind else None
    return None


def granularity_words(seg: Segment) -> str:
    """`` (to the second)`` for a time value whose granularity is known, else ``""``."""
    return f" ({_GRANULARITY_WORDS[seg.granularity]})" if seg.granularity is not None else ""


def _implied(grain: Granularity) -> Cardinality:
    """The cardinality a time value's granularity implies: a new text on about every request below a
    day, a few texts (one a day, a month, a year) above."""
    return Cardinality.PER_REQUEST if grain.sub_day else Cardinality.FEW


def cost_words(seg: Segment) -> str:
    """How often the value changes and what that costs, or ``""`` when the code does not tell."""
    if seg.granularity is not None and seg.cardinality in (None, _implied(seg.granularity)):
        return _CHANGES[seg.granularity]  # a date says "once a day", not "a few values"
    card = cardinality(seg)
    return _CARDINALITY_WORDS[card] if card is not None else ""


def severity_cap(seg: Segment) -> Severity | None:
    """The highest severity a value of this cost can reach (None: no ceiling beyond the rule's)."""
    if coarse(seg) or seg.granularity is Granularity.HOUR:
        return Severity.LOW
    card = cardinality(seg)
    return _CARDINALITY_CAP[card] if card is not None else None
