"""Check one file: read it, analyse it by type, count tokens, run the selected rules.

The result holds the raw findings (before suppression) and the file's own suppression table, so the
runner can apply suppressions across files: a cross-module finding is reported, and suppressed, in
the file the user must change. Nothing here writes files or prints.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint.lint.config import fingerprint
from prefixlint.lint.suppressions import FileSuppressions, parse_suppressions
from prefixlint.model.findings import Finding, Severity, error_finding
from prefixlint.model.globs import glob_match
from prefixlint.model.layout import count_layout_tokens
from prefixlint.model.settings import Settings
from prefixlint.model.source_text import PYTHON_SUFFIXES, read_source
from prefixlint.rules.selection import is_selected

ERROR_CODES = ("PFX001", "PFX002")
log = logging.getLogger(__name__)


@dataclass
class FileResult:
    """What checking one file produced."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    suppressions: FileSuppressions | None = None
    dependencies: set[str] = field(default_factory=set)
    internal_error: str | None = None
    skipped: bool = False
    cached: bool = False
    crashed: bool = False  # a crash or a discovery error: reported, never cached

    def to_dict(self) -> dict[str, Any]:
        from prefixlint.lint.result_cache import finding_to_dict

        return {
            "findings": [finding_to_dict(f) for f in self.findings],
            "suppressions": self.suppressions.to_dict() if self.suppressions else None,
            "dependencies": sorted(self.dependencies),
            "skipped": self.skipped,
        }

    @classmethod
    def from_dict(cls, path: str, data: dict[str, Any]) -> FileResult:
        from prefixlint.lint.result_cache import finding_from_dict

        sup = data.get("suppressions")
        return cls(
            path=path,
            findings=[finding_from_dict(f) for f in data.get("findings", [])],
            suppressions=FileSuppressions.from_dict(sup) if sup else None,
            dependencies=set(data.get("dependencies", [])),
            skipped=data.get("skipped", False),
        )


def template_style(path: str, settings: Settings) -> str | None:
    """The template style of ``path`` (``jinja``, ``prompty``, ``plain``...) or None for non-templates."""
    try:
        from prefixlint.analysis.templates import template_style_for
    except ImportError:
        return _fallback_template_style(path, settings)
    return template_style_for(Path(path), settings)


def _fallback_template_style(path: str, settings: Settings) -> str | None:
    if glob_match(settings.plain_prompt_globs, path, settings.root):
        return "plain"
    if glob_match(settings.template_globs, path, settings.root):
        return "jinja"
    return None


def file_kind(path: str, settings: Settings, named: bool = False) -> str | None:
    """``python``, ``template`` (a template or plain prompt file), ``payload`` (a request payload
    file), or None when prefixlint skips it. ``named``: the file was given on the command line.

    Globs are matched as :mod:`prefixlint.model.globs` says, without importing the template analyzer;
    :func:`check_source` resolves the exact style when it analyses the file. A JSON file is a
    payload when a ``payload-globs`` glob names it or its first keys show a request.
    """
    if path.endswith(PYTHON_SUFFIXES):
        return "python"
    if glob_match((*settings.template_globs, *settings.plain_prompt_globs), path, settings.root):
        return "template"
    from prefixlint.lint.payload_files import payload_kind

    return payload_kind(path, settings, named)


def path_ignores(path: str, settings: Settings) -> list[str]:
    """Codes from ``per-file-ignores`` whose glob matches ``path`` (see :mod:`prefixlint.model.globs`)."""
    if not settings.per_file_ignores:
        return []
    full = os.path.abspath(path)
    codes: list[str] = []
    for glob, glob_codes in settings.per_file_ignores.items():
        if glob_match((glob,), full, settings.root):
            codes.extend(c.upper() for c in glob_codes)
    return codes


# Project indexes (other modules of a project, parsed on demand), by (root, settings fingerprint).
# A run starts with none (:func:`forget_projects`), and at most ``MAX_PROJECTS`` are kept, least
# recently used first out: a long-lived process (an editor, a test session) does not grow with them.
_PROJECTS: OrderedDict[tuple[str, str], Any] = OrderedDict()
MAX_PROJECTS = 4


def project_for(settings: Settings) -> Any:
    """The analyzer's ProjectContext for the settings' root, built once per run."""
    from prefixlint.analysis.python import ProjectContext

    key = (settings.root or ".", fingerprint(settings))
    hit = _PROJECTS.get(key)
    if hit is None:
        hit = _PROJECTS[key] = ProjectContext(Path(settings.root or "."), settings)
        while len(_PROJECTS) > MAX_PROJECTS:
            _PROJECTS.popitem(last=False)
    else:
        _PROJECTS.move_to_end(key)
    return hit


def forget_projects() -> None:
    """Drop the project indexes and the analyzer's per-node memo: the next run reads files afresh."""
    _PROJECTS.clear()
    collect = sys.modules.get("prefixlint.analysis.python.collect")
    if collect is not None:
        collect.evaluated.cache_clear()


