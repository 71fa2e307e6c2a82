"""Lint a template file on its own: one layout, placeholders bound by render calls or classified by name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from prefixlint.analysis.result import FileAnalysis
from prefixlint.analysis.templates.bindings import Binding
from prefixlint.analysis.templates.files import template_style_for
from prefixlint.analysis.templates.render import render_template
from prefixlint.model.layout import Layout, count_layout_tokens
from prefixlint.model.settings import Settings


def analyze_template_file(
    path: str,
    text: str,
    settings: Settings,
    root: Path,
    bindings: Mapping[str, Binding] | None = None,
) -> FileAnalysis:
    """The layout a template file renders on its own (no Python call sends it).

    Provider and model come from the settings, or from a prompty/dotprompt header. Includes are
    looked up next to the file and from ``root``. Sample inputs in a header size the placeholders.
    ``bindings`` are what the project's render calls pass (variables they do not bind are
    classified by name).
    """
    style = template_style_for(Path(path), settings) or "plain"
    own_dir = Path(path).parent
    result, meta = render_template(
        text,
        style=style,
        path=path,
        search_paths=(own_dir,),
        bindings=bindings,
        settings=settings,
        root=Path(root),
    )
    analysis = FileAnalysis(path=path, errors=list(result.errors), dependencies=set(result.dependencies))
    if not result.segments:
        return analysis
    layout = Layout(
        segments=result.segments,
        provider=meta.provider or settings.provider,
        model=meta.model or settings.model,
        sink=None,  # no call sends it: the template is linted on its own
        sink_name=f"template {Path(path).name}",
    )
    layout = count_layout_tokens(layout)
    if meta.samples:
        from prefixlint.model.tokens import tokenizer_for

        tok = tokenizer_for(layout.provider, layout.model)
        layout.segments = [
            replace(s, tokens=max(1, tok.count(meta.samples[s.label])))
            if not s.static and s.label in meta.samples
            else s
            for s in layout.segments
        ]
    analysis.layouts.append(layout)
    return analysis
