"""Prompt files found by the markers that code replaces in them (``text.replace("{goals}", goals)``).

Some applications read a prompt file once, keep its text somewhere the analyzer cannot follow (a
database row, a cache), and fill it later with ``str.replace`` in a helper that receives the text
as a parameter. The markers that helper replaces (``{goals}``, ``{tools}``) name the files it can
fill: :func:`files_with_markers` returns the project's prompt files that hold at least two of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from prefixlint.analysis.templates.files import _index

_SUFFIXES = (".txt", ".md", ".prompt", ".tmpl", ".j2", ".jinja", ".jinja2", ".mustache", ".hbs")
_MAX_BYTES = 256_000
_MARKER = re.compile(r"^(?:\{\{?\s*[A-Za-z_]\w*\s*\}?\}|\$\{?[A-Za-z_]\w*\}?|<[A-Za-z_]\w*>)$")
# Markers a file must hold to be taken for the one a helper fills (one is too common: ``{date}``).
MIN_SHARED_MARKERS = 2


def is_marker(text: str) -> bool:
    """True for a placeholder-shaped marker: ``{x}``, ``{{ x }}``, ``$X``, ``${X}``, ``<X>``."""
    return bool(_MARKER.match(text))


def files_with_markers(root: str, markers: Iterable[str]) -> list[tuple[str, str]]:
    """``(path, text)`` of the prompt files under ``root`` holding at least two of ``markers``."""
    wanted = {m for m in markers if is_marker(m)}
    if len(wanted) < MIN_SHARED_MARKERS:
        return []
    return [
        (path, text)
        for path, text in _prompt_files(root)
        if sum(1 for m in wanted if m in text) >= MIN_SHARED_MARKERS
    ]


@lru_cache(maxsize=4)
def _prompt_files(root: str) -> tuple[tuple[str, str], ...]:
    """Text files under ``root`` whose suffix is a prompt file's, and that hold a ``{``, ``$`` or ``<``."""
    out = []
    for name, paths in sorted(_index(root).items()):
        if not name.lower().endswith(_SUFFIXES):
            continue
        for path in paths:
            try:
                with open(path, "rb") as f:
                    data = f.read(_MAX_BYTES + 1)
                if len(data) > _MAX_BYTES:
                    continue
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if any(c in text for c in "{$<"):
                out.append((path, text))
    return tuple(out)
