"""Assemble the pieces found at a sink into a :class:`Layout`, in provider order.

Order is tools (and response format), then system/instructions, then messages. Leading system or
developer messages count as the system section; history slots keep their place; the final user
message is marked ``is_last_user_message``.
"""

from __future__ import annotations

import libcst as cst

from prefixlint.analysis.python import messages as msgs
from prefixlint.analysis.python import prompt_callables as callables
from prefixlint.analysis.python.collect import CallSite, evaluated
from prefixlint.analysis.python.evaluate import Env, Evaluator
from prefixlint.analysis.python.resolve import local_ops, ops_before
from prefixlint.model.layout import DynamicKind, Layout, Section, Segment, SourceLocation, evolve
from prefixlint.model.providers import guess_provider, provider_names
from prefixlint.model.settings import Settings
from prefixlint.plugins import SinkSpec


def sink_args(ev: Evaluator, site: CallSite, spec: SinkSpec, env: Env) -> dict[str, cst.BaseExpression]:
    """Argument name -> expression, including ``**params`` built from a local dict literal."""
    out: dict[str, cst.BaseExpression] = {}
    pos = 0
    for arg in site.node.args:
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        elif arg.star == "**":
            d = _dict_value(arg.value, env)
            if d is not None:
                for el in d.elements:
                    if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                        key = evaluated(el.key)
                        if isinstance(key, str):
                            out[key] = el.value
        elif not arg.star:
            role = spec.positional.get(pos)
            if role is not None:
                out[f"@{role}"] = arg.value
            pos += 1
    return out


def _dict_value(node: cst.BaseExpression, env: Env) -> cst.Dict | None:
    if isinstance(node, cst.Dict):
        return node
    if isinstance(node, cst.Name) and env.func is not None:
        ops = local_ops(env.mod, env.func).get(node.value)
        if ops:
            before = ops_before(ops, env.pos)
            if before and isinstance(before[0].value, cst.Dict):
                return before[0].value
    return None


def _pick(
    args: dict[str, cst.BaseExpression], names: tuple[str, ...], role: str
) -> cst.BaseExpression | None:
    for name in names:
        if name in args:
            return args[name]
    return args.get(f"@{role}")


def build_layout(
    ev: Evaluator, site: CallSite, spec: SinkSpec, env: Env, settings: Settings
) -> Layout | None:
    """The layout sent by one sink call, or None when the call carries no prompt."""
    args = sink_args(ev, site, spec, env)
    segs: list[Segment] = []
    style = spec.template_style
    ev.template_mode = style
    try:
        tools = _pick(args, spec.tools, "tools")
        if tools is not None:
            segs.extend(evolve(s, section=Section.TOOLS) for s in ev.tool_segments(tools, env))
        rf = _pick(args, spec.response_format, "response_format")
        if rf is not None:
            segs.extend(evolve(s, section=Section.TOOLS, role="response_format") for s in ev.text(rf, env))
        system = _pick(args, spec.system, "system")
        hooked = callables.prompt_messages(ev, system, env) if system is not None else None
        if system is not None and hooked is None:
            got = callables.returned_value(ev, system, env)
            body, where = got if got is not None else (system, env)
            segs.extend(evolve(s, section=Section.SYSTEM, role="system") for s in ev.content(body, where))
        for follows in filter(None, (keyword_path(args, p) for p in spec.system_follows)):
            segs.extend(evolve(s, section=Section.SYSTEM, role="system") for s in ev.content(follows, env))
        messages_node = _pick(args, spec.messages, "messages")
        messages = ev.message_list(messages_node, env) if messages_node is not None else []
        if hooked is not None:
            messages = hooked + messages
        prompt = _pick(args, spec.prompt, "prompt")
        if prompt is not None:
            messages.append(msgs.Msg("user", ev.content(prompt, env), env.mod.loc(prompt)))
    finally:
        ev.template_mode = ""
    segs.extend(_message_segments(messages))
    if (
        not any(s.static or s.cache_control for s in segs)
        and _pick(args, spec.cache_key, "cache_key") is None
    ):
        return None  # nothing the code shows: no layout (e.g. ``retriever.invoke(q)``)
    model = _model(args.get(spec.model_kw))
    provider = spec.provider
    if provider == "auto" or provider not in provider_names():
        provider = guess_provider(model) if model else settings.provider
    if model is None and provider == settings.provider:
        model = settings.model
    layout = Layout(
        segments=segs, provider=provider, model=model, sink=env.mod.loc(site.node), sink_name=spec.name
    )
    key = _pick(args, spec.cache_key, "cache_key")
    if key is not None:
        pieces = ev.text(key, env)
        layout.cache_key = next((p for p in pieces if not p.static), pieces[0] if pieces else None)
    return layout


def keyword_path(args: dict[str, cst.BaseExpression], path: str) -> cst.BaseExpression | None:
    """``output_format.template``: the ``template`` of the ``output_format=Parser(template=...)``
    argument (a call's keyword, or a key of a dict literal)."""
    head, *rest = path.split(".")
    node = args.get(head)
    for key in rest:
        if isinstance(node, cst.Call):
            named = (a.value for a in node.args if a.keyword is not None and a.keyword.value == key)
            node = next(named, None)
        elif isinstance(node, cst.Dict):
            node = next(
                (
                    el.value
                    for el in node.elements
                    if isinstance(el, cst.DictElement)
                    and isinstance(el.key, cst.SimpleString)
                    and evaluated(el.key) == key
                ),
                None,
            )
        else:
            return None
    return node


def _model(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.SimpleString) and isinstance(evaluated(node), str):
        return evaluated(node).split("/", 1)[-1] if "/" in evaluated(node) else evaluated(node)
    return None


def _message_segments(messages: list[msgs.Msg]) -> list[Segment]:
    out: list[Segment] = []
    leading_system = True
    last_user = None
    if messages and messages[-1].role == "user" and not messages[-1].history:
        last_user = len(messages) - 1
    for i, m in enumerate(messages):
        role = "history" if m.history else (m.role or "user")
        if role not in ("system", "developer"):
            leading_system = False
        section = Section.SYSTEM if leading_system else Section.MESSAGES
        for s in m.segs:
            seg = evolve(
                s, section=section, role=role, message_index=i, is_last_user_message=(i == last_user)
            )
            if m.history and seg.kind is None:
                seg = evolve(seg, kind=DynamicKind.HISTORY)
            if m.repeated:
                seg = evolve(seg, repeated=True)
            if m.conditional:
                seg = evolve(seg, conditional=True)
            out.append(seg)
    return out


def text_layout(
    segs: list[Segment],
    name: str,
    loc: SourceLocation | None,
    settings: Settings,
    section: Section = Section.SYSTEM,
) -> Layout:
    """A layout for a prompt-named value that reaches no known sink (``SYSTEM_TEMPLATE (name)``)."""
    return Layout(
        segments=[evolve(s, section=section, role="system") for s in segs],
        provider=settings.provider,
        model=settings.model,
        sink=loc,
        sink_name=name,
    )
