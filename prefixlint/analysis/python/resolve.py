"""Where names get their values: local assignments, list mutations and loops inside a function.

:func:`local_ops` walks a function body once (cached) and records, per name, every assignment,
``+=``, ``append``/``extend``/``insert`` in source order, with whether it sits under an ``if`` or a
loop. The evaluator replays the ops that happen before a use site.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from prefixlint.analysis.python.collect import ModuleInfo, evaluated


@dataclass(frozen=True)
class Op:
    """One change to a local name."""

    kind: str  # assign | aug | append | extend | insert | for
    value: cst.BaseExpression
    pos: int
    node: cst.CSTNode
    conditional: bool = False
    loop_iter: cst.BaseExpression | None = None  # the iterable of the enclosing for loop


def local_ops(mod: ModuleInfo, func: cst.FunctionDef) -> dict[str, list[Op]]:
    """Ops per local name in ``func``, remembered in its module (they live and go together)."""
    ops = mod.local_ops.get(func)
    if ops is None:
        ops = mod.local_ops[func] = {}
        _walk_block(mod, func.body, ops, conditional=False, loop_iter=None)
    return ops


def rebound_ops(mod: ModuleInfo, name: str) -> list[Op] | None:
    """The assignments and ``+=`` of module-level ``name`` in source order, when there is more than
    one (``SYSTEM = f"{now}"`` then ``SYSTEM = SYSTEM + RULES``, or ``SYSTEM += RULES``); else None,
    and its one assignment (:attr:`ModuleInfo.assigns`) is its value."""
    if mod.module_ops is None:
        ops: dict[str, list[Op]] = {}
        for stmt in mod.module.body:
            _walk_stmt(mod, stmt, ops, conditional=False, loop_iter=None)
        mod.module_ops = {
            n: kept
            for n, all_ops in ops.items()
            if len(kept := [op for op in all_ops if op.kind in ("assign", "aug")]) > 1
        }
    return mod.module_ops.get(name)


def _body(node: cst.BaseSuite) -> list[cst.CSTNode]:
    if isinstance(node, cst.IndentedBlock):
        return list(node.body)
    if isinstance(node, cst.SimpleStatementSuite):
        return list(node.body)
    return []


def _walk_block(mod, suite, ops, *, conditional, loop_iter) -> None:  # type: ignore[no-untyped-def]
    for stmt in _body(suite):
        _walk_stmt(mod, stmt, ops, conditional=conditional, loop_iter=loop_iter)


def _walk_stmt(
    mod: ModuleInfo,
    stmt: cst.CSTNode,
    ops: dict[str, list[Op]],
    *,
    conditional: bool,
    loop_iter: cst.BaseExpression | None,
) -> None:
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            _small(mod, small, ops, conditional, loop_iter)
    elif isinstance(stmt, (cst.BaseSmallStatement,)):
        _small(mod, stmt, ops, conditional, loop_iter)
    elif isinstance(stmt, cst.If):
        _walk_block(mod, stmt.body, ops, conditional=True, loop_iter=loop_iter)
        orelse = stmt.orelse
        if isinstance(orelse, cst.If):
            _walk_stmt(mod, orelse, ops, conditional=True, loop_iter=loop_iter)
        elif isinstance(orelse, cst.Else):
            _walk_block(mod, orelse.body, ops, conditional=True, loop_iter=loop_iter)
    elif isinstance(stmt, cst.For):
        for name, items in _loop_names(stmt.target, stmt.iter):
            ops.setdefault(name, []).append(Op("for", items, mod.pos(stmt), stmt, conditional, stmt.iter))
        _walk_block(mod, stmt.body, ops, conditional=conditional, loop_iter=stmt.iter)
    elif isinstance(stmt, cst.While):
        _walk_block(mod, stmt.body, ops, conditional=True, loop_iter=loop_iter)
    elif isinstance(stmt, (cst.With,)):
        _walk_block(mod, stmt.body, ops, conditional=conditional, loop_iter=loop_iter)
    elif isinstance(stmt, cst.Try):
        _walk_block(mod, stmt.body, ops, conditional=conditional, loop_iter=loop_iter)
        for h in stmt.handlers:
            _walk_block(mod, h.body, ops, conditional=True, loop_iter=loop_iter)
        if stmt.orelse is not None:
            _walk_block(mod, stmt.orelse.body, ops, conditional=True, loop_iter=loop_iter)
        if stmt.finalbody is not None:
            _walk_block(mod, stmt.finalbody.body, ops, conditional=conditional, loop_iter=loop_iter)


def _loop_names(target: cst.BaseExpression, it: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """``(name, sequence whose items it takes)`` for a ``for`` target: ``x``; ``i, x`` over
    ``enumerate(xs)`` (the index is a count: not recorded); ``a, b`` over ``zip(as, bs)``; and each
    name of another tuple target over the whole sequence (``k, v`` over ``d.items()``)."""
    if isinstance(target, cst.Name):
        return [(target.value, it)]
    if not isinstance(target, (cst.Tuple, cst.List)):
        return []
    names = [el.value for el in target.elements]
    call = it if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) else None
    plain = [a.value for a in call.args if a.keyword is None and not a.star] if call is not None else []
    if call is not None and call.func.value == "enumerate" and len(names) == 2 and plain:  # type: ignore[union-attr]
        return _loop_names(names[1], plain[0])
    if call is not None and call.func.value == "zip" and len(names) == len(plain):  # type: ignore[union-attr]
        return [pair for n, seq in zip(names, plain, strict=True) for pair in _loop_names(n, seq)]
    return [(n.value, it) for n in names if isinstance(n, cst.Name)]


def _small(
    mod: ModuleInfo,
    small: cst.CSTNode,
    ops: dict[str, list[Op]],
    conditional: bool,
    loop_iter: cst.BaseExpression | None,
) -> None:
    pos = mod.pos(small)
    if isinstance(small, cst.Assign):
        for tgt in small.targets:
            if isinstance(tgt.target, cst.Name):
                ops.setdefault(tgt.target.value, []).append(
                    Op("assign", small.value, pos, small, conditional, loop_iter)
                )
            for name, value in _unpacked(tgt.target, small.value):
                ops.setdefault(name, []).append(Op("assign", value, pos, small, conditional, loop_iter))
    elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
        ops.setdefault(small.target.value, []).append(
            Op("assign", small.value, pos, small, conditional, loop_iter)
        )
    elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        if isinstance(small.operator, cst.AddAssign):
            ops.setdefault(small.target.value, []).append(
                Op("aug", small.value, pos, small, conditional, loop_iter)
            )
    elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        call = small.value
        f = call.func
        if (
            isinstance(f, cst.Attribute)
            and isinstance(f.value, cst.Name)
            and f.attr.value in ("append", "extend", "insert")
            and call.args
        ):
            arg = call.args[-1].value
            ops.setdefault(f.value.value, []).append(Op(f.attr.value, arg, pos, call, conditional, loop_iter))


def _unpacked(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """``(name, value)`` pairs of ``a, b = x, y``: a tuple or list of names given as many plain items.
    Anything else (``a, b = f()``, a starred item) says nothing of each name."""
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, (cst.Tuple, cst.List)):
        return []
    names, values = target.elements, value.elements
    if len(names) != len(values) or any(isinstance(el, cst.StarredElement) for el in (*names, *values)):
        return []
    return [
        (name.value.value, item.value)
        for name, item in zip(names, values, strict=True)
        if isinstance(name.value, cst.Name)
    ]


def ops_before(ops: list[Op], pos: int) -> list[Op]:
    """The ops that apply to a use at ``pos``: from the last unconditional assignment on."""
    before = [op for op in ops if op.pos < pos]
    start = 0
    for i, op in enumerate(before):
        if op.kind == "assign" and not op.conditional:
            start = i
    return before[start:]


def annotation_name(param: cst.Param) -> str:
    """``frozenset`` for ``x: frozenset[str]``; the class name for ``ctx: RequestContext``."""
    ann = param.annotation
    if ann is None:
        return ""
    node = ann.annotation
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, (cst.SimpleString,)):
        return evaluated(node).strip() if isinstance(evaluated(node), str) else ""
    return ""


def find_param(func: cst.FunctionDef, name: str) -> cst.Param | None:
    p = func.params
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        if param.name.value == name:
            return param
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param) and star.name.value == name:
            return star
    return None
