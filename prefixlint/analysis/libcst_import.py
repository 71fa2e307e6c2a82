"""Import libcst reusing the code that its node classes compiled in an earlier run.

libcst defines about 200 node classes as frozen dataclasses. On import, :mod:`dataclasses` writes the
source of each class's generated methods (``__init__``, ``__setattr__``, ``__repr__``...) and compiles
it: about 600 compiles, over half of libcst's import and a fifth of a one-file check. The code depends
only on that source text and the interpreter, so it is kept in the user's cache folder (marshalled, as
Python keeps a module's ``.pyc``) under its text, and reused: the same code objects, not compiled
again. A cache that is missing, unreadable, of another interpreter or not the user's own is ignored
and written anew. What libcst defines does not change: a text not in the cache is compiled as before.

Importing this module imports libcst (the analyzer's package imports it first, on purpose).
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

from prefixlint.model.files import user_cache_dir, write_atomic

log = logging.getLogger(__name__)

FORMAT = 1  # of the cache file: (FORMAT, MAGIC_NUMBER, optimize level, {source text: code})

# What the import in this process did: code objects reused from the cache, and compiled
last_import = {"reused": 0, "compiled": 0}


def cache_file() -> Path:
    """Where the code is kept: one file per interpreter (bytecode format and ``-O`` level)."""
    tag = sys.implementation.cache_tag or sys.implementation.name
    return user_cache_dir() / "code" / f"libcst-{tag}-{MAGIC_NUMBER.hex()}-O{sys.flags.optimize}.marshal"


def load_code(path: Path) -> dict[str, CodeType]:
    """The code kept at ``path``; empty when there is none this interpreter may trust and run."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
                log.debug("%s ignored: not owned by this user, or writable by others", path)
                return {}
            data = marshal.loads(fh.read())
    except FileNotFoundError:
        return {}
    except (OSError, EOFError, ValueError, TypeError) as exc:
        log.debug("%s ignored: %s", path, exc)
        return {}
    if not (
        isinstance(data, tuple)
        and len(data) == 4
        and data[:3] == (FORMAT, MAGIC_NUMBER, sys.flags.optimize)
        and isinstance(data[3], dict)
    ):
        return {}
    code = data[3]
    if not all(type(k) is str and type(v) is CodeType for k, v in code.items()):
        return {}
    return code


def save_code(path: Path, code: dict[str, CodeType]) -> None:
    """Keep ``code`` at ``path`` (atomically); a read-only cache folder only costs the next run."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(path, marshal.dumps((FORMAT, MAGIC_NUMBER, sys.flags.optimize, code)))
    except (OSError, ValueError) as exc:
        log.debug("libcst code not kept at %s: %s", path, exc)


class _CodeReuse:
    """Stands in for ``exec`` in :mod:`dataclasses` while libcst is imported."""

    def __init__(self, known: dict[str, CodeType]) -> None:
        self.known = known
        self.used: dict[str, CodeType] = {}
        self.reused = 0
        self.compiled = 0

    def __call__(self, source: Any, /, globals: Any = None, locals: Any = None, **more: Any) -> None:
        if type(source) is not str or globals is None or more:  # not the call dataclasses makes
            if globals is None:  # ``exec`` as dataclasses would have called it: in its namespace
                globals = vars(dataclasses)
            exec(source, globals, locals, **more)
            return
        code = self.known.get(source)
        if code is None:
            # ``exec(text)`` in dataclasses compiles with dataclasses' own (no) future flags: not ours
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
        else:
            self.reused += 1
        self.used[source] = code
        exec(code, globals, locals)


def import_libcst() -> None:
    """Import libcst, reusing kept code for its dataclasses; keep what had to be compiled."""
    if "libcst" in sys.modules:
        return
    if "exec" in vars(dataclasses):  # a stand-in of someone else's: leave it alone
        importlib.import_module("libcst")
        return
    try:
        path = cache_file()
    except (OSError, RuntimeError, KeyError) as exc:  # no home folder to find (Path.home)
        log.debug("libcst imported without kept code: %s", exc)
        importlib.import_module("libcst")
        return
    reuse = _CodeReuse(load_code(path))
    dataclasses.exec = reuse  # type: ignore[attr-defined]  # the module's name shadows the builtin
    try:
        importlib.import_module("libcst")
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
    last_import.update(reused=reuse.reused, compiled=reuse.compiled)
    if reuse.compiled:  # a first run, or another libcst: the file then holds what this one uses
        save_code(path, reuse.used)


import_libcst()
