"""Placeholder templates: ``str.format``, plain prompt files, ``string.Template``, ``%`` and mustache.

Each scanner walks the text once and reports static text and placeholders to a
:class:`RenderContext`, with the exact position of each placeholder. Braces that do not form a
valid placeholder (a JSON example, a lone ``{``) stay literal text.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from prefixlint.analysis.templates.bindings import STATIC, Binding, combine, name_binding, run_fixed_binding
from prefixlint.analysis.templates.emit import Flags, Frame, LineIndex, RenderContext
from prefixlint.model.layout import DynamicKind

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# A str.format field: name or index, then .attr / [key] parts, optional !conversion and :spec (which
# may hold one level of nested fields).
_FORMAT_FIELD = re.compile(
    rf"\{{(?P<field>(?:{_IDENT}|\d+)?(?:\.{_IDENT}|\[[^\[\]{{}}]+\])*)(?:![rsa])?"
    r"(?::(?P<spec>[^{}]*(?:\{[^{}]*\}[^{}]*)*))?\}"
)
_NESTED = re.compile(rf"\{{({_IDENT}|\d*)\}}")
# A plain prompt file's placeholder: {name}, {{name}} or {{ name }} (dotted names allowed).
_DOTTED = rf"{_IDENT}(?:\.{_IDENT})*"
_PLAIN_FIELD = re.compile(rf"\{{\{{\s*(?P<double>{_DOTTED})\s*\}}\}}|\{{(?P<single>{_DOTTED})\}}")
_PERCENT = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?(?P<conv>[diouxXeEfFgGcrsa%])"
)


class _Emitter:
    """Turns offsets in one text into static and dynamic segments."""

    def __init__(self, ctx: RenderContext, text: str, frame: Frame) -> None:
        self.ctx, self.text, self.frame = ctx, text, frame
        self.index = LineIndex(text)

    def loc(self, start: int, end: int | None = None):
        line, col = self.index.position(start)
        if end is None:
            return self.frame.loc(line, col)
        end_line, end_col = self.index.position(end)
        return self.frame.loc(line, col, end_line, end_col)

    def static(self, text: str, start: int, flags: Flags = Flags()) -> None:
        self.ctx.static(text, self.loc(start), flags)

    def placeholder(self, value: Binding, start: int, end: int, flags: Flags = Flags()) -> None:
        self.ctx.dynamic(value, self.text[start:end], self.loc(start, end), flags)

    def value(self, name: str) -> Binding:
        """A placeholder's value: what the caller binds (by full or root name), else by its name."""
        found = self.ctx.bound(name)
        if found is not None:
            return found
        root = re.split(r"[.\[]", name, maxsplit=1)[0]
        found = self.ctx.bound(root)
        fixed = run_fixed_binding(name, self.ctx.catalog, found is not None)
        if fixed is not None:
            return fixed
        if found is not None:
            return found
        by_name = name_binding(name, self.ctx.catalog)
        if by_name.kind is DynamicKind.UNKNOWN and root != name:
            root_value = name_binding(root, self.ctx.catalog)
            if root_value.kind is not DynamicKind.UNKNOWN:
                return root_value
        return by_name


def _scan(ctx: RenderContext, text: str, frame: Frame, pattern: re.Pattern[str], handle) -> None:
    """Shared loop: literal text between matches, ``handle(match)`` for each match."""
    out = _Emitter(ctx, text, frame)
    buf: list[str] = []
    buf_start = 0
    pos = 0
    for m in pattern.finditer(text):
        literal, value = handle(m, out)
        if m.start() > pos:
            if not buf:
                buf_start = pos
            buf.append(text[pos : m.start()])
        pos = m.end()
        if value is None:
            if not buf:
                buf_start = m.start()
            buf.append(literal)
            continue
        if buf:
            out.static("".join(buf), buf_start)
            buf = []
        out.placeholder(value, m.start(), m.end())
    if pos < len(text):
        if not buf:
            buf_start = pos
        buf.append(text[pos:])
    if buf:
        out.static("".join(buf), buf_start)


_FORMAT_TOKENS = re.compile(r"\{\{|\}\}|" + _FORMAT_FIELD.pattern)


def render_format(ctx: RenderContext, text: str, frame: Frame) -> None:
    """``str.format`` / LangChain f-string templates: ``{name}``, ``{0}``, ``{}``, ``{{`` escapes."""
    auto = iter(range(10_000))

    def handle(m: re.Match[str], out: _Emitter) -> tuple[str, Binding | None]:
        token = m.group(0)
        if token == "{{":
            return "{", None
        if token == "}}":
            return "}", None
        name = m.group("field") or str(next(auto))
        values = [out.value(name)]
        for nested in _NESTED.findall(m.group("spec") or ""):
            values.append(out.value(nested or str(next(auto))))
        value = values[0] if len(values) == 1 else combine(values)
        return token, value

    _scan(ctx, text, frame, _FORMAT_TOKENS, handle)


def render_plain(ctx: RenderContext, text: str, frame: Frame) -> None:
    """A prompt file whose renderer is unknown: ``{name}`` and ``{{name}}`` are placeholders."""

    def handle(m: re.Match[str], out: _Emitter) -> tuple[str, Binding | None]:
        return m.group(0), out.value(m.group("double") or m.group("single"))

    _scan(ctx, text, frame, _PLAIN_FIELD, handle)


