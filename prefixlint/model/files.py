"""Files on disk: atomic writes, and the stat signature that caches compare."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def file_key(path: str) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of ``path``, or None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def user_cache_dir() -> Path:
    """prefixlint's folder in the user's cache: ``$PREFIXLINT_CACHE_HOME``, ``$XDG_CACHE_HOME`` or
    ``~/.cache``, then ``prefixlint`` (the tokenizer's tables, the rule codes, libcst's code)."""
    root = os.environ.get("PREFIXLINT_CACHE_HOME") or os.environ.get("XDG_CACHE_HOME")
    return (Path(root) if root else Path.home() / ".cache") / "prefixlint"


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, keep_mode: bool = False) -> None:
    """Replace ``path`` with ``data`` through a temporary file and a rename: readers never see half a file.

    ``str`` data is written as UTF-8 bytes with newlines untouched. ``keep_mode`` keeps the permissions
    of the file being replaced. Raises ``OSError``; the temporary file is removed on any failure.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    blob = data.encode("utf-8") if isinstance(data, str) else data
    mode = os.stat(path).st_mode & 0o7777 if keep_mode else None
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".prefixlint.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
