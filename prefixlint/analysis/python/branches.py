"""Branches that never run for the call being evaluated: ``if flag:`` on a parameter left falsy.

A prompt builder appends a block under ``if use_extra_rules:``, a keyword that defaults to ``False``
(or ``None``, ``0``, ``""``).
Evaluated for a call that leaves it at its default (or passes a falsy literal), the block is not part
of the prompt; outside any one call, it is dead only when every visible caller of the function leaves
it falsy. With no caller in view (a public function), the branch may run and is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.callers import arg_nodes, callers_of
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.resolve import Op, find_param, local_ops
from prefixlint.analysis.python.sources import is_static, join_text

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator

# Texts of a static value that Python reads as false.
_FALSY = frozenset({"False", "None", "", "0", "[]", "{}", "()"})


def dead(ev: Evaluator, op: Op, env: Env) -> bool:
    """True when ``op`` sits in the body of an ``if <param>:`` that is false for this evaluation."""
    if env.func is None:
        return False
    node: cst.CSTNode = op.node
    parents = env.mod.parents
    while True:
        parent = parents.get(id(node))
        if parent is None or isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(parent, cst.If) and parent.body is node and _false_flag(ev, parent.test, env):
            return True
        node = parent


def _false_flag(ev: Evaluator, test: cst.BaseExpression, env: Env) -> bool:
    """True for a test that is a parameter of ``env.func`` with a false default, never reassigned,
    and false for this evaluation."""
    if not isinstance(test, cst.Name) or env.func is None:
        return False
    param = find_param(env.func, test.value)
    if param is None or param.star or not _false_literal(param.default):
        return False
    if test.value in local_ops(env.mod, env.func):
        return False
    if test.value in env.bindings:
        return _falsy(env.bindings[test.value])
    if id(env.func) in env.active:  # inside one call that did not pass it: its default
        return True
    memo = ev.project.summaries.setdefault("false_flags", {})
    key = (env.mod.path, id(env.func), test.value)
    hit = memo.get(key)
    if hit is None or hit[0] is not env.func:
        hit = memo[key] = (env.func, _false_for_every_caller(ev, param, env))
    return hit[1]


def _false_literal(node: cst.BaseExpression | None) -> bool:
    """``False``, ``None``, ``0`` or ``""`` written as a default."""
    if isinstance(node, cst.Name):
        return node.value in ("False", "None")
    if isinstance(node, cst.Integer):
        return node.value == "0"
    return isinstance(node, cst.SimpleString) and node.value in ('""', "''")


def _false_for_every_caller(ev: Evaluator, param: cst.Param, env: Env) -> bool:
    fdef = env.func
    assert fdef is not None
    callers = callers_of(ev, env.mod, fdef, env.cls)
    if not callers:
        return False
    is_method = env.cls is not None and not any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in fdef.decorators
    )
    for cmod, site in callers:
        cenv = Env(mod=cmod, func=site.func, cls=site.cls, pos=cmod.pos(site.node), depth=env.depth + 1)
        passed = arg_nodes(fdef, site.node, cenv, skip_self=is_method)
        if param.name.value in passed:
            node, where = passed[param.name.value]
            value = ev.text(node, where)
        elif any(a.star for a in site.node.args):
            return False  # ``f(**options)`` may set it
        else:
            continue  # left at its false default
        if not _falsy(value):
            return False
    return True


def _falsy(segs: list) -> bool:
    return is_static(segs) and join_text(segs).strip() in _FALSY
