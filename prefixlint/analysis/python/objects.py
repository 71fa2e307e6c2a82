"""Which project class an expression holds: typed parameters, constructor calls, annotated returns
and typed fields.

``settings = load_settings(name)`` (``-> Settings``), then ``settings.prompts.answer``: the class of
``settings`` comes from the function's return annotation, ``prompts`` is a field annotated with
another class of the project, and ``answer`` is one of that class's fields, whose default is what the
attribute holds unless someone overrides it. Settings objects (pydantic models, dataclasses) carry a
project's prompt templates this way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.collect import ClassInfo, ModuleInfo, class_annotation
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.resolve import annotation_name, find_param, local_ops, ops_before
from prefixlint.analysis.python.sources import dotted_name

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator

Owner = tuple[ClassInfo, ModuleInfo]

# Names and calls followed to find a class (``a = b``, ``b = f()``, ``f`` -> its return annotation).
MAX_STEPS = 6


def class_named(ev: Evaluator, mod: ModuleInfo, name: str) -> Owner | None:
    """The project class ``name`` refers to in ``mod`` (defined there or imported)."""
    if name in mod.classes:
        return mod.classes[name], mod
    if name in mod.imports:
        got = ev._imported(mod, name)
        if got is not None and got[1] in got[0].classes:
            return got[0].classes[got[1]], got[0]
    return None


def class_of(ev: Evaluator, node: cst.BaseExpression, env: Env, steps: int = 0) -> Owner | None:
    """The project class whose instance ``node`` holds, where the code says so; None otherwise."""
    if steps > MAX_STEPS:
        return None
    if isinstance(node, cst.Name):
        return _name_class(ev, node.value, env, steps)
    if isinstance(node, cst.Call):
        return _call_class(ev, node, env)
    if isinstance(node, cst.Attribute):
        owner = class_of(ev, node.value, env, steps + 1)
        return field_class(ev, owner, node.attr.value) if owner is not None else None
    return None


def field_default(cls: ClassInfo, attr: str) -> cst.BaseExpression | None:
    """The default written for field ``attr`` (``x: str = D`` or ``Field(default=D)``), or None."""
    value = cls.fields.get(attr)
    if isinstance(value, cst.Call) and dotted_name(value.func).rsplit(".", 1)[-1] in ("Field", "field"):
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value == "default":
                return arg.value
        first = value.args[0] if value.args else None
        if first is not None and first.keyword is None and dotted_name(value.func).endswith("Field"):
            return first.value  # pydantic's ``Field("text", description=...)``
        return None
    return value


def field_class(ev: Evaluator, owner: Owner, attr: str) -> Owner | None:
    """The class of field ``attr``: its annotation, else its ``default_factory`` or default call."""
    cls, mod = owner
    if attr not in cls.fields:
        return None
    name = cls.field_types.get(attr, "")
    got = class_named(ev, mod, name) if name else None
    if got is not None:
        return got
    value = cls.fields[attr]
    if isinstance(value, cst.Call):
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value == "default_factory":
                return class_named(ev, mod, dotted_name(arg.value))
        return class_named(ev, mod, dotted_name(value.func))
    return None


def _name_class(ev: Evaluator, name: str, env: Env, steps: int) -> Owner | None:
    if name in env.bindings:
        return None
    if name == "self" and env.cls is not None and env.func is not None and find_param(env.func, name):
        return env.cls, env.mod
    if env.func is not None:
        ops = local_ops(env.mod, env.func).get(name)
        if ops:
            before = ops_before(ops, env.pos)
            if len(before) != 1 or before[0].kind != "assign":
                return None
            return class_of(ev, before[0].value, env.at(before[0].pos), steps + 1)
        param = find_param(env.func, name)
        if param is not None:
            cname = annotation_name(param)
            return class_named(ev, env.mod, cname) if cname else None
    value = env.mod.assigns.get(name)
    if value is not None:
        return class_of(ev, value, ev.module_env(env.mod).at(env.mod.pos(value)), steps + 1)
    return None


def _call_class(ev: Evaluator, node: cst.Call, env: Env) -> Owner | None:
    """``Settings(...)``, or ``load()`` of a project function annotated ``-> Settings``."""
    func = node.func
    if isinstance(func, cst.Name):
        got = class_named(ev, env.mod, func.value)
        if got is not None:
            return got
    fn = ev._function_for(func, env)
    if fn is None or fn.fdef.returns is None:
        return None
    name = class_annotation(fn.fdef.returns.annotation)
    return class_named(ev, fn.mod, name) if name else None
