"""Prompts given as callables: ``create_react_agent(model, prompt=lambda state: build(state))``.

An agent framework calls such a function on every step and sends what it returns: a string (the
system prompt) or the whole message list. The analyzer reads the callable's return value where the
prompt goes, evaluated per request, instead of the callable's source text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.env import Env
from prefixlint.model.layout import Timing

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator
    from prefixlint.analysis.python.messages import Msg


def returned_value(
    ev: Evaluator, node: cst.BaseExpression, env: Env
) -> tuple[cst.BaseExpression, Env] | None:
    """What a prompt callable returns, and where to read it; None when ``node`` is not a callable.

    A lambda's body is read where the lambda is written. A name of one of the project's functions
    (``prompt=make_prompt``) is read at its last ``return``, with its parameters unbound.
    """
    if isinstance(node, cst.Lambda):
        return node.body, evolve_request(env)
    if not isinstance(node, (cst.Name, cst.Attribute)):
        return None
    if isinstance(node, cst.Name) and env.func is not None and _is_local(ev, node.value, env):
        return None
    fn = ev._function_for(node, env)
    if fn is None:
        return None
    from prefixlint.analysis.python.evaluate import _returns

    fdef, fmod, cls = fn[:3]
    returns = _returns(fdef, fmod)
    if not returns or returns[-1].value is None:
        return None
    ret = returns[-1]
    return ret.value, env.callee(fmod, fdef, cls, ret)  # type: ignore[return-value]


def prompt_messages(ev: Evaluator, node: cst.BaseExpression, env: Env) -> list[Msg] | None:
    """The messages a prompt callable returns when it returns a list that opens with a system message.

    None when ``node`` is not a callable, or when what it returns is text (read it with
    :func:`returned_value` as the system prompt).
    """
    got = returned_value(ev, node, env)
    if got is None:
        return None
    body, where = got
    found = ev.message_list(body, where)
    if found and found[0].role in ("system", "developer"):
        return found
    return None


def evolve_request(env: Env) -> Env:
    """``env`` for code a framework runs per request (a callback's body)."""
    return env.deeper(timing=Timing.REQUEST)


def _is_local(ev: Evaluator, name: str, env: Env) -> bool:
    from prefixlint.analysis.python.resolve import find_param, local_ops

    assert env.func is not None
    return bool(local_ops(env.mod, env.func).get(name)) or find_param(env.func, name) is not None
