"""The one glob dialect of the config: gitignore patterns (``pathspec``), relative to the config's folder.

Every path glob in the settings (``exclude``, ``extend-exclude``, ``per-file-ignores``,
``template-globs``, ``plain-prompt-globs``, ``payload-globs``) is read the way a ``.gitignore`` in
the folder of the config file would read it:

- a pattern without a slash (``*.j2``) matches a file name at any depth;
- a pattern with a slash (``prompts/*.txt``, ``/top.j2``) is anchored at the config's folder;
- ``**`` spans folders (``**/prompts/*.md``), and ``prompts/`` matches everything under a folder;
- ``!pattern`` re-includes what an earlier pattern of the same list matched.

A file outside the config's folder (``--config`` elsewhere, standard input) is matched by its name.
A leading ``./`` is dropped (``./prompts/*.txt`` is ``prompts/*.txt``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any


def relative_to(path: str, root: str | None) -> str | None:
    """``path`` relative to ``root`` in POSIX form, or None when it is not below ``root``."""
    if not root:
        return None
    path = path.replace(os.sep, "/") if os.sep != "/" else path
    root = root.replace(os.sep, "/").rstrip("/") if os.sep != "/" else root.rstrip("/")
    if path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return None


@lru_cache(maxsize=256)
def compile_globs(globs: tuple[str, ...]) -> Callable[[str], bool]:
    """A matcher for ``globs`` (gitignore syntax) on a relative POSIX path."""
    import pathspec

    lines = [g[2:] if g.startswith("./") else g for g in globs]
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    patterns: list[Any] = [p for p in spec.patterns if getattr(p, "include", None) is not None]
    if patterns and all(p.include for p in patterns):
        # pathspec's own regular expressions, as one: a file is tested once instead of once per glob
        try:
            joined = "|".join(f"(?:{re.sub(r'[(][?]P<[^>]+>', '(?:', p.regex.pattern)})" for p in patterns)
            return re.compile(joined).match  # type: ignore[return-value]
        except (AttributeError, re.error):
            pass
    return spec.match_file


def glob_match(globs: Sequence[str], path: str, root: str | None) -> bool:
    """True when ``globs`` match ``path`` (absolute), read relative to ``root`` (the config's folder)."""
    if not globs:
        return False
    match = compile_globs(tuple(globs))
    rel = relative_to(path, root)
    if rel is None and root:
        rel = relative_to(os.path.realpath(path), os.path.realpath(root))  # a symlinked folder
    if rel is not None:
        return bool(match(rel))
    return bool(match(path.replace(os.sep, "/").rsplit("/", 1)[-1]))
