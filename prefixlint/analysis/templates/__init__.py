"""Prompt templates: Jinja2, prompty, plain prompt files and template strings inside Python.

Each template becomes the ordered segments of the request it renders: static text, and dynamic
placeholders classified by what a caller binds (:class:`Binding`) or by name. Modules, one job each:

- ``files``: which files are templates and of which style; finding an included name.
- ``jinja_parse``: jinja2's parser with node spans; ``jinja``: rendering, includes, extends, macros.
- ``placeholders``: ``str.format``, plain ``{var}``/``{{var}}`` files, ``$``, ``%``, mustache, and
  ``literal`` (the exact keys a chain of ``str.replace`` fills).
- ``structured``: a template under a key of a YAML or TOML file, and where its text starts there.
- ``prompty``: YAML front matter and role sections.
- ``bindings``: values of variables; ``emit``: segment building; ``render``: the entry point.
- ``suppressions``: ``{# prefixlint: ignore[CODE] #}``; ``analyze``: a template file on its own.
"""

from __future__ import annotations

from prefixlint.analysis.templates.analyze import analyze_template_file
from prefixlint.analysis.templates.bindings import Binding
from prefixlint.analysis.templates.emit import TemplateResult
from prefixlint.analysis.templates.files import clear_caches, find_template, template_style_for
from prefixlint.analysis.templates.prompty import PromptMeta
from prefixlint.analysis.templates.render import STYLES, render_segments, render_template
from prefixlint.analysis.templates.suppressions import template_suppressions

__all__ = [
    "STYLES",
    "Binding",
    "PromptMeta",
    "TemplateResult",
    "analyze_template_file",
    "clear_caches",
    "find_template",
    "render_segments",
    "render_template",
    "template_style_for",
    "template_suppressions",
]