def render_dollar(ctx: RenderContext, text: str, frame: Frame) -> None:
    """``string.Template``: ``$name``, ``${name}``, ``$$`` escapes, using the class's own pattern."""

    def handle(m: re.Match[str], out: _Emitter) -> tuple[str, Binding | None]:
        if m.group("escaped") is not None:
            return "$", None
        name = m.group("named") or m.group("braced")
        if name is None:
            return m.group(0), None
        return m.group(0), out.value(name)

    _scan(ctx, text, frame, string.Template.pattern, handle)


def render_percent(ctx: RenderContext, text: str, frame: Frame) -> None:
    """printf-style: ``%(name)s`` and positional ``%s`` (named ``0``, ``1``...), ``%%`` escapes."""
    auto = iter(range(10_000))

    def handle(m: re.Match[str], out: _Emitter) -> tuple[str, Binding | None]:
        if m.group("conv") == "%":
            return "%", None
        key = m.group("key")
        return m.group(0), out.value(key if key is not None else str(next(auto)))

    _scan(ctx, text, frame, _PERCENT, handle)


def render_literal(ctx: RenderContext, text: str, frame: Frame) -> None:
    """Text filled by ``str.replace``: each bound key is an exact string, the rest stays literal.

    ``template.replace("{{ user }}", name)`` fills every occurrence of ``{{ user }}``; the keys are
    the caller's binding names, longest first where one key contains another.
    """
    keys = sorted((k for k in ctx.bindings if k), key=len, reverse=True)
    if not keys:
        ctx.static(text, _Emitter(ctx, text, frame).loc(0))
        return
    pattern = re.compile("|".join(re.escape(k) for k in keys))

    def handle(m: re.Match[str], out: _Emitter) -> tuple[str, Binding | None]:
        return m.group(0), ctx.bindings[m.group(0)]

    _scan(ctx, text, frame, pattern, handle)


@dataclass
class _Section:
    name: str
    value: Binding
    flags: Flags


def render_mustache(ctx: RenderContext, text: str, frame: Frame) -> None:
    """Mustache (and the handlebars subset LangChain and dotprompt use).

    ``{{name}}``, ``{{{name}}}`` and ``{{& name}}`` are placeholders; ``{{#s}}`` sections are
    repeated and conditional, ``{{^s}}`` inverted sections conditional; ``{{! comments}}`` and
    ``{{> partials}}`` render nothing here; ``{{=<% %>=}}`` changes the delimiters. Inside a section
    over a dynamic value, ``{{.}}`` and names not bound by the caller take the section's value.
    """
    out = _Emitter(ctx, text, frame)
    open_d, close_d = "{{", "}}"
    stack: list[_Section] = []
    pos = 0

    def flags() -> Flags:
        return stack[-1].flags if stack else Flags()

    def value_of(name: str) -> Binding:
        if name in (".", "this"):
            return stack[-1].value if stack else STATIC
        if name in ctx.bindings or name.split(".")[0] in ctx.bindings:
            return out.value(name)
        for section in reversed(stack):
            if not section.value.static:
                return section.value
        if name.startswith("this."):
            return STATIC
        return out.value(name)

    while pos < len(text):
        start = text.find(open_d, pos)
        if start < 0:
            out.static(text[pos:], pos, flags())
            break
        triple = open_d == "{{" and text.startswith("{{{", start)
        close = "}}}" if triple else close_d
        end = text.find(close, start + (3 if triple else len(open_d)))
        if end < 0:
            out.static(text[pos:], pos, flags())
            break
        inner = text[start + (3 if triple else len(open_d)) : end].strip().strip("~").strip()
        words = inner.split()
        role_tag = len(words) == 2 and words[0] == "role" and words[1][:1] in "\"'"
        if start > pos and not (role_tag and not text[pos:start].strip()):
            out.static(text[pos:start], pos, flags())
        tag_end = end + len(close)
        sigil = inner[:1]
        if triple or sigil == "&":
            out.placeholder(value_of(inner.lstrip("&").strip()), start, tag_end, flags())
        elif sigil == "!" or sigil == ">":
            pass
        elif sigil == "=" and inner.endswith("="):
            parts = inner[1:-1].split()
            if len(parts) == 2:
                open_d, close_d = parts
        elif sigil in ("#", "^"):
            words = inner[1:].split()
            helper = words[0] if words else ""
            target = words[1] if len(words) > 1 and helper in ("if", "each", "unless", "with") else helper
            section_value = value_of(target) if target else STATIC
            if sigil == "^" or helper in ("if", "unless"):
                new_flags = flags().inside_if()
            else:
                new_flags = flags().inside_if().inside_for()
            if helper in ("if", "unless"):
                section_value = STATIC
            stack.append(_Section(helper, section_value, new_flags))
        elif sigil == "/":
            name = inner[1:].strip()
            while stack:
                if stack.pop().name == name:
                    break
        elif inner == "else":
            pass
        else:
            if role_tag:  # dotprompt: {{role "user"}} starts a message
                ctx.switch_role(words[1].strip("\"'").lower())
                pos = tag_end + (1 if text.startswith("\n", tag_end) else 0)
                continue
            if len(words) > 1:  # a handlebars helper call: classify by its arguments
                args = [value_of(w) for w in words[1:] if "=" not in w and not w.startswith(('"', "'"))]
                value = combine(args) if args else STATIC
            else:
                value = value_of(inner)
            out.placeholder(value, start, tag_end, flags())
        pos = tag_end
