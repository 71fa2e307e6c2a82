"""Text edits and fixes, shared by the layout (fix hints) and by findings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Applicability(str, Enum):
    """Ruff's fix safety: safe fixes apply with ``--fix``, unsafe ones need ``--unsafe-fixes``."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 0-based character offsets of a file."""

    start: int
    end: int
    content: str


@dataclass(frozen=True)
class Fix:
    """Non-overlapping edits to one file, applied together or not at all.

    ``purpose`` names what the fix does (``sort-keys``, ``move-to-end``, ...) so a rule can pick
    the fix hint an analyzer attached to a segment.
    """

    message: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE
    purpose: str = ""
    path: str = ""


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits to ``text``; raises ValueError if two edits overlap."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    out: list[str] = []
    pos = 0
    for edit in ordered:
        if edit.start < pos:
            raise ValueError(f"overlapping edits at offset {edit.start}")
        out.append(text[pos : edit.start])
        out.append(edit.content)
        pos = edit.end
    out.append(text[pos:])
    return "".join(out)
