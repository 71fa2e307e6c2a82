"""The call site of a request (``file:line``): the default template of drift and hit-rate alarms."""

from __future__ import annotations

import sys

_SKIP_DIRS: tuple[str, ...] = ()
_OWN_FILE: dict[str, bool] = {}  # file name -> inside this package, the SDKs or a wrapper
# Frames of function wrappers that sit between the user's code and ours: functools' (lru_cache,
# partial, wraps) and mutmut's trampolines, which wrap every function while mutation testing.
_WRAPPER_MARKS = ("functools", "/mutmut/")


def _skip_dirs() -> tuple[str, ...]:
    global _SKIP_DIRS
    if not _SKIP_DIRS:
        dirs = [__file__.rsplit("/", 1)[0]]
        for mod in ("openai", "anthropic"):
            m = sys.modules.get(mod)
            if m is not None and getattr(m, "__file__", None):
                dirs.append(m.__file__.rsplit("/", 1)[0])  # type: ignore[union-attr]
        _SKIP_DIRS = tuple(dirs)
    return _SKIP_DIRS


def call_site(depth: int = 3) -> str:
    """The first frame outside this package, the client SDKs and wrappers, as ``file:line``."""
    f = sys._getframe(depth)
    for _ in range(12):
        if f is None:
            break
        name = f.f_code.co_filename
        own = _OWN_FILE.get(name)
        if own is None:
            if len(_OWN_FILE) > 10_000:
                _OWN_FILE.clear()
            own = _OWN_FILE[name] = name.startswith(_skip_dirs()) or any(
                mark in name for mark in _WRAPPER_MARKS
            )
        if not own:
            return f"{name}:{f.f_lineno}"
        f = f.f_back
    return "unknown"
