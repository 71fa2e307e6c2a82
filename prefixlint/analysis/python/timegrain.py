"""Time granularity: how often the text of a time value changes, read from calls and format strings.

``datetime.now()`` changes every microsecond, ``.strftime("%Y-%m-%d")`` once a day, ``f"{now:%H:%M}"``
once a minute. The call that makes a time value gives its first granularity (catalog data); each
step that formats or truncates it refines it here. Cardinality follows: a value that changes more
than once a day takes a new text on about every request, a date one text a day.
"""

from __future__ import annotations

import re

from prefixlint.model.layout import Cardinality, Granularity

# Finest first: a format string changes as often as its finest field.
ORDER = (
    Granularity.SUB_SECOND,
    Granularity.SECOND,
    Granularity.MINUTE,
    Granularity.HOUR,
    Granularity.DAY,
    Granularity.MONTH,
    Granularity.YEAR,
)

# strftime directives (C99, POSIX and glibc), by the granularity of the field they print.
_DIRECTIVES: dict[str, Granularity] = {
    **dict.fromkeys("f", Granularity.SUB_SECOND),
    **dict.fromkeys("SsXcTr+", Granularity.SECOND),
    **dict.fromkeys("MR", Granularity.MINUTE),
    **dict.fromkeys("HIkl", Granularity.HOUR),
    # weeks (UWV) change more often than months: counted as days, the finer of the two
    **dict.fromkeys("dejaAwuxDFUWV", Granularity.DAY),
    **dict.fromkeys("mbBh", Granularity.MONTH),
    **dict.fromkeys("YyGgC", Granularity.YEAR),
}
_DIRECTIVE = re.compile(r"%[-_0^#]?[0-9]*([A-Za-z+%])")

# ``isoformat(timespec=...)``
_TIMESPECS = {
    "hours": Granularity.HOUR,
    "minutes": Granularity.MINUTE,
    "seconds": Granularity.SECOND,
    "milliseconds": Granularity.SUB_SECOND,
    "microseconds": Granularity.SUB_SECOND,
}

# ``dt.year``, ``dt.minute``...: the field changes as often as its unit.
ATTRIBUTES = {
    "year": Granularity.YEAR,
    "month": Granularity.MONTH,
    "day": Granularity.DAY,
    "hour": Granularity.HOUR,
    "minute": Granularity.MINUTE,
    "second": Granularity.SECOND,
    "microsecond": Granularity.SUB_SECOND,
}

# Methods of a date or datetime that make a coarser value whatever the format.
_METHODS = {
    "date": Granularity.DAY,
    "weekday": Granularity.DAY,
    "isoweekday": Granularity.DAY,
    "toordinal": Granularity.DAY,
    "ctime": Granularity.SECOND,
}

# ``dt.replace(microsecond=0)``: zeroing each field in turn makes the value coarser.
_ZEROED = (
    ("microsecond", Granularity.SECOND),
    ("second", Granularity.MINUTE),
    ("minute", Granularity.HOUR),
    ("hour", Granularity.DAY),
)

# ``iso[:10]``: a prefix of an ISO 8601 text (``2026-12-02T19:13:46.123``) of this length.
_ISO_PREFIXES = {4: Granularity.YEAR, 7: Granularity.MONTH, 10: Granularity.DAY, 13: Granularity.HOUR}
_ISO_PREFIXES.update({16: Granularity.MINUTE, 19: Granularity.SECOND})


def finest(grains: list[Granularity | None]) -> Granularity | None:
    """The finest of ``grains`` (None when none is known)."""
    known = [g for g in grains if g is not None]
    return min(known, key=ORDER.index) if known else None


def strftime_granularity(fmt: str) -> Granularity | None:
    """The granularity of a strftime format (``"%B %d, %Y"`` -> DAY); None when it has no field."""
    return finest([_DIRECTIVES.get(m.group(1)) for m in _DIRECTIVE.finditer(fmt)])


def has_directive(fmt: str) -> bool:
    """True when ``fmt`` holds a strftime field (an f-string spec such as ``%Y-%m-%d``)."""
    return strftime_granularity(fmt) is not None


def method_granularity(method: str, current: Granularity | None) -> Granularity | None:
    """The granularity after ``value.method()`` for methods whose result does not depend on arguments."""
    got = _METHODS.get(method)
    if got is None:
        return current
    # a coarser view never makes a value finer: ``date.today().ctime()`` still changes once a day
    return coarser(got, current)


def timespec_granularity(timespec: str, current: Granularity | None) -> Granularity | None:
    """The granularity of ``isoformat(timespec=timespec)`` of a value of granularity ``current``."""
    got = _TIMESPECS.get(timespec)
    return current if got is None else coarser(got, current)


def replace_granularity(zeroed: set[str], current: Granularity | None) -> Granularity | None:
    """The granularity of ``dt.replace(**{field: 0 for field in zeroed})``."""
    got = None
    for name, grain in _ZEROED:
        if name not in zeroed:
            break
        got = grain
    return current if got is None else coarser(got, current)


def iso_prefix_granularity(length: int, current: Granularity | None) -> Granularity | None:
    """The granularity of the first ``length`` characters of an ISO 8601 time text."""
    got = _ISO_PREFIXES.get(length)
    return current if got is None else coarser(got, current)


def coarser(a: Granularity, b: Granularity | None) -> Granularity:
    """The coarser of two granularities (``b`` may be unknown)."""
    if b is None:
        return a
    return max(a, b, key=ORDER.index)


def cardinality_of(grain: Granularity | None) -> Cardinality | None:
    """Distinct texts while the cache stays warm: a new one on every request below a day, few above."""
    if grain is None:
        return None
    return Cardinality.PER_REQUEST if grain.sub_day else Cardinality.FEW
