"""Message lists, content blocks and tool lists: the structured parts of a request.

A message list is evaluated to :class:`Msg` objects (a role and its pieces, or a slot of
conversation history). Lists built literally, with ``append``/``extend``/``insert``/``+=``, in loops,
or returned by helpers are followed; ``*history`` and ``messages.extend(history)`` become history.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from prefixlint.analysis.python import branches, fixes
from prefixlint.analysis.python.collect import evaluated
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.resolve import find_param, local_ops, ops_before
from prefixlint.analysis.python.sources import (
    GATHER,
    dotted_name,
    dynamic,
    is_static,
    mark,
    name_kind,
    static,
)
from prefixlint.model.layout import (
    CacheControl,
    DynamicKind,
    Nondeterminism,
    Segment,
    SourceLocation,
    Timing,
    evolve,
)

ROLE_ALIASES = {"human": "user", "ai": "assistant", "model": "assistant", "placeholder": "history"}


@dataclass
class Msg:
    """One message (``role`` + pieces), or a history slot when ``history`` is True."""

    role: str | None
    segs: list[Segment]
    location: SourceLocation | None = None
    history: bool = False
    repeated: bool = False
    conditional: bool = False


def looks_text(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)) or (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, (cst.Add, cst.Modulo))
        and (looks_text(node.left) or looks_text(node.right))
    )


def _insert_index(call: cst.Call) -> int | None:
    if len(call.args) >= 2 and isinstance(call.args[0].value, cst.Integer):
        return int(call.args[0].value.value)
    return None


def _cache_control(node: cst.BaseExpression, env: Env) -> CacheControl:
    ttl = "5m"
    if isinstance(node, cst.Dict):
        for d in node.elements:
            if (
                isinstance(d, cst.DictElement)
                and isinstance(d.key, cst.SimpleString)
                and evaluated(d.key) == "ttl"
                and isinstance(d.value, cst.SimpleString)
            ):
                ttl = str(evaluated(d.value))
    return CacheControl(ttl=ttl, location=env.mod.loc(node))


def _target_names(target: cst.BaseExpression) -> list[str]:
    """Names bound by a ``for`` target: ``x``, ``(i, x)``, ``[k, v]``."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    return []


def node_name(node: cst.CSTNode) -> str:
    return node.value if isinstance(node, cst.Name) else ""


def _pick(item_lists: list[list[Segment]]) -> list[Segment]:
    for item in item_lists:
        if not is_static(item):
            return item
    return item_lists[0] if item_lists else []


def _constructors() -> dict[str, str]:
    from prefixlint.plugins import load_plugins

    out: dict[str, str] = {}
    for plugin in load_plugins():
        out.update(plugin.message_constructors)
    return out


