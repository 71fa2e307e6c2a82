"""Run rules on a small project without the CLI: analysis -> token counts -> selected rules.

Used by the rule-example tests (and handy in a REPL). The checker module does the same for real
runs; this helper stays small so rule tests do not depend on reporters or caching.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from prefixlint.analysis.python import ProjectContext, analyze_python
from prefixlint.model.edits import Applicability, apply_edits
from prefixlint.model.findings import Finding
from prefixlint.model.layout import count_layout_tokens
from prefixlint.model.settings import Settings
from prefixlint.rules.base import Example, Rule, RuleContext, all_rules

PAYLOAD_SUFFIXES = (".json", ".jsonl", ".ndjson")


def write_example(example: Example, root: Path) -> Path:
    """Write an example's files under ``root``; returns the main file's path."""
    for name, text in {**example.files, example.path: example.code}.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")
    return root / example.path


def settings_for_example(example: Example) -> Settings:
    data: dict[str, object] = {}
    if example.provider:
        data["provider"] = example.provider
        data["model"] = example.model
    elif example.model:
        data["model"] = example.model
    return Settings.model_validate(data)


def check_files(
    paths: Iterable[Path], root: Path, settings: Settings, rules: Iterable[type[Rule]] | None = None
) -> list[Finding]:
    """Findings of ``rules`` (all by default) for the given Python files of one project."""
    project = ProjectContext(root, settings)
    selected = [r() for r in (rules if rules is not None else all_rules())]
    out: list[Finding] = []
    for path in paths:
        text = path.read_text("utf-8")
        analysis = analyze_python(str(path), text, settings, project)
        ctx = RuleContext(settings=settings, path=str(path), source=text)
        for layout in analysis.layouts:
            counted = count_layout_tokens(layout)
            for rule in selected:
                out.extend(rule.check(counted, ctx))
    unique = {(f.code, f.location.path, f.location.line, f.location.col): f for f in out}
    return sorted(unique.values(), key=lambda f: f.sort_key())


def check_payload_files(
    paths: Iterable[Path], settings: Settings, rules: Iterable[type[Rule]] | None = None
) -> list[Finding]:
    """Findings of ``rules`` (all by default) for request payload files (``.json``, ``.jsonl``), read
    together as the payload files of one directory are."""
    from prefixlint.analysis.payloads.analyze import analyze_payload_files

    texts = {str(p): p.read_text("utf-8") for p in paths}
    selected = [r() for r in (rules if rules is not None else all_rules())]
    out: list[Finding] = []
    for path, analysis in analyze_payload_files(texts.items(), settings).items():
        ctx = RuleContext(settings=settings, path=path, source=texts[path])
        for layout in analysis.layouts:
            for rule in selected:
                out.extend(rule.check(layout, ctx))
    unique = {(f.code, f.location.path, f.location.line, f.location.col): f for f in out}
    return sorted(unique.values(), key=lambda f: f.sort_key())


def check_example(example: Example, root: Path, rules: Iterable[type[Rule]] | None = None) -> list[Finding]:
    main = write_example(example, root)
    settings = settings_for_example(example)
    if main.suffix in PAYLOAD_SUFFIXES:
        payloads = sorted({main, *[root / n for n in example.files if Path(n).suffix in PAYLOAD_SUFFIXES]})
        return check_payload_files(payloads, settings, rules)
    files = sorted({main, *[root / n for n in example.files if n.endswith(".py")]})
    return check_files(files, root, settings, rules)


def apply_rule_fixes(findings: Iterable[Finding], path: Path, unsafe: bool) -> str:
    """The text of ``path`` after applying every applicable fix aimed at it (non-overlapping)."""
    text = path.read_text("utf-8")
    edits = []
    taken: list[tuple[int, int]] = []
    for f in findings:
        fix = f.fix
        if fix is None or not fix.edits or (fix.path and Path(fix.path).resolve() != path.resolve()):
            continue
        if fix.applicability is Applicability.DISPLAY_ONLY:
            continue
        if fix.applicability is Applicability.UNSAFE and not unsafe:
            continue
        spans = [(e.start, e.end) for e in fix.edits]
        if any((a < d and c < b) or a == c for a, b in spans for c, d in taken):
            continue
        taken.extend(spans)
        edits.extend(fix.edits)
    return apply_edits(text, edits)
