"""Which files ``prefixlint check`` reads: paths given, directory walks, excludes and ``.gitignore``."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefixlint.lint.checker import file_kind
from prefixlint.lint.config import SettingsResolver
from prefixlint.model.globs import compile_globs
from prefixlint.model.settings import Settings

DEFAULT_EXCLUDE = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pytest_cache",
    ".ruff_cache",
    ".prefixlint_cache",
    ".svn",
    ".tox",
    ".venv",
    "venv",
    "__pypackages__",
    "__pycache__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "*.egg-info",
)


# Words without which a Python file cannot build or send a prompt (raw bytes, any case unless marked).
# Library names cover sinks; the rest covers message lists, prompt variables and provider keywords.


class UsageError(Exception):
    """A bad path or option: reported on stderr with exit code 2."""


@dataclass(frozen=True)
class Target:
    """A file to lint, with its settings and kind (``python`` or a template style).

    ``error`` is set for a path that discovery could not read (a folder without permission): it is
    reported as a PFX001 finding on that path instead of being skipped.
    """

    path: str
    kind: str
    settings: Settings
    error: str | None = None


class _Ignore:
    """Exclude globs of one settings root (the config's glob dialect, :mod:`prefixlint.model.globs`)
    plus ``.gitignore`` files met while walking.

    ``pathspec`` is imported on first use: a tree without excludes or ``.gitignore`` never needs it.
    """

    @property
    def _pathspec(self) -> Any:
        import pathspec

        return pathspec

    def __init__(self) -> None:
        self._gitignores: dict[Path, Any] = {}

    def exclude_spec(self, settings: Settings) -> Any:
        """A matcher for the built-in excludes plus the user's (the config's glob dialect)."""
        return compile_globs((*DEFAULT_EXCLUDE, *settings.exclude, *settings.extend_exclude))

    def excluded(self, path: Path, settings: Settings, is_dir: bool) -> bool:
        match = self.exclude_spec(settings)
        root = Path(settings.root) if settings.root else None
        rel = _rel(path, root)
        suffix = "/" if is_dir else ""
        if rel is not None:
            return bool(match(rel + suffix))
        return bool(match(path.name + suffix))

    def gitignored(self, path: Path, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        for parent in path.parents:
            spec = self._gitignore(parent)
            if spec is not None:
                rel = path.relative_to(parent).as_posix() + suffix
                if spec.match_file(rel):
                    return True
            if (parent / ".git").exists():
                break
        return False

    def user_spec(self, settings: Settings) -> Any:
        """A matcher for the user's ``exclude``/``extend-exclude`` globs, or None when there are none."""
        globs = (*settings.exclude, *settings.extend_exclude)
        return compile_globs(globs) if globs else None

    def own_spec(self, directory: str) -> list[tuple[str, Any]]:
        """``[(directory, spec)]`` when ``directory`` has a ``.gitignore``."""
        if not os.path.isfile(f"{directory}/.gitignore"):
            return []
        spec = self._gitignore(Path(directory))
        return [(directory, spec)] if spec is not None else []

    def ancestor_specs(self, top: Path) -> list[tuple[str, Any]]:
        """``.gitignore`` specs of the directories above ``top``, up to the repository root."""
        if (top / ".git").exists():
            return []
        out: list[tuple[str, Any]] = []
        for parent in top.parents:
            spec = self._gitignore(parent)
            if spec is not None:
                out.append((str(parent), spec))
            if (parent / ".git").exists():
                break
        return out[::-1]

    def _gitignore(self, directory: Path) -> Any:
        if directory not in self._gitignores:
            spec = None
            try:
                lines = (directory / ".gitignore").read_text("utf-8", errors="replace").splitlines()
                spec = self._pathspec.GitIgnoreSpec.from_lines(lines)
            except OSError:
                pass
            self._gitignores[directory] = spec
        return self._gitignores[directory]


def _rel(path: Path, root: Path | None) -> str | None:
    if root is None:
        return None
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


