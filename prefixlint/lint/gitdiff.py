"""``--changed-since REF``: the lines changed in the working tree since a git ref.

Lines are taken from ``git diff --unified=0 REF`` (added or modified lines of the working tree,
staged or not); untracked files that git does not ignore count as changed in full.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


class GitError(Exception):
    """git is missing, the directory is not a repository, or the ref is unknown."""


def _git(args: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from exc
    if proc.returncode != 0:
        raise GitError(proc.stderr.strip() or f"git {' '.join(args)} failed")
    return proc.stdout


def changed_lines(ref: str, cwd: Path | None = None) -> dict[str, set[int]]:
    """``{real path: changed line numbers}`` for every file changed since ``ref``."""
    cwd = cwd or Path.cwd()
    top = Path(_git(["rev-parse", "--show-toplevel"], cwd).strip())
    _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
    diff = _git(["diff", "--no-color", "--no-ext-diff", "--unified=0", "--relative", ref, "--"], top)
    out: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            if name == "/dev/null":
                current = None
                continue
            name = name[2:] if name.startswith("b/") else name
            current = out.setdefault(os.path.realpath(top / name), set())
        elif line.startswith("@@") and current is not None:
            m = _HUNK.match(line)
            if m:
                start, count = int(m.group(1)), int(m.group(2) or 1)
                current.update(range(start, start + count))
    for name in _git(["ls-files", "--others", "--exclude-standard"], top).splitlines():
        path = top / name
        try:
            n = path.read_bytes().count(b"\n") + 1
        except OSError:
            continue
        out[os.path.realpath(path)] = set(range(1, n + 1))
    return out
