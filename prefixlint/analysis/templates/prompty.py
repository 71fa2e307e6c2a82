"""Prompty files (and front matter in ``.prompt`` files): YAML header, then a templated body.

The header gives model/provider hints and sample inputs. The body is rendered as jinja; then, as
prompty does at runtime, lines such as ``system:`` or ``user:`` split the rendered text into
messages. ``system``/``developer`` map to the system section, other roles to messages; a loop over
history inside the system part starts the history messages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prefixlint.analysis.templates.emit import Frame, RenderContext
from prefixlint.model.layout import DynamicKind, Section, Segment, SourceLocation

_ROLE_LINE = re.compile(
    r"^[ \t]*#?[ \t]*(?P<role>system|user|assistant|developer|function|tool)[ \t]*:[ \t]*(?:\n|$)",
    re.I | re.M,
)
_SYSTEM_ROLES = ("system", "developer")
_PROVIDER_TYPES = {
    "openai": "openai",
    "azure_openai": "azure",
    "azure": "azure",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "google": "gemini",
    "deepseek": "deepseek",
    "vllm": "vllm",
}


@dataclass
class FrontMatter:
    """The YAML header of a prompt file and where the body starts."""

    data: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    body_line_offset: int = 0  # lines before the body
    error: tuple[int, str] | None = None


@dataclass
class PromptMeta:
    """What a prompt file's header says about the request."""

    provider: str | None = None
    model: str | None = None
    samples: dict[str, str] = field(default_factory=dict)


def split_front_matter(text: str) -> FrontMatter:
    """Split ``---`` YAML front matter from the body (no front matter: the whole text is the body)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return FrontMatter(body=text)
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            header = "\n".join(lines[1:i])
            fm = FrontMatter(body="\n".join(lines[i + 1 :]), body_line_offset=i + 1)
            import yaml  # only a text with front matter needs it (a Python string seldom has one)

            try:
                data = yaml.safe_load(header)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                fm.error = ((mark.line + 2) if mark else 1, f"invalid YAML front matter: {exc}")
                return fm
            if isinstance(data, dict):
                fm.data = data
            return fm
    return FrontMatter(body=text, error=(1, "front matter opened with '---' is never closed"))


def meta_from(data: dict[str, Any]) -> PromptMeta:
    """Provider/model hints and sample inputs from a prompty or dotprompt header."""
    from prefixlint.model.providers import guess_provider, provider_names

    meta = PromptMeta()
    model = data.get("model")
    if isinstance(model, str):
        meta.model = model.split("/", 1)[-1] if "/" in model else model
        if guess_provider(meta.model) != "openai" or meta.model.startswith(("gpt", "o1", "o3", "o4")):
            meta.provider = guess_provider(meta.model)
    elif isinstance(model, dict):
        conf = model.get("configuration") if isinstance(model.get("configuration"), dict) else {}
        kind = str(conf.get("type") or model.get("api_type") or "").lower()
        provider = _PROVIDER_TYPES.get(kind)
        if provider in provider_names():
            meta.provider = provider
        for key in ("model", "azure_deployment", "name"):
            if isinstance(conf.get(key), str):
                meta.model = conf[key]
                break
        else:
            if isinstance(model.get("name"), str):
                meta.model = model["name"]
    sample = data.get("sample")
    if isinstance(sample, dict):
        meta.samples.update({str(k): str(v) for k, v in sample.items()})
    inputs = data.get("inputs")
    if isinstance(inputs, dict):
        for name, spec in inputs.items():
            if isinstance(spec, dict) and "sample" in spec:
                meta.samples.setdefault(str(name), str(spec["sample"]))
    return meta


def render_prompty(ctx: RenderContext, text: str, frame: Frame, file: Path | None) -> PromptMeta:
    """Render a prompty file's body as jinja into ``ctx``, split into role messages."""
    from prefixlint.analysis.templates.jinja import JinjaRenderer

    fm = split_front_matter(text)
    if fm.error is not None:
        ctx.error(frame.loc(*(fm.error[0], 0)), fm.error[1], "PFX001")
    body_frame = Frame(
        frame.path,
        frame.line_offset + fm.body_line_offset,
        frame.col_offset if fm.body_line_offset == 0 else 0,
    )
    start = len(ctx.segments)
    JinjaRenderer(ctx).render(fm.body, body_frame, file)
    ctx.segments[start:] = assign_roles(ctx.segments[start:])
    return meta_from(fm.data)


def _shift(loc: SourceLocation | None, text: str, offset: int) -> SourceLocation | None:
    """The location of ``text[offset:]`` given the location of ``text``."""
    if loc is None:
        return None
    before = text[:offset]
    newlines = before.count("\n")
    if newlines == 0:
        return SourceLocation(loc.path, loc.line, loc.col + offset)
    return SourceLocation(loc.path, loc.line + newlines, len(before) - before.rfind("\n") - 1)


def assign_roles(segments: list[Segment]) -> list[Segment]:
    """Split static text at role lines and give every segment its section, role and message index."""
    out: list[Segment] = []
    role: str | None = "system"
    index = 0
    has_content = False  # the current message holds something besides whitespace

    def place(seg: Segment) -> None:
        nonlocal has_content
        section = Section.SYSTEM if role in _SYSTEM_ROLES else Section.MESSAGES
        out.append(replace(seg, section=section, role=role, message_index=index))
        has_content = has_content or not seg.static or bool(seg.text.strip())

    for seg in segments:
        if not seg.static and seg.kind is DynamicKind.HISTORY and role in _SYSTEM_ROLES:
            # History rendered by a loop inside the system part starts the message list; the loop's
            # own static text just before it goes with it.
            j = len(out)
            while j > 0 and out[j - 1].static and out[j - 1].repeated:
                j -= 1
            if any(not s.static or s.text.strip() for s in out[:j]):
                index += 1
            role = None
            out[j:] = [replace(s, section=Section.MESSAGES, role=None, message_index=index) for s in out[j:]]
        if not seg.static or not _ROLE_LINE.search(seg.text):
            place(seg)
            continue
        pos = 0
        for m in _ROLE_LINE.finditer(seg.text):
            piece = seg.text[pos : m.start()]
            if piece.strip() or (piece and has_content):
                place(replace(seg, text=piece, location=_shift(seg.location, seg.text, pos)))
            if has_content:
                index += 1
            has_content = False
            role = m.group("role").lower()
            pos = m.end()
        rest = seg.text[pos:]
        if rest:
            place(replace(seg, text=rest, location=_shift(seg.location, seg.text, pos)))
    last = max((s.message_index for s in out if s.message_index is not None), default=None)
    if last is not None and any(s.message_index == last and s.role == "user" for s in out):
        out = [replace(s, is_last_user_message=True) if s.message_index == last else s for s in out]
    return out
