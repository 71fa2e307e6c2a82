"""Template constants filled in place: ``TEMPLATE.replace("{x}", value)`` and fill sites that reach
no sink the analyzer can see.

``str.replace`` is how many projects fill a prompt file or constant (``{{ user }}``, ``$DATE``): the
value takes the place of the marker, so the finding lands on the marker's line in the template. A
``.format``/``.format_map`` of a template constant whose result goes somewhere the analyzer cannot
follow (a settings dict, a callback) is still a prompt built per request; it is reported at the
placeholder when enough static text follows it, unless every use seen of it ends as a new user turn
appended to a conversation the object keeps (:mod:`.uses`): then only that conversation precedes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.collect import ModuleInfo, evaluated
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.sources import dotted_name, is_static, join_text, static
from prefixlint.analysis.python.uses import appended_turn
from prefixlint.model.layout import Segment, SourceLocation, Timing, evolve

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator

# Static characters after the value for a fill that reaches no visible sink (~100 tokens).
MIN_FILL_STATIC_CHARS = 400


def replace_call(ev: Evaluator, node: cst.Call, recv: cst.BaseExpression, env: Env) -> list[Segment] | None:
    """Pieces of ``recv.replace(marker, value)`` when the value is dynamic (None otherwise)."""
    args = node.args
    if len(args) < 2 or args[0].keyword is not None or not isinstance(args[0].value, cst.SimpleString):
        return None
    marker = evaluated(args[0].value)
    if not isinstance(marker, str) or not marker:
        return None
    value = ev.text(args[1].value, env)
    if is_static(value):
        # a constant in place of the marker: the text around it keeps its place in its file, so the
        # markers filled later in a chain are still found on their own lines
        base = ev.text(recv, env)
        if not any(s.static and marker in s.text and _in_text_file(s) for s in base):
            return _fold(base, marker, join_text(value)) if is_static(base) else base
    else:
        tmpl = ev.template_source(recv, env)
        if tmpl is not None:
            base = [static(tmpl.text, SourceLocation(tmpl.path, tmpl.line_offset + 1, tmpl.col_offset))]
        else:
            base = ev.text(recv, env)
        if not any(s.static and marker in s.text for s in base):
            return base if is_static(base) else None  # the marker is not in the text: unchanged
    fill = env.mod.loc(node)
    out: list[Segment] = []
    for seg in base:
        if not seg.static or marker not in seg.text:
            out.append(seg)
            continue
        text, at = seg.text, 0
        while True:
            i = text.find(marker, at)
            if i < 0:
                break
            if i > at:
                out.append(evolve(seg, text=text[at:i], location=_shifted(seg.location, text, at)))
            where = _shifted(seg.location, text, i)
            for v in value:
                if v.static:
                    out.append(evolve(v, location=where))
                else:
                    chain = tuple(c for c in (*v.chain, v.location, fill) if c is not None)
                    out.append(evolve(v, location=where, chain=chain))
            at = i + len(marker)
        if at < len(text):
            out.append(evolve(seg, text=text[at:], location=_shifted(seg.location, text, at)))
    return out


def _in_text_file(seg: Segment) -> bool:
    """True when ``seg`` is text located in a prompt file (not in Python source)."""
    return seg.location is not None and not seg.location.path.endswith((".py", ".pyi"))


def _fold(base: list[Segment], marker: str, value: str) -> list[Segment]:
    """``str.replace`` on static text written in Python: one static piece, at the first piece's place."""
    text = join_text(base).replace(marker, value)
    return [static(text, base[0].location if base else None)]


def _shifted(loc: SourceLocation | None, text: str, offset: int) -> SourceLocation | None:
    """The location of ``text[offset]`` for a piece of text that starts at ``loc``."""
    if loc is None:
        return None
    lines = text.count("\n", 0, offset)
    if not lines:
        return SourceLocation(loc.path, loc.line, loc.col + offset)
    return SourceLocation(loc.path, loc.line + lines, offset - text.rfind("\n", 0, offset) - 1)


def fill_sites(ev: Evaluator, mod: ModuleInfo) -> list[tuple[str, list[Segment], SourceLocation | None]]:
    """``(name, pieces, where)`` for each ``CONST.format(...)`` (``.format_map``, ``.replace``) of a template
    that is not a literal written at the call, with a per-request value ahead of a long static body."""
    out = []
    for site in mod.calls:
        func = site.node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("format", "format_map", "replace"):
            continue
        recv = func.value
        if isinstance(recv, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            continue
        timing = Timing.REQUEST if site.func is not None else Timing.PROCESS
        env = Env(mod=mod, func=site.func, cls=site.cls, timing=timing, pos=mod.pos(site.node))
        if ev.template_source(recv, env) is None:
            continue
        segs = ev.text(site.node, env)
        if _breaks_ahead_of_static(segs) and not appended_turn(ev, mod, site.node, site.func):
            out.append((f"{dotted_name(recv) or 'template'}.{func.attr.value}()", segs, mod.loc(site.node)))
    return out


def _breaks_ahead_of_static(segs: list[Segment]) -> bool:
    for i, seg in enumerate(segs):
        if seg.breaks_cache and seg.kind is not None and seg.timing is Timing.REQUEST:
            after = sum(len(s.text) for s in segs[i + 1 :] if s.static)
            return after >= MIN_FILL_STATIC_CHARS
    return False
