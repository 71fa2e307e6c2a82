"""Sinks reached through the project's own classes: ``ResearchAgent(template=...)``.

An application often derives its agent from a framework's agent class and constructs its own
class, sometimes choosing one of two at run time (``(AsyncAgent if use_async else SyncAgent)(...)``).
Such a call is the framework's sink when a base class, followed through the project's classes, is a
catalog sink imported from its framework, and every class on the way either has no ``__init__`` or
passes ``**kwargs`` on (so the framework's keyword arguments keep their meaning).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.collect import ClassInfo, ModuleInfo, resolved
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.project import class_pattern
from prefixlint.analysis.python.sinks import match_sink
from prefixlint.analysis.python.sources import dotted_name
from prefixlint.plugins import SinkSpec

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator

# Base-class hops followed from the called class.
MAX_BASE_DEPTH = 6


def subclass_sink(
    ev: Evaluator, func: cst.BaseExpression, env: Env, specs: list[SinkSpec]
) -> SinkSpec | None:
    """The framework sink that calling ``func`` (a project class) reaches through its bases."""
    for cls, mod in _called_classes(ev, func, env.mod):
        spec = _framework_base(ev, cls, mod, specs, 0)
        if spec is not None:
            return spec
    return None


def _called_classes(
    ev: Evaluator, func: cst.BaseExpression, mod: ModuleInfo
) -> list[tuple[ClassInfo, ModuleInfo]]:
    if isinstance(func, cst.IfExp):
        return [*_called_classes(ev, func.body, mod), *_called_classes(ev, func.orelse, mod)]
    if isinstance(func, cst.Name):
        got = _project_class(ev, func.value, mod)
        return [got] if got is not None else []
    return []


def _project_class(ev: Evaluator, name: str, mod: ModuleInfo) -> tuple[ClassInfo, ModuleInfo] | None:
    if name in mod.classes:
        return mod.classes[name], mod
    if name in mod.imports:
        module, attr, level = mod.imports[name]
        if attr is None:
            return None  # ``import pkg.agents as agents``: a module, not a class
        source = ev.project.module_file(mod.path, module, level)
        if source is not None and not ev.project.may_hold(source, class_pattern(attr)):
            ev.dependencies.add(resolved(str(source)))  # (its next version may define the class)
            return None  # no ``class Name`` in its text: not parsed for this
        got = ev._imported(mod, name)
        if got is not None and got[1] is not None and got[1] in got[0].classes:
            return got[0].classes[got[1]], got[0]
    return None


def _framework_base(
    ev: Evaluator, cls: ClassInfo, mod: ModuleInfo, specs: list[SinkSpec], depth: int
) -> SinkSpec | None:
    init = cls.methods.get("__init__")
    if depth > MAX_BASE_DEPTH or (init is not None and init.params.star_kwarg is None):
        return None
    for base in cls.node.bases:
        dotted = dotted_name(base.value)
        if not dotted or base.keyword is not None:
            continue
        spec = match_sink(dotted, mod, specs)
        if spec is not None and spec.module:  # a framework's class, imported from the framework
            return spec
        got = _project_class(ev, dotted, mod) if "." not in dotted else None
        if got is not None and got[0] is not cls:
            spec = _framework_base(ev, got[0], got[1], specs, depth + 1)
            if spec is not None:
                return spec
    return None
