"""Parameters resolved through the project's call sites (a function summary per parameter).

A parameter nobody bound in the current evaluation gets its nature from the calls of its function
found in the whole project: static when every caller passes a static value (or leaves a static
default), the caller's kind when one passes a per-request value (with the chain from that argument),
and unknown only when no caller is visible (a public entry point, a callback). Callers are found by a
bytes search of the project's files for the function's name, then resolved like any other call; the
result is remembered per run, and the search is bounded (files, callers, depth). Calls from test
code (``tests/``, ``test_*.py``, ``*_test.py``, ``conftest.py``) are not callers of application code:
a test that passes a literal does not make the value the application passes static.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.collect import CallSite, ClassInfo, ModuleInfo
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.lazy_binds import bound_args
from prefixlint.analysis.python.project import call_pattern
from prefixlint.analysis.python.records import constructor_class
from prefixlint.analysis.python.sources import dotted_name, name_kind, with_chain
from prefixlint.model.layout import DynamicKind, Segment, SourceLocation, Timing, evolve

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator

# A name found in more files than this is too common to follow (``run``, ``get``): unknown.
MAX_CALLER_FILES = 40
# Call sites read per parameter.
MAX_CALLERS = 24
# Caller-of-caller hops (each evaluation of an argument may reach its own function's callers).
MAX_CALLER_DEPTH = 6

_TEST_DIRS = frozenset({"test", "tests", "testing"})


def is_test_path(path: str, root: str | PurePath) -> bool:
    """True for a file of a test suite: under a ``tests/`` folder of the project at ``root``, or
    named ``test_*.py``, ``*_test.py``, ``conftest.py``."""
    p = PurePath(path)
    name = p.name
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return True
    try:
        folders = p.relative_to(root).parts[:-1]
    except ValueError:
        return False
    return any(part in _TEST_DIRS for part in folders)


_IMPLICIT = ("staticmethod", "classmethod", "property", "cached_property", "abstractmethod", "override")


def callers_of(
    ev: Evaluator, mod: ModuleInfo, fdef: cst.FunctionDef, cls: ClassInfo | None
) -> list[tuple[ModuleInfo, CallSite]] | None:
    """The project's calls of ``fdef`` (``None`` when they cannot all be known: too common a name,
    a method called implicitly, a function registered by a decorator)."""
    memo = ev.project.summaries.setdefault("callers", {})
    key = (mod.path, id(fdef))
    hit = memo.get(key)
    if hit is not None and hit[0] is fdef:
        return hit[1]
    got = _find_callers(ev, mod, fdef, cls)
    memo[key] = (fdef, got)
    return got


def _find_callers(
    ev: Evaluator, mod: ModuleInfo, fdef: cst.FunctionDef, cls: ClassInfo | None
) -> list[tuple[ModuleInfo, CallSite]] | None:
    name = fdef.name.value
    for deco in fdef.decorators:
        node = deco.decorator.func if isinstance(deco.decorator, cst.Call) else deco.decorator
        if dotted_name(node).rsplit(".", 1)[-1] not in _IMPLICIT:
            return None  # registered with a framework: called by it, with values we cannot see
    if name == "__init__":
        if cls is None:
            return None
        target = cls.node.name.value
    elif name.startswith("__") and name.endswith("__"):
        return None
    else:
        target = name
    if not target.isidentifier():
        return None
    files = ev.project.references(target, lambda _n: True)
    if len(files) > MAX_CALLER_FILES:
        return None
    root = ev.project.root
    in_tests = is_test_path(mod.path, root)
    others = sorted(f for f in files if f != mod.path and (in_tests or not is_test_path(f, root)))
    paths = [mod.path, *others]
    out: list[tuple[ModuleInfo, CallSite]] = []
    calls = call_pattern(target)
    for path in paths:
        cmod = mod if path == mod.path else ev.project.load_if(path, calls)
        if cmod is None:
            continue
        for site in cmod.calls:
            if dotted_name(site.node.func).rsplit(".", 1)[-1] != target:
                continue
            if _calls(ev, cmod, site, fdef, cls, name == "__init__"):
                out.append((cmod, site))
                if len(out) >= MAX_CALLERS:
                    return out
    return out


def _calls(
    ev: Evaluator, cmod: ModuleInfo, site: CallSite, fdef: cst.FunctionDef, cls: ClassInfo | None, init: bool
) -> bool:
    env = Env(mod=cmod, func=site.func, cls=site.cls, pos=cmod.pos(site.node))
    func = site.node.func
    if init:  # ``Bot(...)``, or ``bots.Bot(...)`` through an imported module
        made = constructor_class(ev, site.node, env) if cls is not None else None
        return made is not None and made[0] is cls
    fn = ev._function_for(func, env)
    return fn is not None and fn.fdef is fdef


def arg_nodes(
    fdef: cst.FunctionDef, call: cst.Call, env: Env, skip_self: bool
) -> dict[str, tuple[cst.BaseExpression, Env]]:
    """Parameter name -> the argument expression the call passes for it (and where to read it)."""
    passed = bound_args(fdef, call, skip_self, env.mod.star_args)
    return {name: (node, env) for name, node in passed.items()}


def _rank(segs: list[Segment]) -> tuple[int, int, int]:
    """Order of concern among callers' values: per-request breaks first, then process, then unknown."""
    dyn = [s for s in segs if not s.static]
    if not dyn:
        return (0, 0, 0)
    worst = max(
        (int(s.breaks_cache), int(s.timing is Timing.REQUEST), int(s.timing is Timing.PROCESS)) for s in dyn
    )
    return (1, worst[1], worst[2]) if worst[0] else (0, 1, worst[2])


