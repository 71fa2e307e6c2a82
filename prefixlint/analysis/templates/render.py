"""``render_segments``: any template text (a file or a string inside Python) to segments."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from prefixlint.analysis.catalog import catalog_for
from prefixlint.analysis.templates.bindings import Binding
from prefixlint.analysis.templates.emit import Frame, RenderContext, TemplateResult
from prefixlint.analysis.templates.files import normalize_newlines
from prefixlint.analysis.templates.prompty import PromptMeta, render_prompty, split_front_matter
from prefixlint.model.layout import Section, merge_adjacent_static
from prefixlint.model.settings import Settings

Style = Literal["jinja", "format", "mustache", "dollar", "percent", "prompty", "plain", "literal"]
# A Jinja statement tag: a plain prompt file holding one is a Jinja template.
_JINJA_STATEMENT = re.compile(
    r"\{%-?\s*(?:if|for|include|set|macro|block|extends|import|from|with|raw|filter|call)\b[^{}]*?-?%\}"
)
STYLES = ("jinja", "format", "mustache", "dollar", "percent", "prompty", "plain", "literal")


def _file_of(path: str, root: Path, embedded: bool) -> Path | None:
    """The template's own file on disk (for include-loop detection), when it is one."""
    if embedded:
        return None
    p = Path(path)
    for candidate in (p,) if p.is_absolute() else (Path.cwd() / p, root / p):
        if candidate.is_file():
            return candidate.resolve()
    return None


def render_template(
    text: str,
    *,
    style: str,
    path: str,
    section: Section = Section.SYSTEM,
    role: str | None = "system",
    message_index: int | None = None,
    line_offset: int = 0,
    col_offset: int = 0,
    indent: int = 0,
    bindings: Mapping[str, Binding] | None = None,
    search_paths: Sequence[Path] = (),
    settings: Settings | None = None,
    root: Path | None = None,
) -> tuple[TemplateResult, PromptMeta]:
    """:func:`render_segments` plus what a prompt file's front matter says (provider, model, samples)."""
    from prefixlint.analysis.templates import placeholders

    if style not in STYLES:
        raise ValueError(f"unknown template style {style!r}; expected one of {', '.join(STYLES)}")
    text = normalize_newlines(text)
    if style == "plain" and _JINJA_STATEMENT.search(text):
        style = "jinja"  # a prompt file with {% include %}, {% if %}...: only Jinja renders it
    if root is not None:
        base = Path(root)
    else:
        base = Path(settings.root) if settings and settings.root else Path.cwd()
    ctx = RenderContext(
        catalog=catalog_for(settings),
        bindings=dict(bindings or {}),
        search_paths=tuple(Path(p) for p in search_paths),
        root=base,
        section=section,
        role=role,
        message_index=message_index,
        absolute_paths=Path(path).is_absolute(),
    )
    frame = Frame(path, line_offset, col_offset, indent)
    embedded = bool(line_offset or col_offset) or path.endswith((".py", ".pyi"))
    file = _file_of(path, base, embedded)
    meta = PromptMeta()
    if style == "jinja":
        from prefixlint.analysis.templates.jinja import JinjaRenderer  # jinja2 only for Jinja

        JinjaRenderer(ctx).render(text, frame, file)
    elif style == "prompty":
        meta = render_prompty(ctx, text, frame, file)
    elif style == "plain" and (fm := split_front_matter(text)).body_line_offset:
        # A prompt file with closed front matter (dotprompt): header hints, handlebars body. An
        # unclosed ``---`` is just text (a Markdown rule), so such a file stays plain.
        from prefixlint.analysis.templates.prompty import meta_from

        meta = meta_from(fm.data)
        body = Frame(path, line_offset + fm.body_line_offset, col_offset if not fm.body_line_offset else 0)
        placeholders.render_mustache(ctx, fm.body, body)
        ctx.mark_last_user_message()
    else:
        render = {
            "format": placeholders.render_format,
            "plain": placeholders.render_plain,
            "mustache": placeholders.render_mustache,
            "dollar": placeholders.render_dollar,
            "percent": placeholders.render_percent,
            "literal": placeholders.render_literal,
        }[style]
        render(ctx, text, frame)
    deps = set(ctx.dependencies)
    if file is not None:
        deps.discard(str(file))
    return TemplateResult(merge_adjacent_static(ctx.segments), deps, ctx.errors), meta


def render_segments(
    text: str,
    *,
    style: Style,
    path: str,
    section: Section = Section.SYSTEM,
    role: str | None = "system",
    message_index: int | None = None,
    line_offset: int = 0,
    col_offset: int = 0,
    indent: int = 0,
    bindings: Mapping[str, Binding] | None = None,
    search_paths: Sequence[Path] = (),
    settings: Settings | None = None,
    root: Path | None = None,
) -> TemplateResult:
    """Segments of a template in template order, with exact locations.

    ``path`` names the file the text is in. For a string inside Python, ``line_offset`` and
    ``col_offset`` place its content: a position at line ``l`` (1-based), column ``c`` of ``text``
    is reported at line ``l + line_offset`` and column ``c + col_offset`` on the first line (``c``
    on later lines, plus ``indent`` where the text was dedented, as in a YAML block). So for
    content starting at file line ``L``, column ``C`` pass ``line_offset=L - 1, col_offset=C``.
    Placeholders are classified by ``bindings`` (by full or root name), else by name through the
    catalog. Includes are looked up in ``search_paths``
    (relative ones from ``root``), the including template's folder, then ``root`` (default: the
    settings' root, else the working directory).
    """
    result, _ = render_template(
        text,
        style=style,
        path=path,
        section=section,
        role=role,
        message_index=message_index,
        line_offset=line_offset,
        col_offset=col_offset,
        indent=indent,
        bindings=bindings,
        search_paths=search_paths,
        settings=settings,
        root=root,
    )
    return result
