"""Where a filled template goes: followed forward to the message it becomes.

A template filled in one function (``return NEXT_STEP.format(state=...)``) is often handed back to
its callers, stored on the object (``self.next_prompt = ...``) and read by another method, where it
becomes a new user message appended to the conversation the object keeps
(``self.messages += [user_message(self.next_prompt)]``). Everything ahead of that message in the
request is the conversation so far, which grows every turn: no static text after the value could be
a shared prefix, so the fill costs no cache.

Uses are followed through returns (to the project's callers), local names and ``self`` attributes
(read by any class of the project), at most :data:`MAX_HOPS` steps. A use in an ``if`` test, a log
call or a write back to the same attribute changes nothing. Any other use (a send we cannot see, a
message list built afresh) keeps the fill reportable.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.callers import callers_of
from prefixlint.analysis.python.collect import ClassInfo, ModuleInfo, evaluated
from prefixlint.analysis.python.project import self_attribute_pattern
from prefixlint.analysis.python.sources import dotted_name

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator

MAX_HOPS = 4
# Files searched for the readers of one attribute.
MAX_ATTR_FILES = 20
# What a use of the value comes to: a new user turn, nothing, or something else.
TURN, NEUTRAL, OTHER = "turn", "neutral", "other"

_USER_MESSAGE = re.compile(r"(user|human)_?(message|msg|turn)$", re.IGNORECASE)
_APPEND = ("append", "add_message", "add", "extend", "add_messages")
_LOGGING = ("debug", "info", "warning", "warn", "error", "exception", "print")


def appended_turn(ev: Evaluator, mod: ModuleInfo, node: cst.CSTNode, func: cst.FunctionDef | None) -> bool:
    """True when every use seen of ``node``'s value ends as a user message appended to a conversation
    kept on an object (and at least one does)."""
    if func is None:
        return False
    fates = _fates(ev, mod, node, func, None, 0)
    return TURN in fates and OTHER not in fates


def _fates(
    ev: Evaluator, mod: ModuleInfo, node: cst.CSTNode, func: cst.FunctionDef, attr: str | None, hops: int
) -> set[str]:
    """What the value of ``node`` (in ``func``) comes to; ``attr`` is the ``self`` attribute it was
    read from (a write back to it is no use)."""
    if hops > MAX_HOPS:
        return {OTHER}
    parents = _parents(mod, func, node)
    if not parents:
        return {OTHER}
    cur, i = node, len(parents) - 1
    while i > 0 and isinstance(parents[i], cst.Await):
        cur, i = parents[i], i - 1
    chain = {id(cur), *map(id, parents)}  # ``cur`` and every node around it
    if any(isinstance(p, (cst.If, cst.While)) and id(p.test) in chain for p in parents):
        return {NEUTRAL}
    parent = parents[i]
    if isinstance(parent, cst.Return):
        return _returned(ev, mod, func, hops)
    if isinstance(parent, cst.Assign) and parent.value is cur and len(parent.targets) == 1:
        return _assigned(ev, mod, func, parent, parent.targets[0].target, attr, hops)
    if isinstance(parent, (cst.FormattedStringExpression, cst.FormattedString)):
        assign = next((p for p in reversed(parents) if isinstance(p, cst.Assign)), None)
        if assign is not None and attr is not None and _self_attr(assign.targets[0].target) == attr:
            return {NEUTRAL}  # ``self.p = f"{note}\n{self.p}"``: still the same attribute
        return {OTHER}
    if isinstance(parent, cst.DictElement) and i > 0 and _is_user_dict(parents[i - 1], parent):
        return _message_fates(ev, mod, parents[i - 1], func, hops)
    if isinstance(parent, cst.Arg) and i > 0 and isinstance(parents[i - 1], cst.Call):
        call = parents[i - 1]
        if _is_user_message(call):
            return _message_fates(ev, mod, call, func, hops)
        if dotted_name(call.func).rsplit(".", 1)[-1] in _LOGGING:
            return {NEUTRAL}
    return {OTHER}


def _returned(ev: Evaluator, mod: ModuleInfo, func: cst.FunctionDef, hops: int) -> set[str]:
    cls = mod.func_class.get(func)
    sites = callers_of(ev, mod, func, cls)
    if not sites:
        return {OTHER}
    out: set[str] = set()
    for cmod, site in sites:
        if site.func is None:
            return {OTHER}
        out |= _fates(ev, cmod, site.node, site.func, None, hops + 1)
    return out


def _assigned(
    ev: Evaluator,
    mod: ModuleInfo,
    func: cst.FunctionDef,
    assign: cst.Assign,
    target: cst.BaseExpression,
    attr: str | None,
    hops: int,
) -> set[str]:
    if isinstance(target, cst.Name):
        uses = _name_uses(func, target.value, assign)
        if not uses:
            return {OTHER}
        out: set[str] = set()
        for use in uses:
            out |= _fates(ev, mod, use, func, attr, hops + 1)
        return out
    name = _self_attr(target)
    if name is None:
        return {OTHER}
    if name == attr:
        return {NEUTRAL}
    return _attr_fates(ev, mod, name, hops)


def _attr_fates(ev: Evaluator, mod: ModuleInfo, attr: str, hops: int) -> set[str]:
    """The fates of ``self.attr`` where the project's classes read it (remembered per run)."""
    memo = ev.project.summaries.setdefault("attr_fates", {})
    got = memo.get(attr)
    if got is _BUSY:
        ev.memo.unsettled()
    if got is None:
        memo[attr] = _BUSY  # a read that leads back here adds nothing
        got = memo[attr] = _read_fates(ev, mod, attr, hops)
    return set(got)


