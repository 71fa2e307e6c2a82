"""``--changed-since REF``: the lines changed in the working tree since a git ref.

Lines are taken from ``git diff --unified=0 REF`` (added or modified lines of the working tree,
staged or not); untracked files that git does not ignore count as changed in full. git runs in the
repository of each path being linted, wherever the current directory is. File names are read with
``core.quotePath=false`` and C-style quoted names (a tab, a newline, a quote) are unquoted, so a file
whose name is not ASCII keeps its findings.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class GitError(Exception):
    """git is missing, the directory is not a repository, or the ref is unknown."""


def _git(args: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(
            ["git", "-c", "core.quotePath=false", *args],
            cwd=cwd,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from exc
    if proc.returncode != 0:
        message = os.fsdecode(proc.stderr).strip()
        raise GitError(message or f"git {' '.join(args)} failed")
    return os.fsdecode(proc.stdout)


def unquote(name: str) -> str:
    """A path as git prints it in a diff header, without C-style quotes and escapes."""
    if not (len(name) >= 2 and name.startswith('"') and name.endswith('"')):
        return name
    out = bytearray()
    body = name[1:-1]
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if body[i + 1 : i + 4].isdigit() and len(body[i + 1 : i + 4]) == 3:
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
        out.extend(os.fsencode(ch))
        i += 1
    return os.fsdecode(bytes(out))


def _header_name(rest: str) -> str | None:
    """The file named by a ``+++ `` header line (without the ``+++ ``), or None for ``/dev/null``."""
    if rest.startswith('"'):
        rest = unquote(rest.rstrip("\t"))
    elif rest.endswith("\t"):  # git adds a tab after a name that holds a space
        rest = rest[:-1]
    if rest == "/dev/null":
        return None
    return rest[2:] if rest.startswith("b/") else rest


def repository_top(path: Path) -> Path:
    """The top folder of the git work tree that holds ``path`` (a file or a folder)."""
    here = path if path.is_dir() else path.parent
    return Path(_git(["rev-parse", "--show-toplevel"], here).strip())


def changed_lines(ref: str, paths: Iterable[Path] | None = None) -> dict[str, set[int]]:
    """``{real path: changed line numbers}`` for every file changed since ``ref``.

    ``paths`` are the files and folders being linted (default: the current directory); git runs in
    the repository of each.
    """
    tops: list[Path] = []
    for path in paths or [Path.cwd()]:
        top = repository_top(Path(os.path.abspath(path)))
        if top not in tops:
            tops.append(top)
    out: dict[str, set[int]] = {}
    for top in tops:
        out.update(_changed_in(ref, top))
    return out


def _changed_in(ref: str, top: Path) -> dict[str, set[int]]:
    _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
    diff = _git(
        [
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--unified=0",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            ref,
            "--",
        ],
        top,
    )
    out: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in diff.split("\n"):
        if line.startswith("+++ "):
            name = _header_name(line[4:])
            current = None if name is None else out.setdefault(os.path.realpath(top / name), set())
        elif line.startswith("@@") and current is not None:
            m = _HUNK.match(line)
            if m:
                start, count = int(m.group(1)), int(m.group(2) or 1)
                current.update(range(start, start + count))
    for name in _git(["ls-files", "-z", "--others", "--exclude-standard"], top).split("\0"):
        if not name:
            continue
        path = top / name
        try:
            n = path.read_bytes().count(b"\n") + 1
        except OSError:
            continue
        out[os.path.realpath(path)] = set(range(1, n + 1))
    return out
