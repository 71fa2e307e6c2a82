"""``libcst.parse_module`` without re-validating every node the parser builds.

libcst validates each node in its dataclass ``__post_init__`` (``CSTNode._validate``): a check meant
for trees built by hand, which a parsed tree passes by construction (the native parser has already
rejected invalid syntax). It costs about a quarter of a parse, and a one-file check parses every
project module that its prompts flow through; libcst's own comment on ``__post_init__`` notes the
cost. Only a single-threaded process skips it (another thread building nodes meanwhile would skip
its checks too), and nodes built outside :func:`parse_module` (fixes) are always validated.
"""

from __future__ import annotations

import sys

import libcst as cst
from libcst._nodes.base import CSTNode


def _no_validation(self: CSTNode) -> None:
    """Stands in for ``CSTNode.__post_init__`` while the parser builds a tree."""


def parse_module(text: str) -> cst.Module:
    """``libcst.parse_module(text)``; raises ``libcst.ParserSyntaxError`` as it does."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return cst.parse_module(text)
    validate = CSTNode.__dict__.get("__post_init__")
    if validate is None:  # a libcst that validates elsewhere: nothing to skip
        return cst.parse_module(text)
    CSTNode.__post_init__ = _no_validation  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        CSTNode.__post_init__ = validate  # type: ignore[method-assign]
