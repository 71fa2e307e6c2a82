"""In-house send paths: a project function whose parameter reaches a sink is a sink for that argument.

``def call_model(messages): return client.chat.completions.create(model=M, messages=messages)`` makes
every ``call_model([...])`` of the project a place where a prompt is sent. The layout is built at the
real API call inside the helper, with the caller's arguments bound (their expressions and their
pieces), so the last-user-message rule and the provider are judged where the request is made. Helpers
that call helpers are followed up to :data:`MAX_HOPS` deep; which functions send is remembered per run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.builder import build_layout
from prefixlint.analysis.python.callers import arg_nodes
from prefixlint.analysis.python.collect import CallSite, ModuleInfo
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.sinks import match_sink
from prefixlint.analysis.python.sources import dotted_name
from prefixlint.model.layout import Layout
from prefixlint.model.settings import Settings
from prefixlint.plugins import SinkSpec

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator, FnRef

# Helpers followed from a call to the real API call (``ask`` -> ``chat`` -> ``create``).
MAX_HOPS = 4


def function_sites(mod: ModuleInfo, fdef: cst.FunctionDef) -> list[CallSite]:
    """The calls made in ``fdef``'s own body, in source order (indexed once per module)."""
    index = mod.calls_by_func
    if index is None:
        index = mod.calls_by_func = {}
        for site in mod.calls:
            if site.func is not None:
                index.setdefault(id(site.func), []).append(site)
    return index.get(id(fdef), [])


_BUSY: list = []  # the stand-in of a helper whose sends are being read (by identity; never changed)


def sending_sites(
    ev: Evaluator, mod: ModuleInfo, fdef: cst.FunctionDef, specs: list[SinkSpec], hops: int = 0
) -> list[tuple[CallSite, object]]:
    """Calls in ``fdef`` that send a prompt: ``(site, spec)`` for an API call, ``(site, FnRef)`` for a
    call of another helper that sends one. Empty when ``fdef`` sends nothing we can see."""
    memo = ev.project.summaries.setdefault("sends", {})
    key = (mod.path, id(fdef))
    hit = memo.get(key)
    # (the node kept alive: its id is not reused). An answer found with fewer hops left than this
    # call has may have stopped short of a send: it is worked out again.
    if hit is not None and hit[0] is fdef and hit[2] <= hops:
        if hit[1] is _BUSY:
            ev.memo.unsettled()
        return hit[1]
    memo[key] = (fdef, _BUSY, hops)  # a recursive helper sends what its other calls send
    out: list[tuple[CallSite, object]] = []
    for site in function_sites(mod, fdef):
        spec = match_sink(dotted_name(site.node.func), mod, specs)
        if spec is not None:
            out.append((site, spec))
            continue
        if hops >= MAX_HOPS:
            continue
        env = Env(mod=mod, func=fdef, cls=site.cls, pos=mod.pos(site.node))
        fn = ev._function_for(site.node.func, env)
        if fn is not None and fn.fdef is not fdef and sending_sites(ev, fn.mod, fn.fdef, specs, hops + 1):
            out.append((site, fn))
    memo[key] = (fdef, out, hops)
    return out


def inline_layouts(
    ev: Evaluator,
    call: cst.Call,
    env: Env,
    fn: FnRef,
    specs: list[SinkSpec],
    settings: Settings,
    hops: int = 0,
) -> list[Layout]:
    """The layouts a call of the sending helper ``fn`` makes, built at the real API calls inside it."""
    if hops > MAX_HOPS or id(fn.fdef) in env.active:
        return []
    sites = sending_sites(ev, fn.mod, fn.fdef, specs)
    if not sites:
        return []
    skip_self = fn.cls is not None
    binds = ev.bind_args(fn.fdef, call, env, skip_self=skip_self)
    nodes = arg_nodes(fn.fdef, call, env, skip_self)
    if fn.mod.path != env.mod.path:
        ev.dependencies.add(fn.mod.path)
    out: list[Layout] = []
    for site, target in sites:
        inner = env.callee(
            fn.mod,
            fn.fdef,
            fn.cls,
            site.node,
            bindings=binds,
            arg_nodes=nodes,
            self_binds=fn.self_binds or {},
        )
        if isinstance(target, SinkSpec):
            layout = build_layout(ev, site, target, inner, settings)
            if layout is not None:
                out.append(layout)
        else:
            out.extend(inline_layouts(ev, site.node, inner, target, specs, settings, hops + 1))  # type: ignore[arg-type]
    return out
