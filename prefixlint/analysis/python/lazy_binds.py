"""A call's arguments evaluated on first use: a parameter the callee never reads costs nothing.

Used for every call the evaluator follows: a helper whose returned text is read, a helper on a send
path, an ``__init__`` whose ``self.x = ...`` are read, and an instance's constructor arguments.

``create_prompt(tokenizer=get_tokenizer(model_config=settings), persona=persona)`` followed into
``create_prompt`` only needs what its returned text reads. Evaluating every argument first (as a
plain ``dict`` of bindings does) follows calls, parses modules and reads configuration for values
that are then thrown away. :class:`LazyBindings` holds each argument expression and evaluates it in
the caller's environment, under the evaluator state of the call (template style and forced template
choices), the first time the callee reads it; the answer is kept.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.env import Env
from prefixlint.model.layout import Segment

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator


def bound_args(
    fdef: cst.FunctionDef, call: cst.Call, skip_self: bool, made: dict | None = None
) -> dict[str, cst.BaseExpression]:
    """Parameter name -> the argument expression ``call`` passes it (a later argument wins).

    A ``*args`` parameter gets a tuple of the positional arguments no other parameter takes, a
    ``**kwargs`` one a dict of the keyword arguments no other parameter takes (``*xs`` and ``**kw``
    passed along are kept in them). Those two are made once per call and helper in ``made`` (the
    calling module's :attr:`~.collect.ModuleInfo.star_args`), so they keep their ids.
    """
    params = [*fdef.params.posonly_params, *fdef.params.params]
    if skip_self and params and params[0].name.value in ("self", "cls"):
        params = params[1:]
    out: dict[str, cst.BaseExpression] = {}
    names = {p.name.value for p in (*params, *fdef.params.kwonly_params)}
    extra: list[cst.Arg] = []
    i = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value in names:
                out[arg.keyword.value] = arg.value
            else:
                extra.append(arg)
        elif arg.star:
            extra.append(arg)
        else:
            if i < len(params):
                out[params[i].name.value] = arg.value
            else:
                extra.append(arg)
            i += 1
    if extra:
        out.update(_star_params(fdef, call, skip_self, extra, made))
    return out


def _star_params(
    fdef: cst.FunctionDef, call: cst.Call, skip_self: bool, extra: list[cst.Arg], made: dict | None
) -> dict[str, cst.BaseExpression]:
    """``*args`` and ``**kwargs`` of ``fdef`` bound to what ``call`` passes beyond its other parameters."""
    key = (id(call), id(fdef), skip_self)
    if made is not None and key in made:
        return made[key]
    out: dict[str, cst.BaseExpression] = {}
    star, double = fdef.params.star_arg, fdef.params.star_kwarg
    positional = [a for a in extra if a.keyword is None and a.star != "**"]
    if isinstance(star, cst.Param) and positional:
        out[star.name.value] = cst.Tuple(
            [cst.StarredElement(a.value) if a.star == "*" else cst.Element(a.value) for a in positional]
        )
    keywords = [a for a in extra if a.keyword is not None or a.star == "**"]
    if double is not None and keywords:
        out[double.name.value] = cst.Dict(
            [
                cst.StarredDictElement(a.value)
                if a.keyword is None
                else cst.DictElement(cst.SimpleString(repr(a.keyword.value)), a.value)
                for a in keywords
            ]
        )
    if made is not None:
        made[key] = out
    return out


class LazyBindings(Mapping[str, list[Segment]]):
    """Bindings whose values are computed on first read, as :meth:`Evaluator.text` computed them then.

    The evaluator state an answer can depend on (``template_mode`` and the forced template choices)
    is the one of the call: it is put back while an argument is evaluated.
    """

    __slots__ = ("_args", "_env", "_ev", "_state", "_values")

    def __init__(self, ev: Evaluator, env: Env, args: dict[str, cst.BaseExpression]) -> None:
        self._ev = ev
        self._env = env
        self._args = args
        self._values: dict[str, list[Segment]] = {}
        self._state = (ev.template_mode, ev._forced_templates)

    def argument(self, name: str) -> tuple[cst.BaseExpression, Env] | None:
        """The expression the call passes for ``name``, and where to read it (None: not passed)."""
        node = self._args.get(name)
        return (node, self._env) if node is not None else None

    def __getitem__(self, name: str) -> list[Segment]:
        got = self._values.get(name)
        if got is None:
            node = self._args[name]  # KeyError: not bound
            outer = self._env.bindings
            if isinstance(outer, LazyBindings):
                outer.settle(node)
            ev = self._ev
            now = ev.template_mode, ev._forced_templates
            ev.template_mode, ev._forced_templates = self._state
            try:
                got = self._values[name] = ev.text(node, self._env)
            finally:
                ev.template_mode, ev._forced_templates = now
        return got

    def settle(self, node: cst.CSTNode) -> None:
        """Evaluate the bindings ``node`` names, one at a time, before ``node`` itself.

        A parameter passed on through a chain of helpers (``f(a)`` calls ``g(a + x)``...) is then
        worked out one call at a time, as an eager binding was, instead of as one expression nested
        as deep as the chain (the Python stack would grow with every helper).
        """
        stack = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, cst.Name):
                if cur.value in self._args and cur.value not in self._values:
                    self[cur.value]  # evaluated now and kept
            else:
                stack.extend(cur.children)

    def __contains__(self, name: object) -> bool:
        return name in self._args

    def __iter__(self) -> Iterator[str]:
        return iter(self._args)

    def __len__(self) -> int:
        return len(self._args)