class MessagesMixin:
    """The evaluator's reading of message lists, single messages, content blocks, items and tools.

    Mixed into :class:`~prefixlint.analysis.python.evaluate.Evaluator`, whose ``text`` and helper
    lookups these methods use; this module never imports the evaluator.
    """

    def _history(self, node: cst.CSTNode, env: Env, label: str) -> Msg:
        kind, conf = name_kind(self.catalog, label)
        if kind not in (
            DynamicKind.HISTORY,
            DynamicKind.MEMORY,
            DynamicKind.TOOL_OUTPUT,
            DynamicKind.RETRIEVED_CONTEXT,
        ):
            kind = DynamicKind.HISTORY
        loc = env.mod.loc(node)
        return Msg(
            None, [dynamic(kind, Timing.REQUEST, label, loc, confidence=conf or 0.7)], loc, history=True
        )

    def message_list(self, node: cst.CSTNode, env: Env) -> list[Msg]:
        """The messages ``node`` evaluates to, in order."""
        if env.depth > 12:
            return []
        loc = env.mod.loc(node)
        if isinstance(node, (cst.List, cst.Tuple)):
            out: list[Msg] = []
            for el in node.elements:
                if isinstance(el, cst.StarredElement):
                    out.extend(self._splat(el.value, env))
                else:
                    out.extend(self.message_item(el.value, env))
            return out
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            return self.message_list(node.left, env) + self.message_list(node.right, env)
        if looks_text(node):
            return [Msg("user", self.text(node, env), loc)]
        if isinstance(node, cst.Name):
            name = node.value
            if env.func is not None:
                ops = local_ops(env.mod, env.func).get(name)
                if ops:
                    before = ops_before(ops, env.pos)
                    if before:
                        return self._replay(before, env)
                param = find_param(env.func, name)
                if param is not None:
                    if name in env.arg_nodes:
                        # a helper's parameter: the list its caller passes (an in-house send path)
                        node_, caller = env.arg_nodes[name]
                        return self.message_list(node_, caller.deeper())
                    return [self._history(param, env, name)]
            if name in env.mod.assigns:
                value = env.mod.assigns[name]
                return self.message_list(value, self.module_env(env.mod).at(env.mod.pos(value)))
            return [self._history(node, env, name)]
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value in env.mod.imports
            and node.value.value not in env.bindings
        ):
            # ``prompts.CHAT_MESSAGES``: a message list defined in an imported module
            got = self._imported(env.mod, node.value.value)
            if got is not None and got[1] is None and node.attr.value in got[0].assigns:
                tmod = got[0]
                value = tmod.assigns[node.attr.value]
                return self.message_list(value, self.module_env(tmod).at(tmod.pos(value)).deeper())
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            msgs = self.message_item(node.elt, env)
            return [evolve(m, repeated=True) for m in msgs] or [self._history(node, env, "messages")]
        if isinstance(node, cst.Call):
            fn = self._function_for(node.func, env)
            if fn is not None:
                got = self.call_function(*fn[:3], node, env, "messages", fn.self_binds)
                return got or [self._history(node, env, fn[0].name.value)]
            name = dotted_name(node.func)
            if name.rsplit(".", 1)[-1] in ("list", "copy", "deepcopy") and node.args:
                return self.message_list(node.args[0].value, env)
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "copy":
                return self.message_list(node.func.value, env)
            if name.rsplit(".", 1)[-1] in ("format_messages", "to_messages", "format_prompt", "invoke"):
                return self.message_list(node.func.value, env) if isinstance(node.func, cst.Attribute) else []
            if name.rsplit(".", 1)[-1] == "from_messages" and node.args:
                return self.message_list(node.args[0].value, env)
            return [self._history(node, env, name.rsplit(".", 1)[-1] or "messages")]
        return [self._history(node, env, "messages")]

    def _splat(self, node: cst.CSTNode, env: Env) -> list[Msg]:
        if isinstance(node, (cst.List, cst.Tuple, cst.Call)):
            return self.message_list(node, env)
        if (
            isinstance(node, cst.Name)
            and env.func is not None
            and local_ops(env.mod, env.func).get(node.value)
        ):
            return self.message_list(node, env)
        label = node.value if isinstance(node, cst.Name) else env.mod.source(node)
        return [self._history(node, env, label)]

    def _replay(self, ops: list, env: Env) -> list[Msg]:
        msgs: list[Msg] = []
        for op in ops:
            sub = env.at(op.pos)
            if op.kind == "assign":
                new = self.message_list(op.value, sub)
            elif op.kind in ("aug", "extend"):
                new = self._splat(op.value, sub) if op.kind == "extend" else self.message_list(op.value, sub)
            elif (
                op.kind in ("append", "insert")
                and op.loop_iter is not None
                and not all(is_static(item) for item in self.items(op.loop_iter, sub))
            ):
                # one message per element of a runtime sequence: conversation history (or memory...)
                label = (
                    op.loop_iter.value if isinstance(op.loop_iter, cst.Name) else env.mod.source(op.loop_iter)
                )
                new = [self._history(op.loop_iter, sub, label)]
            elif op.kind in ("append", "insert"):
                new = self.message_item(op.value, sub)
            else:
                continue
            if op.conditional:
                new = [evolve(m, conditional=True, segs=mark(m.segs, conditional=True)) for m in new]
            if op.loop_iter is not None and op.kind != "assign":
                new = [evolve(m, repeated=True, segs=mark(m.segs, repeated=True)) for m in new]
            if op.kind == "assign":
                msgs = new
            elif op.kind == "insert" and isinstance(op.node, cst.Call) and _insert_index(op.node) == 0:
                msgs = new + msgs
            else:
                msgs = msgs + new
        return msgs

    def _role_of(self, node: cst.BaseExpression, env: Env) -> str | None:
        if isinstance(node, cst.SimpleString) and isinstance(evaluated(node), str):
            role = evaluated(node).lower()
            return ROLE_ALIASES.get(role, role)
        name = dotted_name(node).rsplit(".", 1)[-1].lower()
        if name in ("system", "user", "assistant", "developer", "tool", "human", "ai", "function"):
            return ROLE_ALIASES.get(name, name)
        segs = self.text(node, env)
        if is_static(segs):
            role = "".join(s.text for s in segs).lower()
            return ROLE_ALIASES.get(role, role)
        return None

    def message_item(self, node: cst.CSTNode, env: Env) -> list[Msg]:
        """One element of a message list (a dict, a constructor call, a tuple, a helper's return)."""
        loc = env.mod.loc(node)
        if isinstance(node, cst.Dict):
            role: str | None = None
            segs: list[Segment] = []
            for el in node.elements:
                if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                    continue
                key = evaluated(el.key)
                if key == "role":
                    role = self._role_of(el.value, env)
                elif key == "content":
                    segs = self.content(el.value, env)
            return [Msg(role, segs, loc)]
        if isinstance(node, cst.Tuple) and len(node.elements) == 2:
            role = self._role_of(node.elements[0].value, env)
            if role == "history":
                return [self._history(node, env, "history")]
            return [Msg(role, self.content(node.elements[1].value, env), loc)]
        if isinstance(node, cst.Await):
            return self.items(node.expression, env)
        if isinstance(node, cst.Call):
            name = dotted_name(node.func)
            last = name.rsplit(".", 1)[-1]
            constructors = _constructors()
            if last == "MessagesPlaceholder":
                label = "history"
                for a in node.args:
                    if isinstance(a.value, cst.SimpleString) and isinstance(evaluated(a.value), str):
                        label = evaluated(a.value)
                return [self._history(node, env, label)]
            if last == "dict":
                role = None
                segs = []
                for a in node.args:
                    if a.keyword is not None and a.keyword.value == "role":
                        role = self._role_of(a.value, env)
                    elif a.keyword is not None and a.keyword.value == "content":
                        segs = self.content(a.value, env)
                return [Msg(role, segs, loc)]
            if last in constructors:
                role = constructors[last]
                body: cst.BaseExpression | None = None
                for i, a in enumerate(node.args):
                    kw = a.keyword.value if a.keyword else None
                    if kw in ("content", "text", "template", "prompt") or (
                        kw is None and i == 0 and body is None
                    ):
                        body = a.value
                    elif kw == "role":
                        role = self._role_of(a.value, env) or role
                segs = self.content(body, env) if body is not None else []
                if last.endswith("PromptTemplate") or last.endswith("from_template"):
                    segs = self._template_content(node, body, env) if body is not None else segs
                return [Msg(role or "user", segs, loc)]
            fn = self._function_for(node.func, env)
            if fn is not None:
                got = self.call_function(*fn[:3], node, env, "item", fn.self_binds)
                return got
        if isinstance(node, cst.Name) and env.func is not None:
            ops = local_ops(env.mod, env.func).get(node.value)
            if ops:
                before = ops_before(ops, env.pos)
                if before and before[-1].kind == "assign":
                    value = before[-1].value
                    if isinstance(value, (cst.List, cst.ListComp)):
                        return self.message_list(value, env.at(before[-1].pos))
                    return self.message_item(value, env.at(before[-1].pos))
        if isinstance(node, cst.Name):
            const = self._module_message(node, env)
            if const is not None:
                return self.message_item(*const)
        if isinstance(node, (cst.List, cst.ListComp)):
            return self.message_list(node, env)
        segs = self.text(node, env)
        if is_static(segs):
            return [Msg(None, segs, loc)]
        return (
            [self._history(node, env, dotted_name(node) or "message")]
            if isinstance(node, (cst.Name, cst.Attribute))
            else [Msg(None, segs, loc)]
        )

    def _module_message(self, name: cst.Name, env: Env) -> tuple[cst.Dict, Env] | None:
        """``SYSTEM = {"role": "system", "content": ...}`` at module level, in this module or imported:
        the dict and the env of its module (a message written once, an item of many message lists)."""
        key = name.value
        if key in env.bindings or (
            env.func is not None and (local_ops(env.mod, env.func).get(key) or find_param(env.func, key))
        ):
            return None
        mod = env.mod
        if key not in mod.assigns and key in mod.imports:
            got = self._imported(mod, key)
            if got is None or got[1] is None:
                return None
            mod, key = got
        value = mod.assigns.get(key)
        if not isinstance(value, cst.Dict):
            return None
        return value, self.module_env(mod).at(mod.pos(value))

    def _template_content(self, call: cst.Call, body: cst.BaseExpression, env: Env) -> list[Segment]:
        style = "format"
        for a in call.args:
            if (
                a.keyword is not None
                and a.keyword.value == "template_format"
                and isinstance(a.value, cst.SimpleString)
            ):
                fmt = evaluated(a.value)
                style = {"mustache": "mustache", "jinja2": "jinja", "f-string": "format"}.get(
                    str(fmt), "format"
                )
        tmpl = self.template_source(body, env)
        if tmpl is None:
            return self.text(body, env)
        return self.render(tmpl, style, {}, env, call)

    def content(self, node: cst.BaseExpression | None, env: Env) -> list[Segment]:
        """A message ``content``: a string, or a list of content blocks (with ``cache_control``)."""
        if node is None:
            return []
        if self.template_mode:
            tmpl = self.template_source(node, env)
            if tmpl is not None:
                return self.render(tmpl, self.template_mode, {}, env, node)
        if isinstance(node, (cst.List, cst.Tuple)) and any(
            isinstance(el.value, cst.Dict) for el in node.elements if isinstance(el, cst.Element)
        ):
            return self.blocks(node, env)
        if isinstance(node, cst.Name) and env.func is None and node.value in env.mod.assigns:
            value = env.mod.assigns[node.value]
            if isinstance(value, cst.List):
                return self.blocks(value, self.module_env(env.mod))
        return self.text(node, env)

    def blocks(self, node: cst.List | cst.Tuple, env: Env) -> list[Segment]:
        """Anthropic/OpenAI content blocks; each block's pieces get ``message_index`` = its position."""
        out: list[Segment] = []
        for i, el in enumerate(node.elements):
            if not isinstance(el, cst.Element):
                continue
            segs: list[Segment] = []
            cc: CacheControl | None = None
            value = el.value
            if isinstance(value, cst.Dict):
                for d in value.elements:
                    if not isinstance(d, cst.DictElement) or not isinstance(d.key, cst.SimpleString):
                        continue
                    key = evaluated(d.key)
                    if key in ("text", "content"):
                        segs = self.text(d.value, env)
                    elif key == "cache_control":
                        cc = _cache_control(d.value, env)
                    elif key in ("source", "image_url", "input_image"):
                        segs = [static("[image]", env.mod.loc(d.value))]
            else:
                segs = self.text(value, env)
            if not segs:
                segs = [static("", env.mod.loc(value))]
            segs = [evolve(s, message_index=i) for s in segs]
            if cc is not None:
                segs[-1] = evolve(segs[-1], cache_control=cc)
            out.extend(segs)
        return out

    def items(self, node: cst.BaseExpression, env: Env) -> list[list[Segment]]:
        """Elements of a list-like expression (for ``join`` and tool lists), flagging set iteration."""
        if (
            isinstance(node, (cst.Name, cst.Attribute))
            and node_name(node) not in env.bindings
            and self.is_set(node, env)
        ):
            return [self._unordered(node, env, [static(env.mod.source(node), env.mod.loc(node))])]
        if isinstance(node, (cst.List, cst.Tuple)):
            out: list[list[Segment]] = []
            for el in node.elements:
                if isinstance(el, cst.StarredElement):
                    out.extend(self.items(el.value, env))
                else:
                    out.append(self.text(el.value, env))
            return out
        if isinstance(node, (cst.Set, cst.SetComp)) or (
            isinstance(node, cst.Call) and dotted_name(node.func) in ("set", "frozenset")
        ):
            return [self._unordered(node, env, [static(env.mod.source(node), env.mod.loc(node))])]
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            gen = node.for_in
            binds = dict(env.bindings)
            inner = self.items(gen.iter, env)
            for target in _target_names(gen.target):
                binds[target] = _pick(inner)
            elt = self.text(node.elt, evolve(env, bindings=binds))
            elt = mark(elt, repeated=True)
            if self.is_set(gen.iter, env):
                elt = self._unordered(gen.iter, env, elt)
            return [elt]
        if isinstance(node, cst.Name):
            if node.value in env.bindings:
                return [env.bindings[node.value]]
            if env.func is not None:
                ops = local_ops(env.mod, env.func).get(node.value)
                if ops:
                    before = ops_before(ops, env.pos)
                    if before:
                        return self._replay_items(before, env)
                param = find_param(env.func, node.value)
                if param is not None:
                    segs = self.text(node, env)
                    if self.is_set(node, env):
                        return [self._unordered(node, env, segs)]
                    return [mark(segs, repeated=True)]
            if node.value in env.mod.assigns:
                value = env.mod.assigns[node.value]
                return self.items(value, self.module_env(env.mod).at(env.mod.pos(value)))
        if isinstance(node, cst.Await):
            return self.items(node.expression, env)
        if isinstance(node, cst.Call):
            name = dotted_name(node.func)
            last = name.rsplit(".", 1)[-1]
            if last in ("sorted",) and node.args:
                got = self.items(node.args[0].value, env)
                return [
                    [
                        evolve(s, nondeterminism=None, fixes=())
                        if s.nondeterminism is Nondeterminism.SET_ITERATION
                        else s
                        for s in item
                    ]
                    for item in got
                ]
            if last in ("list", "tuple", "reversed", "enumerate") and node.args:
                return self.items(node.args[0].value, env)
            if name in GATHER and node.args:  # ``asyncio.gather(*calls)``: one result per call
                return [item for a in node.args for item in self.items(a.value, env)]
            if last == "zip" and node.args:
                return [seg for a in node.args for seg in self.items(a.value, env)]
            if last == "range":
                return [[static("", env.mod.loc(node))]]
            if isinstance(node.func, cst.Attribute) and last in ("values", "keys", "items"):
                base = self.text(node.func.value, env)
                return [mark(base, repeated=True)]
        segs = self.text(node, env)
        if self.is_set(node, env):
            return [self._unordered(node, env, segs)]
        return [mark(segs, repeated=True)] if not is_static(segs) else [segs]

    def _unordered(self, iter_node: cst.CSTNode, env: Env, segs: list[Segment]) -> list[Segment]:
        safe = self._string_items(iter_node, env)  # type: ignore[attr-defined,arg-type]
        fix = fixes.sorted_fix(env.mod, iter_node, safe=safe)  # type: ignore[arg-type]
        if not segs:
            segs = [static(env.mod.source(iter_node), env.mod.loc(iter_node))]
        first = evolve(
            segs[0],
            nondeterminism=Nondeterminism.SET_ITERATION,
            fixes=(fix,) if fix else (),
            location=env.mod.loc(iter_node),
            repeated=True,
        )
        return [first, *segs[1:]]

    def _replay_items(self, ops: list, env: Env) -> list[list[Segment]]:
        out: list[list[Segment]] = []
        for op in ops:
            if op.conditional and branches.dead(self, op, env):  # type: ignore[arg-type]
                continue  # under ``if flag:`` with ``flag`` false for this call
            sub = env.at(op.pos)
            if op.kind == "assign":
                out = self.items(op.value, sub)
                continue
            if op.kind == "for":  # ``for group in groups: for x in group``: one element's items
                elem = _pick(self.items(op.value, sub))
                out = [mark(elem, repeated=True)] if not is_static(elem) else []
                continue
            if op.kind in ("append", "insert"):
                new = [self.text(op.value, sub)]
            elif op.kind in ("extend", "aug"):
                new = self.items(op.value, sub)
            else:
                continue
            if op.loop_iter is not None:
                new = [mark(n, repeated=True) for n in new]
                if self.is_set(op.loop_iter, sub):
                    new = [self._unordered(op.loop_iter, sub, n) for n in new]
            out.extend(new)
        return out

    def tool_segments(self, node: cst.BaseExpression, env: Env) -> list[Segment]:
        """The tools list: one static piece per tool (its source text), with any nondeterminism."""
        out: list[Segment] = []
        for item in self.items(node, env):
            nd = next((s for s in item if s.nondeterminism is not None), None)
            text = "".join(s.text for s in item if s.static)
            loc = item[0].location if item else env.mod.loc(node)
            seg = static(text, loc)
            if nd is not None:
                seg = evolve(
                    seg,
                    nondeterminism=nd.nondeterminism,
                    fixes=nd.fixes,
                    location=nd.location,
                    repeated=nd.repeated,
                )
            out.append(seg)
        return out