class _Busy(tuple):
    """No dependencies, as the stand-in of a parameter whose callers are being read (by identity)."""


_BUSY = _Busy()


def param_from_callers(
    ev: Evaluator, param: cst.Param, env: Env, use: SourceLocation | None
) -> list[Segment] | None:
    """What the callers pass for ``param`` of ``env.func`` (None when no caller is visible)."""
    fdef = env.func
    if fdef is None or id(fdef) in env.active or env.depth > MAX_CALLER_DEPTH:
        return None  # inside one known call (its arguments are bound), or too deep
    if param.star:  # ``*args``/``**kwargs``
        return None
    memo = ev.project.summaries.setdefault("params", {})
    key = (env.mod.path, id(fdef), param.name.value)
    hit = memo.get(key)
    if hit is not None and hit[0] is fdef:
        segs, deps = hit[1], hit[2]
        if deps is _BUSY:
            ev.memo.unsettled()
    else:
        memo[key] = (fdef, None, _BUSY)  # a cycle of callers: unknown there
        segs, deps = _resolve(ev, param, env)
        memo[key] = (fdef, segs, deps)
    ev.dependencies.update(d for d in deps if d != env.mod.path)
    if segs is None:
        return None
    return with_chain(_named_kind(ev, param.name.value, segs), use)


def _named_kind(ev: Evaluator, name: str, segs: list[Segment]) -> list[Segment]:
    """Callers show the value changes; where they cannot say what it is, the parameter's name can."""
    if all(s.static or s.kind is not DynamicKind.UNKNOWN for s in segs):
        return segs
    kind, conf = name_kind(ev.catalog, name)
    if kind is DynamicKind.UNKNOWN:
        return segs
    return [
        s
        if s.static or s.kind is not DynamicKind.UNKNOWN
        else evolve(s, kind=kind, confidence=max(s.confidence, conf))
        for s in segs
    ]


def _resolve(ev: Evaluator, param: cst.Param, env: Env) -> tuple[list[Segment] | None, tuple[str, ...]]:
    fdef = env.func
    assert fdef is not None
    callers = callers_of(ev, env.mod, fdef, env.cls)
    if not callers:
        return None, ()
    name = param.name.value
    is_method = env.cls is not None and not any(
        dotted_name(d.decorator) == "staticmethod" for d in fdef.decorators
    )
    best: list[Segment] | None = None
    deps: set[str] = set()
    for cmod, site in callers:
        deps.add(cmod.path)
        cenv = Env(
            mod=cmod,
            func=site.func,
            cls=site.cls,
            timing=Timing.REQUEST if site.func is not None else Timing.PROCESS,
            pos=cmod.pos(site.node),
            depth=env.depth + 1,
            active=env.active,
        )
        passed = arg_nodes(fdef, site.node, cenv, skip_self=is_method)
        if name in passed:
            node, where = passed[name]
            segs = with_chain(ev.text(node, where), cmod.loc(node))
        elif any(a.star for a in site.node.args):
            return None, tuple(deps)  # ``f(*args)`` / ``f(**kw)``: what it passes is not visible
        elif param.default is not None:
            segs = ev.text(param.default, Env(mod=env.mod, timing=Timing.PROCESS, depth=env.depth + 1))
        else:
            continue
        if best is None or _rank(segs) > _rank(best):
            best = segs
    return best, tuple(deps)
