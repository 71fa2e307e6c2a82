"""Template files: which files are templates, of which style, and where an included name lives."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path, PurePosixPath

from prefixlint.model.globs import glob_match
from prefixlint.model.settings import Settings

# Styles a file can have. "plain" is a prompt file with ``{var}`` or ``{{var}}`` placeholders whose
# renderer is unknown; a Python caller that formats it says "format" instead.
_SUFFIX_STYLES = {
    ".j2": "jinja",
    ".jinja": "jinja",
    ".jinja2": "jinja",
    ".prompty": "prompty",
    ".prompt": "plain",
    ".mustache": "mustache",
    ".hbs": "mustache",
}

_SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        "site-packages",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "build",
        "dist",
    }
)
_MAX_INDEXED = 100_000


def template_style_for(path: Path, settings: Settings) -> str | None:
    """The template style of a file by its suffix and the config globs, or None if it is not one.

    ``plain-prompt-globs`` give "plain"; ``template-globs`` give the suffix's style (``.prompty`` ->
    "prompty", ``.prompt`` -> "plain", anything else the config names -> "jinja"). Globs are read as
    :mod:`prefixlint.model.globs` says (gitignore syntax, relative to the config's folder).
    """
    path = Path(path)
    full = os.path.abspath(path)
    if glob_match(settings.plain_prompt_globs, full, settings.root):
        return "plain"
    if glob_match(settings.template_globs, full, settings.root):
        return _SUFFIX_STYLES.get(path.suffix.lower(), "jinja")
    return None


@lru_cache(maxsize=16)
def _index(root: str) -> dict[str, tuple[str, ...]]:
    """Every file under ``root`` by base name (skipping virtualenvs, VCS and build folders)."""
    found: dict[str, list[str]] = {}
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            found.setdefault(name, []).append(os.path.join(dirpath, name))
            count += 1
        if count > _MAX_INDEXED:
            break
    return {k: tuple(v) for k, v in found.items()}


def files_with_stem(root: Path, stem: str) -> tuple[str, ...]:
    """Files under ``root`` whose name up to its first dot is ``stem`` (``review.prompt``: ``review``)."""
    index = _index(str(Path(root).resolve()))
    return tuple(p for name, paths in index.items() if name.split(".", 1)[0] == stem for p in paths)


def clear_caches() -> None:
    """Forget the file index and parsed templates (for long-running processes and tests)."""
    _index.cache_clear()
    from prefixlint.analysis.templates import jinja_parse as jinja

    jinja.parse_jinja.cache_clear()


def find_template(name: str, search_paths: Sequence[Path], root: Path) -> Path | None:
    """The file a template name refers to, as a jinja loader would find it.

    Looks in each search path (relative ones are taken from ``root``), then in ``root``, then for a
    unique-enough file under ``root`` whose path ends with ``name`` (the shortest such path wins).
    """
    if not name:
        return None
    root = Path(root)
    for base in (*search_paths, root):  # an absolute ``name`` stays itself under any base
        base = Path(base)
        candidate = (base if base.is_absolute() else root / base) / name
        if candidate.is_file():
            return candidate.resolve()
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if not parts or ".." in parts:
        return None
    tail = "/".join(parts)
    matches = [
        p for p in _index(str(root.resolve())).get(parts[-1], ()) if Path(p).as_posix().endswith("/" + tail)
    ]
    if not matches:
        return None
    return Path(min(matches, key=lambda p: (p.count(os.sep), p))).resolve()


def read_template(path: Path) -> str:
    """A template file's text with newlines normalised (raises OSError/UnicodeDecodeError)."""
    return normalize_newlines(path.read_text("utf-8"))


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")
