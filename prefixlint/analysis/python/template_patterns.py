"""Template names built at run time: ``env.get_template(f"{name}.md")`` and the files it can load.

The f-string becomes a glob (its literal parts kept, each replacement field a ``*``); the project's
files under the loader's folders that match it are the candidates. One render stands for them all,
so the candidate reported is the one that costs most: the file whose first Jinja expression has
the most text after it.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from pathlib import Path

import libcst as cst

_FIRST_EXPRESSION = re.compile(r"\{\{-?\s*[A-Za-z_]")
_MAX_CANDIDATES = 200


def pattern_of(node: cst.FormattedString) -> str | None:
    """The glob a formatted template name matches, or None when it has no literal part."""
    parts: list[str] = []
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            parts.append(re.sub(r"([*?\[])", r"[\1]", part.value))
        elif not parts or parts[-1] != "*":
            parts.append("*")
    pattern = "".join(parts)
    return pattern if pattern.strip("*") else None


def candidates(pattern: str, dirs: Sequence[Path]) -> list[Path]:
    """Files under ``dirs`` whose path relative to that folder matches ``pattern``."""
    found: list[Path] = []
    seen: set[Path] = set()
    depth = pattern.count("/")
    for base in dirs:
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            rel_dir = Path(dirpath).relative_to(base)
            level = len(rel_dir.parts)
            if level >= depth:
                dirnames[:] = []
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                rel = (rel_dir / name).as_posix()
                path = Path(dirpath, name).resolve()
                if path not in seen and fnmatch.fnmatchcase(rel, pattern):
                    seen.add(path)
                    found.append(path)
                    if len(found) >= _MAX_CANDIDATES:
                        return found
    return found


def _text_after_first_expression(path: Path) -> int:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return -1
    m = _FIRST_EXPRESSION.search(text)
    return len(text) - m.end() if m else -1


def best_candidate(pattern: str, dirs: Sequence[Path]) -> Path | None:
    """The matching file whose first expression precedes the most text (ties: the first by path)."""
    found = candidates(pattern, dirs)
    if not found:
        return None
    return max(sorted(found), key=_text_after_first_expression)
