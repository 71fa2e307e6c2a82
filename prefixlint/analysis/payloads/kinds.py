"""What kind of value differs between two texts: a timestamp, a uuid, key order, whitespace, text...

Used where requests are compared: ``prefixlint diff`` names the kind of value at the first divergence,
and sample alignment names the kind of each span that varies (which decides the rule that reports it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from prefixlint.model.layout import DynamicKind
from prefixlint.model.volatile_patterns import classify_values, find_volatile

_MAX_VALUE = 80


@dataclass(frozen=True)
class ValueKind:
    """The kind of a changed value, and how a message names it (``an ISO 8601 timestamp``)."""

    kind: DynamicKind
    what: str
    pattern: str | None = None


def value_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole value that characters ``[start, end)`` of ``text`` belong to.

    A volatile pattern (timestamp, uuid...) that overlaps them gives its extent; otherwise they grow
    to the surrounding run of non-space characters, at most :data:`_MAX_VALUE` characters.
    """
    while start < end and text[start].isspace():  # a token's leading space is not the value
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    for m in find_volatile(text, per_request_only=False):
        touches = m.start <= start <= m.end if start >= end else m.start < end and start < m.end
        if touches:
            return min(m.start, start), max(m.end, end)
    s, e = start, max(start, end)
    while s > 0 and e - s < _MAX_VALUE and not text[s - 1].isspace():
        s -= 1
    while e < len(text) and e - s < _MAX_VALUE and not text[e].isspace():
        e += 1
    return s, e


def kind_of_values(values: list[str], section: str = "") -> ValueKind:
    """The kind that every one of ``values`` (one per request) shares, from the volatile patterns."""
    pattern = classify_values(values)
    if pattern is not None:
        return ValueKind(pattern.kind, pattern.description, pattern.name)
    if section == "tools":
        return ValueKind(DynamicKind.UNKNOWN, "a tool definition")
    return ValueKind(DynamicKind.UNKNOWN, "text")


def kind_of_change(
    a: str | None, b: str | None, char: int, section: str = "", same_role: bool = True
) -> ValueKind:
    """The kind of change between two versions of a piece's text that first differ at ``char``.

    ``None`` stands for a piece that only the other request has.
    """
    if a is None or b is None:
        return ValueKind(DynamicKind.UNKNOWN, "content only one request has")
    if not same_role:
        return ValueKind(DynamicKind.UNKNOWN, "a message of another role")
    if a.split() == b.split():
        return ValueKind(DynamicKind.UNKNOWN, "whitespace")
    if _same_json(a, b):
        return ValueKind(DynamicKind.UNKNOWN, "key order (the same JSON data serialized differently)")
    end_a, end_b = _diff_ends(a, b, char)
    sa, ea = value_around(a, char, end_a)
    sb, eb = value_around(b, char, end_b)
    return kind_of_values([a[sa:ea], b[sb:eb]], section)


def _diff_ends(a: str, b: str, char: int) -> tuple[int, int]:
    """End of the differing region in each text (after the common suffix is taken off)."""
    n = 0
    limit = min(len(a), len(b)) - char
    while n < limit and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return max(char, len(a) - n), max(char, len(b) - n)


def _same_json(a: str, b: str) -> bool:
    if not (a[:1] in "{[" and b[:1] in "{["):
        return False
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return False
