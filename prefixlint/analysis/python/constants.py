"""Module-level tables of prompts: ``PROMPTS["qa"]`` read in one module, defined in another.

:mod:`.collect` records ``NAME = {"key": value}`` and ``NAME["key"] = value`` at module level; this
finds the value an item read refers to (``PROMPTS["qa"]``, ``prompt.PROMPTS["qa"]``, a table imported
with ``from .prompt import PROMPTS``), so its template text and placeholders are known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.collect import ModuleInfo, evaluated
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.resolve import find_param, local_ops

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator


def _key(node: cst.Subscript) -> str | None:
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
        key = evaluated(index.value)
        return key if isinstance(key, str) else None
    return None


def table_item(ev: Evaluator, node: cst.Subscript, env: Env) -> tuple[cst.BaseExpression, ModuleInfo] | None:
    """The value of a module-level table's item that ``node`` reads, and the module defining it."""
    key = _key(node)
    if key is None:
        return None
    base = node.value
    mod = env.mod
    if isinstance(base, cst.Name):
        name = base.value
        if name in env.bindings:
            return None
        if env.func is not None and (local_ops(mod, env.func).get(name) or find_param(env.func, name)):
            return None
        table, where = mod.dict_items.get(name), mod
        if table is None and name in mod.imports:
            got = ev._imported(mod, name)
            if got is not None and got[1] is not None:
                table, where = got[0].dict_items.get(got[1]), got[0]
    elif isinstance(base, cst.Attribute) and isinstance(base.value, cst.Name):
        if base.value.value not in mod.imports:
            return None
        got = ev._imported(mod, base.value.value)
        if got is None or got[1] is not None:
            return None
        table, where = got[0].dict_items.get(base.attr.value), got[0]
    else:
        return None
    if table is None or key not in table:
        return None
    return table[key], where