_BUSY = frozenset({OTHER})  # the stand-in of an attribute whose reads are being followed (by identity)


def _read_fates(ev: Evaluator, mod: ModuleInfo, attr: str, hops: int) -> set[str]:
    files = ev.project.references(attr, lambda _n: True)
    if len(files) > MAX_ATTR_FILES:
        return {OTHER}
    out: set[str] = set()
    reads = self_attribute_pattern(attr)
    for path in sorted(files | {mod.path}):
        rmod = mod if path == mod.path else ev.project.load_if(path, reads)
        if rmod is None:
            continue
        for rfunc, read in _attr_reads(rmod, attr):
            out |= _fates(ev, rmod, read, rfunc, attr, hops + 1)
    return out or {OTHER}


def _message_fates(
    ev: Evaluator, mod: ModuleInfo, msg: cst.CSTNode, func: cst.FunctionDef, hops: int
) -> set[str]:
    """What a user message comes to: appended to a conversation an object keeps, or else."""
    parents = _parents(mod, func, msg)
    if not parents:
        return {OTHER}
    parent = parents[-1]
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
        if not isinstance(target, cst.Name):
            return {OTHER}
        out: set[str] = set()
        for use in _name_uses(func, target.value, parent):
            out |= _message_fates(ev, mod, use, func, hops + 1)
        return out or {OTHER}
    if isinstance(parent, cst.Element) and len(parents) >= 3 and isinstance(parents[-2], cst.List):
        aug = parents[-3]
        if isinstance(aug, cst.AugAssign) and isinstance(aug.operator, cst.AddAssign):
            return {TURN} if _kept(aug.target) else {OTHER}
        if isinstance(aug, cst.Arg) and len(parents) >= 4:
            return _appended(parents[-4])
        return {OTHER}
    if isinstance(parent, cst.Arg) and len(parents) >= 2:
        return _appended(parents[-2])
    return {OTHER}


def _appended(call: cst.CSTNode) -> set[str]:
    """``self.messages.append(msg)``, ``self.memory.add_message(msg)``: a turn of a kept conversation."""
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return {OTHER}
    if call.func.attr.value not in _APPEND:
        return {OTHER}
    return {TURN} if _kept(call.func.value) else {OTHER}


def _kept(node: cst.BaseExpression) -> bool:
    """An attribute of ``self`` (``self.messages``, ``self.memory``): state kept across calls."""
    while isinstance(node, cst.Attribute):
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            return True
        node = node.value
    return False


def _is_user_message(call: cst.Call) -> bool:
    """``user_message(x)``, ``HumanMessage(x)``, ``Message(role="user", content=x)``."""
    from prefixlint.analysis.python.messages import _constructors

    last = dotted_name(call.func).rsplit(".", 1)[-1]
    if _constructors().get(last) == "user" or _USER_MESSAGE.search(last):
        return True
    for arg in call.args:
        if (
            arg.keyword is not None
            and arg.keyword.value == "role"
            and isinstance(arg.value, cst.SimpleString)
        ):
            return evaluated(arg.value) in ("user", "human")
    return False


def _is_user_dict(node: cst.CSTNode, element: cst.DictElement) -> bool:
    """``{"role": "user", "content": value}`` with the value at ``element``."""
    if not isinstance(node, cst.Dict) or not isinstance(element.key, cst.SimpleString):
        return False
    if evaluated(element.key) != "content":
        return False
    for el in node.elements:
        if (
            isinstance(el, cst.DictElement)
            and isinstance(el.key, cst.SimpleString)
            and evaluated(el.key) == "role"
        ):
            return isinstance(el.value, cst.SimpleString) and evaluated(el.value) in ("user", "human")
    return False


def _self_attr(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _parents(mod: ModuleInfo, root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes from ``root`` down to ``target``'s parent (empty when ``target`` is not inside)."""
    out: list[cst.CSTNode] = []
    node = mod.parents.get(id(target))
    while node is not None:
        out.append(node)
        if node is root:
            return out[::-1]
        node = mod.parents.get(id(node))
    return []


def _name_uses(func: cst.FunctionDef, name: str, after: cst.CSTNode) -> list[cst.Name]:
    """Reads of local ``name`` in ``func`` after the statement ``after`` (in source order)."""
    out: list[cst.Name] = []
    seen = False

    class _Find(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            nonlocal seen
            if n is after:
                seen = True
                return False
            if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and n is not func:
                return False
            if isinstance(n, cst.AssignTarget):
                return False  # a new value for the name, not a read
            if isinstance(n, cst.Attribute):
                n.value.visit(self)  # ``x.name`` reads ``x``, not ``name``
                return False
            if seen and isinstance(n, cst.Name) and n.value == name:
                out.append(n)
            return True

    func.visit(_Find())
    return out


def _attr_reads(mod: ModuleInfo, attr: str) -> list[tuple[cst.FunctionDef, cst.Attribute]]:
    """``(method, node)`` for each read of ``self.attr`` in the classes of ``mod``."""
    out: list[tuple[cst.FunctionDef, cst.Attribute]] = []
    methods: list[tuple[cst.FunctionDef, ClassInfo]] = []
    for cls in mod.classes.values():
        methods.extend((m, cls) for m in cls.methods.values())
    for method, _cls in methods:

        class _Find(cst.CSTVisitor):
            def visit_AssignTarget(self, n: cst.AssignTarget) -> bool:
                return False

            def visit_Attribute(self, n: cst.Attribute) -> bool:
                if _self_attr(n) == attr:
                    out.append((method, n))  # noqa: B023
                return True

        method.visit(_Find())
    return out
