"""Templates looked up by name in a prompt registry and filled with a dict of inputs.

``store.get_prompt("summarise", inputs={"doc": doc, "today": today})`` fills a template that the
application loaded from its YAML prompt files at start-up (:mod:`prefixlint.analysis.templates.named`).
The call is linked to the template when a text argument of the call is the template's name and
every key of the inputs is one of its placeholders. When no argument names it (the name comes from
settings), the template whose placeholders are exactly the inputs' keys is taken, if only one has
them and they are at least two. The filled template is reported like any other fill site: on the
placeholder's line in the YAML file, when a per-request value sits ahead of a long static body.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.collect import ModuleInfo, evaluated
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.fills import MIN_FILL_STATIC_CHARS
from prefixlint.analysis.python.resolve import local_ops, ops_before
from prefixlint.analysis.python.sources import is_static, join_text
from prefixlint.analysis.python.templating import TemplateSrc
from prefixlint.model.layout import Segment, SourceLocation, Timing

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator
    from prefixlint.analysis.templates.named import NamedTemplate

# Fewest input keys that identify a template by its placeholders alone (one key is too common).
MIN_KEYS_WITHOUT_NAME = 2


def registry_fills(ev: Evaluator, mod: ModuleInfo) -> list[tuple[str, list[Segment], SourceLocation | None]]:
    """``(name, pieces, where)`` for each call of ``mod`` that fills a named template with an inputs dict."""
    try:
        from prefixlint.analysis.templates.named import named_templates
    except ImportError:
        return []
    templates = named_templates(str(Path(ev.project.root).resolve()))
    if not templates:
        return []
    out = []
    for site in mod.calls:
        dicts = [a.value for a in site.node.args if isinstance(a.value, (cst.Dict, cst.Name)) and not a.star]
        if not dicts:
            continue
        timing = Timing.REQUEST if site.func is not None else Timing.PROCESS
        env = Env(mod=mod, func=site.func, cls=site.cls, timing=timing, pos=mod.pos(site.node))
        for node in dicts:
            found = ev.dict_literal(node, env)
            if found is None:
                continue
            keys = _keys(found[0])
            if not keys:
                continue
            tmpl = _match(ev, site.node, env, keys, templates)
            if tmpl is None:
                continue
            segs = _fill(ev, tmpl, found, site.node, env)
            if breaks_ahead_of_static(segs):
                out.append((f"{tmpl.name} (looked up here)", segs, mod.loc(site.node)))
            break
    return out


def _keys(node: cst.Dict) -> frozenset[str]:
    keys = set()
    for el in node.elements:
        if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
            return frozenset()  # a ``**spread`` or a computed key: the inputs are not all known
        key = evaluated(el.key)
        if not isinstance(key, str) or not key.isidentifier():
            return frozenset()
        keys.add(key)
    return frozenset(keys)


def _match(
    ev: Evaluator, call: cst.Call, env: Env, keys: frozenset[str], templates: tuple[NamedTemplate, ...]
) -> NamedTemplate | None:
    fitting = [t for t in templates if keys <= t.placeholders]
    if not fitting:
        return None
    names = {n for arg in call.args if not arg.star for n in _names(ev, arg.value, env)}
    named = [t for t in fitting if t.name in names]
    if named:
        return named[0] if len(named) == 1 else None
    exact = [t for t in fitting if t.placeholders == keys]
    if len(exact) == 1 and len(keys) >= MIN_KEYS_WITHOUT_NAME:
        return exact[0]
    return None


def _names(ev: Evaluator, node: cst.BaseExpression, env: Env) -> set[str]:
    """The texts an argument can hold: its static value, or each literal a local name is set to."""
    if not isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.Name)):
        return set()
    segs = ev.text(node, env)
    if segs and is_static(segs):
        return {join_text(segs)}
    if not isinstance(node, cst.Name) or env.func is None:
        return set()
    ops = ops_before(local_ops(env.mod, env.func).get(node.value, []), env.pos)
    out = set()
    for op in ops:
        if op.kind == "assign" and isinstance(op.value, cst.SimpleString):
            value = evaluated(op.value)
            if isinstance(value, str):
                out.add(value)
    return out


def _fill(
    ev: Evaluator, tmpl: NamedTemplate, found: tuple[cst.Dict, Env], call: cst.Call, env: Env
) -> list[Segment]:
    ev.dependencies.add(tmpl.path)
    loc = env.mod.loc(call)
    at = tmpl.body
    src = TemplateSrc(at.text, tmpl.path, at.line, at.col, (loc,) if loc else (), indent=at.indent)
    return ev.render(src, tmpl.style, ev._dict_binds(*found), env, call)


def breaks_ahead_of_static(segs: list[Segment]) -> bool:
    """True when the first per-request value is followed by a long static body."""
    for i, seg in enumerate(segs):
        if seg.breaks_cache and seg.kind is not None and seg.timing is Timing.REQUEST:
            return sum(len(s.text) for s in segs[i + 1 :] if s.static) >= MIN_FILL_STATIC_CHARS
    return False
