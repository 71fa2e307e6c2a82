"""Run rules on a small project the way ``prefixlint check`` does, without the CLI.

Used by the rule-example and rule-fixture tests (and handy in a REPL). Findings come from the real
pipeline (:func:`prefixlint.lint.runner.check_targets` and :func:`~prefixlint.lint.runner.finalize`:
analysis, token counts, rules, suppressions) and fixes from the real fixer
(:mod:`prefixlint.lint.fixer`: applicability, overlaps, parse verification), so a rule test cannot
pass on logic the command does not run.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from pathlib import Path

from prefixlint.lint.checker import file_kind
from prefixlint.lint.discover import Target
from prefixlint.lint.fixer import FixOutcome, fix_text, plan
from prefixlint.lint.runner import RunOptions, check_targets, finalize
from prefixlint.model.findings import Finding
from prefixlint.model.settings import Settings
from prefixlint.model.source_text import split_lines
from prefixlint.rules.base import Example, Rule


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
    """Findings of ``rules`` (all enabled ones by default) for the given files of one project."""
    if rules is not None:
        settings = settings.model_copy(update={"select": [r.code for r in rules]})
    settings.root = str(root.resolve())
    targets = []
    for path in paths:
        full = str(path.resolve())
        kind = file_kind(full, settings, named=True)  # an example names its files
        if kind is not None:
            targets.append(Target(full, kind, settings))
    options = RunOptions(jobs=1, use_cache=False, prefilter=False, isolate=False)
    run = finalize(targets, check_targets(targets, options))
    codes = {r.code for r in rules} if rules is not None else None
    return [f for f in run.findings if codes is None or f.code in codes]


def check_example(example: Example, root: Path, rules: Iterable[type[Rule]] | None = None) -> list[Finding]:
    """Findings for an example written under ``root`` (its main file and its other files).

    A ``pyproject.toml`` among the example's files is its config (e.g. ``dynamic-sources``).
    """
    main = write_example(example, root)
    files = sorted({main, *[root / n for n in example.files]})
    return check_files(files, root, example_settings(example, root), rules)


def example_settings(example: Example, root: Path) -> Settings:
    """The settings an example is checked with: its ``pyproject.toml``, then its provider and model."""
    settings = settings_for_example(example)
    if "pyproject.toml" in example.files:
        from prefixlint.lint.config import load_settings_file

        given = settings.model_dump(by_alias=True)
        loaded = load_settings_file(root / "pyproject.toml")
        update = {k: given[k] for k in ("provider", "model") if example.provider or example.model}
        settings = loaded.model_copy(update=update)
    return settings


def fix_outcome(
    findings: Iterable[Finding], path: Path, unsafe: bool, settings: Settings | None = None
) -> FixOutcome:
    """What ``--fix`` (``--unsafe-fixes`` too when ``unsafe``) does to ``path`` in one round."""
    conf = settings or Settings()
    mine = plan(findings, lambda _p: conf, unsafe).get(str(path.resolve()), [])
    return fix_text(str(path.resolve()), path.read_text("utf-8"), mine)


def apply_rule_fixes(findings: Iterable[Finding], path: Path, unsafe: bool) -> str:
    """The text of ``path`` after the real fixer applies the allowed fixes aimed at it.

    A fix whose result does not parse is refused by the fixer; that is an error here.
    """
    outcome = fix_outcome(findings, path, unsafe)
    if outcome.error:
        raise AssertionError(f"{path}: the fix was refused: {outcome.error}")
    return outcome.fixed


def render_findings(findings: Sequence[Finding], root: Path, sources: dict[str, str] | None = None) -> str:
    """Every field of ``findings`` as stable text, paths relative to ``root`` (for snapshots).

    One block per finding: ``path:line:col-end_line:end_col CODE [severity] message``, the impact,
    the chain, the other values of the same cause (``also``), the alternative fixes, and the fix
    (applicability, message, and its edits as a unified diff).
    """
    base = str(root.resolve())

    def rel(path: str) -> str:
        return path[len(base) + 1 :] if path.startswith(base + "/") else path

    blocks = []
    for f in findings:
        loc = f.location
        end = f"{loc.end_line or loc.line}:{(loc.end_col if loc.end_col is not None else loc.col) + 1}"
        lines = [f"{rel(loc.path)}:{loc.line}:{loc.col + 1}-{end} {f.code} [{f.severity.value}] {f.message}"]
        if f.impact is not None:
            lines.append(f"  impact: {f.impact.describe()}")
        lines.extend(f"  via: {rel(c.path)}:{c.line}:{c.col + 1}" for c in f.chain)
        lines.extend(f"  also: {rel(a['path'])}:{a['line']}:{a['col'] + 1} `{a['label']}`" for a in f.also)
        alternatives = f.extra.get("alternative_fixes", ())
        lines.extend(f"  or: {a['message']} ({a['applicability']})" for a in alternatives)
        if f.fix is not None:
            target = f.fix.path or loc.path
            lines.append(f"  fix ({f.fix.applicability.value}, {f.fix.purpose or '-'}): {f.fix.message}")
            text = (sources or {}).get(target)
            if text is None:
                try:
                    text = Path(target).read_text("utf-8")
                except OSError:
                    text = None
            if text is not None:
                outcome = fix_text(target, text, [f])
                new = outcome.fixed if not outcome.error else text
                diff = difflib.unified_diff(
                    split_lines(text, keepends=True),
                    split_lines(new, keepends=True),
                    rel(target),
                    rel(target),
                    n=1,
                )
                lines.extend("    " + d.rstrip("\n") for d in list(diff)[2:])
                if outcome.error:
                    lines.append(f"    (refused: {outcome.error})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