DEFAULT_DIR_NAMES = frozenset(d for d in DEFAULT_EXCLUDE if "*" not in d)


def discover(
    paths: Sequence[Path],
    resolver: SettingsResolver,
    force_exclude: bool = False,
    unread: list[str] | None = None,
) -> list[Target]:
    """Files to lint under ``paths``: Python files, templates and request payloads, minus excludes
    and ``.gitignore``.

    A file named explicitly is linted even when excluded, unless ``force_exclude`` (pre-commit passes
    every staged file). An explicit file that no analyzer reads is appended to ``unread`` (the
    command reports it). The walk works on strings and checks ``.gitignore`` specs per directory: it
    must stay cheap for a warm run over thousands of files.
    """
    ignore = _Ignore()
    out: list[Target] = []
    seen: set[str] = set()

    def add(path: str, settings: Settings, kind: str | None, error: str | None = None) -> None:
        if kind is None or path in seen:
            return
        seen.add(path)
        out.append(Target(path, kind, settings, error))

    for given in paths:
        path = Path(os.path.abspath(given))
        if not path.exists() and not path.is_symlink():
            raise UsageError(f"{given}: No such file or directory")
        settings = resolver.for_path(path)
        if not path.is_dir():
            if force_exclude and (
                ignore.excluded(path, settings, False)
                or (settings.respect_gitignore and ignore.gitignored(path, False))
            ):
                continue
            kind = file_kind(str(path), settings, named=True)
            if kind is None and unread is not None:
                unread.append(str(given))
            add(str(path), settings, kind)
            continue
        _walk(str(path), resolver, ignore, add)
    return out


def _walk(top: str, resolver: SettingsResolver, ignore: _Ignore, add: Callable[..., None]) -> None:
    start = ignore.ancestor_specs(Path(top)) + ignore.own_spec(top)
    specs_of: dict[str, list[tuple[str, Any]]] = {top: start}

    def unreadable(exc: OSError) -> None:
        # A folder that cannot be listed is reported (PFX001 on the folder), never skipped silently.
        where = exc.filename or top
        reason = exc.strerror or str(exc)
        add(where, resolver.for_path(Path(where)), "folder", f"Cannot read directory: {reason}")

    for dirpath, dirnames, filenames in os.walk(top, onerror=unreadable):
        specs = specs_of.pop(dirpath, [])
        settings = resolver.for_path(Path(dirpath))
        user = ignore.user_spec(settings)
        root = settings.root or ""
        use_git = settings.respect_gitignore and bool(specs)
        keep = []
        for d in sorted(dirnames):
            if d in DEFAULT_DIR_NAMES or d.endswith(".egg-info"):
                continue
            full = f"{dirpath}/{d}"
            if user is not None and _user_excluded(user, full, root, True):
                continue
            if use_git and _git_match(specs, full, True):
                continue
            keep.append(d)
            specs_of[full] = specs + ignore.own_spec(full)
        dirnames[:] = keep
        for name in sorted(filenames):
            full = f"{dirpath}/{name}"
            kind = "python" if name.endswith((".py", ".pyi")) else file_kind(full, settings)
            if kind is None:
                continue
            if user is not None and _user_excluded(user, full, root, False):
                continue
            if use_git and _git_match(specs, full, False):
                continue
            add(full, settings, kind)


def _user_excluded(match: Any, full: str, root: str, is_dir: bool) -> bool:
    suffix = "/" if is_dir else ""
    if root and full.startswith(root + "/"):  # below the config's folder: relative to it
        return bool(match(full[len(root) + 1 :] + suffix))
    return bool(match(full.rsplit("/", 1)[-1] + suffix))  # elsewhere: by name


def _git_match(specs: list[tuple[str, Any]], full: str, is_dir: bool) -> bool:
    suffix = "/" if is_dir else ""
    for base, spec in specs:
        if full.startswith(base + "/") and spec.match_file(full[len(base) + 1 :] + suffix):
            return True
    return False
