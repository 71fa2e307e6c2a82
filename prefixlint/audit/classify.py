"""What kind of text diverged between two requests, and where volatile values sit in a text.

Kinds: ``timestamp``, ``id``, ``number``, ``retrieved-text``, ``user-text``, ``tool-output``,
``reordered-tools``, ``tools-changed``, ``text``. A kind is named from the text around the first
differing character of the two pieces, so it says what changed, not what the piece is about.
"""

from __future__ import annotations

import re
from hashlib import blake2b

from prefixlint.model.layout import Section
from prefixlint.model.pieces import Piece

_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp][Mm])?"
    r"|\d{1,2}/\d{1,2}/\d{2,4}"
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? \d{1,2} [A-Z][a-z]+ \d{4}"
    r"|(?:January|February|March|April|May|June|July|August|September|October|November|December)"
    r" \d{1,2},? \d{4}"
)
_ID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|\b(?:req|request|trace|span|session|sess|msg|run|call|chatcmpl|resp|id)[-_:][A-Za-z0-9_-]{6,}"
    r"|\b[0-9a-fA-F]{16,}\b"
    r"|\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{20,}\b"
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# Values that change per request and are recognised without history (the "volatile" spans)
VOLATILE = re.compile(f"{_TIMESTAMP.pattern}|{_ID.pattern}")
_TOOL_ROLES = frozenset(("tool", "function", "function_call_output", "tool_result"))
_RETRIEVED = re.compile(
    r"(?i)\b(?:document|context|source|retrieved|passage|chunk|snippet|search result)s?\b"
)
_LONG_CHANGE = 200  # characters of differing text from which a change reads as retrieved text


def common_chars(a: str, b: str) -> int:
    """Length of the common prefix of two strings."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n
    while lo < hi:  # binary search on slices: the comparisons run in C
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def differing_span(a: str, b: str) -> tuple[int, int, int]:
    """(start, end in ``a``, end in ``b``) of the differing middle of two texts, widened to whole
    words so that ``10:15`` vs ``10:16`` reads as one value."""
    i = common_chars(a, b)
    j = 0
    la, lb = len(a), len(b)
    while j < la - i and j < lb - i and a[la - 1 - j] == b[lb - 1 - j]:
        j += 1
    while i > 0 and not a[i - 1].isspace():
        i -= 1
    ea, eb = la - j, lb - j
    while ea < la and eb < lb and not a[ea].isspace():
        ea += 1
        eb += 1
    return i, ea, eb


def _matches_at(pattern: re.Pattern[str], text: str, start: int, end: int) -> bool:
    lo = max(0, start - 40)
    for m in pattern.finditer(text, lo, min(len(text), end + 40)):
        if m.start() <= max(start, end - 1) and m.end() > start:
            return True
    return False


def tool_names(tools: object) -> list[str]:
    """Names of a request's tools, in order (OpenAI ``function.name`` or ``name``)."""
    out: list[str] = []
    if isinstance(tools, list):
        for t in tools:
            if isinstance(t, dict):
                fn = t.get("function")
                name = fn.get("name") if isinstance(fn, dict) else t.get("name")
                out.append(str(name) if name is not None else "")
    return out


def classify(old: Piece, new: Piece, old_tools: object = None, new_tools: object = None) -> str:
    """The kind of the first difference between two pieces at the same position (cut with text)."""
    if new.section is Section.TOOLS and new.path.startswith("tools"):
        a, b = tool_names(old_tools), tool_names(new_tools)
        if a != b and sorted(a) == sorted(b):
            return "reordered-tools"
        return "tools-changed"
    if new.role in _TOOL_ROLES or '"tool_result"' in (new.text or "")[:40]:
        return "tool-output"
    ta, tb = old.text or "", new.text or ""
    start, end_a, end_b = differing_span(ta, tb)
    if _matches_at(_TIMESTAMP, tb, start, end_b) or _matches_at(_TIMESTAMP, ta, start, end_a):
        return "timestamp"
    if _matches_at(_ID, tb, start, end_b) or _matches_at(_ID, ta, start, end_a):
        return "id"
    changed = max(end_a, end_b) - start
    if changed >= _LONG_CHANGE or (_RETRIEVED.search(tb, max(0, start - 200), start + 200) and changed > 40):
        return "retrieved-text"
    if _NUMBER.fullmatch(tb[start:end_b].strip(" .,;:()[]\"'")) or _NUMBER.fullmatch(
        ta[start:end_a].strip(" .,;:()[]\"'")
    ):
        return "number"
    if new.role == "user":
        return "user-text"
    return "text"


_DIGITS = re.compile(r"\d+")
_WINDOW = 48  # characters around a run of digits in which a volatile value is looked for


def volatile_spans(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that hold a value recognised as per-request (a timestamp, an id).

    Every such value holds a digit, so the patterns run only in windows around runs of digits (a
    scan for digits is fast; the patterns over a whole long prompt are not).
    """
    windows: list[list[int]] = []
    for m in _DIGITS.finditer(text):
        lo, hi = max(0, m.start() - _WINDOW), min(len(text), m.end() + _WINDOW)
        if windows and lo <= windows[-1][1]:
            windows[-1][1] = hi
        else:
            windows.append([lo, hi])
    out: list[tuple[int, int]] = []
    for lo, hi in windows:
        while lo > 0 and not text[lo - 1].isspace():  # whole words at the edges
            lo -= 1
        while hi < len(text) and not text[hi].isspace():
            hi += 1
        for v in VOLATILE.finditer(text, lo, hi):
            if not out or v.start() >= out[-1][1]:
                out.append((v.start(), v.end()))
    return out


def redact(text: str | None) -> str | None:
    """The shape of ``text`` and a short hash, never the text: letters become ``a``/``A``, digits
    ``9``; spaces and punctuation stay (``'Xxxx: 9999-99-99'`` reads as a timestamp line)."""
    if text is None:
        return None
    shape = re.sub(r"[A-Z]", "A", re.sub(r"[a-z]", "a", re.sub(r"\d", "9", text)))
    shape = re.sub(r"[^\sA9a!-/:-@\[-`{-~]", "*", shape)  # other scripts: one mark a character
    digest = blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{shape} #{digest}"