def analyze(path: str, text: str, kind: str, settings: Settings) -> Any:
    """Dispatch to the analyzer for ``kind``; returns a FileAnalysis."""
    if kind == "payload":
        from prefixlint.analysis.payloads.analyze import analyze_payload_file

        return analyze_payload_file(path, text, settings)
    if kind == "python":
        from prefixlint.analysis.python import analyze_python

        return analyze_python(path, text, settings, project_for(settings))
    from prefixlint.analysis.python.template_callers import caller_bindings
    from prefixlint.analysis.templates import analyze_template_file

    bindings, read = caller_bindings(project_for(settings), path)
    analysis = analyze_template_file(path, text, settings, Path(settings.root or "."), bindings)
    analysis.dependencies.update(read)
    return analysis


def check_source(
    path: str, text: str | None, settings: Settings, kind: str | None = None, analysis: Any = None
) -> FileResult:
    """Findings for one file (``text`` None: read it from disk). Never raises for bad input.

    ``analysis`` is one already made (the payload files of a directory are analysed together).
    """
    from prefixlint.rules.base import RuleContext, iter_selected

    kind = kind or file_kind(path, settings) or "python"
    result = FileResult(path=path)
    if kind not in ("python", "payload"):
        style = template_style(path, settings)
        if style is None:  # the name matched a glob's last part, but not the whole glob
            result.skipped = True
            return result
        kind = style
    if text is None:
        text, err = read_source(path)
        if err is not None:
            result.findings.append(err)
            return _filter_selected(result, settings)
    assert text is not None
    if kind == "payload":  # JSON has no comments: per-file-ignores are the way to silence a code
        result.suppressions = FileSuppressions(path=path)
    else:
        result.suppressions = parse_suppressions(path, text, "python" if kind == "python" else "template")
    if kind not in ("python", "payload"):
        _merge_template_suppressions(result.suppressions, text, kind)
    try:
        analysis = analysis or analyze(path, text, kind, settings)
    except Exception as exc:
        result.internal_error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        result.findings.append(
            error_finding(path, f"Internal error while analysing this file: {type(exc).__name__}: {exc}")
        )
        return result
    result.dependencies = {str(d) for d in analysis.dependencies}
    for err in analysis.errors:
        result.findings.append(
            Finding(
                code=err.code,
                message=err.message,
                location=err.location,
                severity=Severity.HIGH,
                rule_name="unanalysable-input" if err.code == "PFX001" else "template-include-error",
            )
        )
    rules = [cls() for cls in iter_selected(settings, path_ignores(path, settings))]
    ctx = RuleContext(settings=settings, path=path, source=text)
    try:
        for layout in analysis.layouts:
            counted = layout if layout.samples else count_layout_tokens(layout)  # payloads come counted
            for rule in rules:
                result.findings.extend(rule.check(counted, ctx))
    except Exception as exc:
        result.internal_error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        result.findings.append(
            error_finding(path, f"Internal error while checking this file: {type(exc).__name__}: {exc}")
        )
    result.findings = dedupe(result.findings)
    return _filter_selected(result, settings)


def _merge_template_suppressions(table: FileSuppressions, text: str, style: str) -> None:
    """Add the template analyzer's own reading of ``{# prefixlint: ignore #}`` comments, if available."""
    try:
        from prefixlint.analysis.templates import template_suppressions
    except ImportError:
        return
    from prefixlint.lint.suppressions import Directive

    known = {d.line for d in table.directives}
    try:
        extra = template_suppressions(text, style)
    except Exception as exc:  # the comments read by the line scan above still apply
        log.debug("template suppressions of %s not read by the analyzer: %r", table.path, exc)
        return
    for line, codes in extra.items():
        if line not in known:
            table.directives.append(
                Directive(line, 0, 0, tuple(sorted(codes)) if codes is not None else None)
            )


def _filter_selected(result: FileResult, settings: Settings) -> FileResult:
    """Drop analysis-error findings the user did not select (rules are already filtered)."""
    ignores = path_ignores(result.path, settings)
    result.findings = [
        f
        for f in result.findings
        if f.code not in ERROR_CODES
        or f.location.path != result.path
        or is_selected(f.code, settings, ignores)
    ]
    return result


def dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per (code, location, message), keeping the first; sorted by location.

    A template file's placeholder found both through the Python that fills it (a finding with a
    chain) and by linting the file on its own (no chain, classified by name) is kept once: the
    linked finding, which knows the value.
    """
    linked = {(f.location.path, f.location.line, f.location.col) for f in findings if f.chain}
    seen: set[tuple] = set()
    out = []
    for f in sorted(findings, key=Finding.sort_key):
        if (
            not f.chain
            and f.code[:4] in ("PFX1", "PFX2")
            and (f.location.path, f.location.line, f.location.col) in linked
        ):
            continue
        key = (f.code, f.location.path, f.location.line, f.location.col, f.message)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out
