"""``prefixlint check``: lint paths or stdin, fix, and report in ruff's formats and exit codes.

Exit codes: 0 clean (or everything fixed), 1 findings remain (or ``--diff`` would change files),
2 usage, configuration or internal error. Errors go to stderr; reports go to stdout or ``-o``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from prefixlint.commands.common import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    FAST_EXIT,
    fail,
    write_output,
)
from prefixlint.lint.config import ConfigError
from prefixlint.model.settings import Settings
from prefixlint.report import OUTPUT_FORMATS

CHECK_FORMATS = OUTPUT_FORMATS


@dataclass(frozen=True)
class CheckOptions:
    """What to do with the findings of a run: fix, diff, add ignores, and how to report."""

    output_format: str = "text"
    output_file: Path | None = None
    fix: bool = False
    unsafe: bool = False
    diff: bool = False
    show_fixes: bool = False
    add_ignore: bool = False
    changed_since: str | None = None
    statistics: bool = False
    exit_zero: bool = False
    quiet: bool = False
    force_exclude: bool = False
    stdin_filename: str | None = None


def check(
    paths: Annotated[list[str] | None, typer.Argument(help="Files or directories; '-' reads stdin.")] = None,
    output_format: Annotated[
        str,
        typer.Option(
            "--output-format",
            envvar="PREFIXLINT_OUTPUT_FORMAT",
            help="text, concise, json, json-lines, sarif or github.",
        ),
    ] = "text",
    output_file: Annotated[
        Path | None, typer.Option("-o", "--output-file", help="Write the report here.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="Use this config file for every path.")
    ] = None,
    select: Annotated[
        list[str] | None, typer.Option("--select", help="Rule codes or prefixes to enable.")
    ] = None,
    extend_select: Annotated[list[str] | None, typer.Option("--extend-select", help="Codes to add.")] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", help="Codes or prefixes to disable.")
    ] = None,
    provider: Annotated[str | None, typer.Option("--provider", help="Target provider.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Target model.")] = None,
    fix: Annotated[bool, typer.Option("--fix/--no-fix", help="Apply safe fixes.")] = False,
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="Apply unsafe fixes too.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Print the fixes as a diff; change nothing.")] = False,
    show_fixes: Annotated[bool, typer.Option("--show-fixes", help="List the fixes applied.")] = False,
    add_ignore: Annotated[
        bool, typer.Option("--add-ignore", help="Add `# prefixlint: ignore[...]` for every finding.")
    ] = False,
    changed_since: Annotated[
        str | None, typer.Option("--changed-since", help="Only report findings on lines changed since REF.")
    ] = None,
    statistics: Annotated[bool, typer.Option("--statistics", help="Count findings per code.")] = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even with findings.")] = False,
    no_cache: Annotated[
        bool, typer.Option("-n", "--no-cache", help="Neither read nor write the cache.")
    ] = False,
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", envvar="PREFIXLINT_CACHE_DIR")] = None,
    jobs: Annotated[
        int | None, typer.Option("-j", "--jobs", min=1, help="Worker processes (default: all cores).")
    ] = None,
    stdin_filename: Annotated[
        str | None, typer.Option("--stdin-filename", help="Name of the file read from stdin.")
    ] = None,
    force_exclude: Annotated[
        bool, typer.Option("--force-exclude", help="Apply excludes to files named on the command line too.")
    ] = False,
    no_prefilter: Annotated[
        bool,
        typer.Option("--no-prefilter", help="Analyse every Python file, even those without prompt words."),
    ] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Print findings only, no summary.")] = False,
) -> None:
    """Lint files for prompt layouts that defeat the provider's prefix cache."""
    from prefixlint.lint.discover import UsageError
    from prefixlint.lint.runner import RunOptions

    if output_format not in CHECK_FORMATS:
        raise fail(
            f"--output-format: unknown format {output_format!r}; expected one of {', '.join(CHECK_FORMATS)}"
        )
    opts = CheckOptions(
        output_format=output_format,
        output_file=output_file,
        fix=fix,
        unsafe=unsafe_fixes,
        diff=diff,
        show_fixes=show_fixes,
        add_ignore=add_ignore,
        changed_since=changed_since,
        statistics=statistics,
        exit_zero=exit_zero,
        quiet=quiet,
        force_exclude=force_exclude,
        stdin_filename=stdin_filename,
    )
    overrides: dict[str, Any] = {
        "select": _codes(select),
        "extend_select": _codes(extend_select),
        "ignore": _codes(ignore),
        "provider": provider,
        "model": model,
        "unsafe_fixes": True if unsafe_fixes else None,
    }
    run_options = RunOptions(
        jobs=jobs, use_cache=not no_cache, cache_dir=cache_dir, prefilter=not no_prefilter
    )
    try:
        resolver = _resolver(config, overrides)
        if (paths or ["."]) == ["-"]:
            code = _check_stdin(resolver, opts)
        else:
            code = _check_paths([Path(p) for p in paths or ["."]], resolver, run_options, opts)
    except (ConfigError, UsageError) as exc:
        raise fail(str(exc)) from exc
    FAST_EXIT.append(True)
    raise typer.Exit(code)


def _codes(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [c.strip().upper() for v in values for c in v.split(",") if c.strip()]


def _resolver(config: Path | None, overrides: dict[str, Any]) -> Any:
    """The settings resolver for this run; command-line selectors are checked first."""
    from prefixlint.lint.config import SettingsResolver
    from prefixlint.lint.rule_codes import check_selectors

    for key in ("select", "extend_select", "ignore"):
        if overrides[key]:
            check_selectors(overrides[key], f"--{key.replace('_', '-')}")
    given = {k: v for k, v in overrides.items() if v is not None}
    return SettingsResolver(config.resolve() if config else None, given)


def _check_paths(paths: list[Path], resolver: Any, run_options: Any, opts: CheckOptions) -> int:
    from prefixlint.lint.discover import discover
    from prefixlint.lint.rule_codes import validate_settings
    from prefixlint.lint.runner import check_targets, finalize

    changed = _changed_lines(opts.changed_since, paths)
    targets = discover(paths, resolver, force_exclude=opts.force_exclude)
    for warning in resolver.warnings:
        typer.echo(f"prefixlint: warning: {warning}", err=True)
    validate_settings(t.settings for t in targets)

    def lint() -> Any:
        return finalize(targets, check_targets(targets, run_options), changed)

    # A target's settings are what the resolver gives for its path: no second lookup per file.
    by_path: dict[str, Settings] = {t.path: t.settings for t in targets}

    def settings_for(path: str) -> Settings:
        hit = by_path.get(path)
        if hit is None:
            hit = by_path[path] = resolver.for_path(Path(path))
        return hit

    run = lint()
    if opts.add_ignore:
        return _add_ignores(run)
    if opts.diff:
        return _print_diff(run, settings_for, opts)
    applied: list[Any] = []
    if opts.fix:
        run = _fix_until_stable(run, lint, settings_for, opts, applied)
    _report(run.findings, settings_for, applied, opts)
    return _internal(run) or _exit_for(run.findings, opts)


def _changed_lines(ref: str | None, paths: list[Path]) -> dict[str, set[int]] | None:
    if not ref:
        return None
    from prefixlint.lint.gitdiff import GitError, changed_lines

    try:
        return changed_lines(ref, paths)
    except GitError as exc:
        raise fail(f"--changed-since {ref}: {exc}") from exc


def _print_diff(run: Any, settings_for: Callable[[str], Settings], opts: CheckOptions) -> int:
    from prefixlint.lint.fixer import fix_files

    outcomes = fix_files(run.findings, settings_for, opts.unsafe, write=False)
    for o in outcomes:
        if o.error:
            typer.echo(f"prefixlint: warning: {o.path}: not fixed: {o.error}", err=True)
    changed_outcomes = [o for o in outcomes if o.changed]
    write_output("".join(o.diff() for o in changed_outcomes), opts.output_file)
    n = sum(len(o.applied) for o in changed_outcomes)
    if not opts.quiet:
        typer.echo(
            f"Would fix {n} error{'s' if n != 1 else ''}." if n else "No errors would be fixed.", err=True
        )
    return _internal(run) or (EXIT_FINDINGS if changed_outcomes else EXIT_CLEAN)


def _fix_until_stable(
    run: Any,
    lint: Callable[[], Any],
    settings_for: Callable[[str], Settings],
    opts: CheckOptions,
    applied: list[Any],
) -> Any:
    """Apply fixes and lint again until nothing changes (at most ``MAX_ROUNDS``); returns the last run."""
    from prefixlint.lint.fixer import MAX_ROUNDS, fix_files

    for _ in range(MAX_ROUNDS):
        outcomes = fix_files(run.findings, settings_for, opts.unsafe, write=True)
        for o in outcomes:
            if o.error:
                typer.echo(f"prefixlint: warning: {o.path}: left untouched: {o.error}", err=True)
        done = [f for o in outcomes if o.changed for f in o.applied]
        if not done:
            break
        applied.extend(done)
        run = lint()
    return run


def _exit_for(findings: list[Any], opts: CheckOptions) -> int:
    return EXIT_CLEAN if opts.exit_zero or not findings else EXIT_FINDINGS


def _internal(run: Any) -> int:
    for path, error in run.internal_errors:
        typer.echo(f"prefixlint: internal error in {path}: {error.splitlines()[0]}", err=True)
    return EXIT_ERROR if run.internal_errors else 0


def _report(
    findings: list[Any], settings_for: Callable[[str], Settings], applied: list[Any], opts: CheckOptions
) -> None:
    from prefixlint.lint.fixer import fix_target, is_fix_allowed
    from prefixlint.model.edits import Applicability
    from prefixlint.report import ReportContext, render
    from prefixlint.report.statistics import render_statistics

    fixable: set[int] = set()
    hidden = 0
    for i, f in enumerate(findings):
        target = fix_target(f)
        if target is None:
            continue
        settings = settings_for(target)
        if is_fix_allowed(f, settings, opts.unsafe):
            fixable.add(i)
        elif f.fix.applicability is Applicability.UNSAFE and is_fix_allowed(f, settings, True):
            hidden += 1
    ctx = ReportContext(
        fixable=fixable,
        hidden_unsafe=hidden,
        fixed=len(applied),
        show_fixes=opts.show_fixes,
        applied=applied,
        color=opts.output_file is None and sys.stdout.isatty(),
        quiet=opts.quiet,
    )
    if opts.statistics:
        write_output(render_statistics(findings, ctx, opts.output_format), opts.output_file)
        return
    write_output(render(opts.output_format, findings, ctx), opts.output_file)


def _add_ignores(run: Any) -> int:
    from prefixlint.lint.suppressions import add_ignores, parse_suppressions
    from prefixlint.model.source_text import read_source, write_source

    by_path: dict[str, list[Any]] = {}
    for f in run.findings:
        by_path.setdefault(f.location.path, []).append(f)
    total = 0
    for path, group in sorted(by_path.items()):
        text, _err = read_source(path)
        if text is None:
            continue
        style = "python" if path.endswith((".py", ".pyi")) else "template"
        if style == "template" and not path.endswith((".j2", ".jinja", ".jinja2", ".prompty", ".prompt")):
            continue  # plain prompt files have no comment syntax
        new, count = add_ignores(text, parse_suppressions(path, text, style), group)
        if count and new != text:
            write_source(path, new)
            total += count
    typer.echo(f"Added {total} prefixlint: ignore directive{'s' if total != 1 else ''}.", err=True)
    return _internal(run) or EXIT_CLEAN


def _check_stdin(resolver: Any, opts: CheckOptions) -> int:
    """Lint stdin as ``--stdin-filename`` (default ``stdin.py``); with ``--fix`` print the fixed code."""
    from prefixlint.lint.checker import FileResult, check_source, file_kind
    from prefixlint.lint.discover import Target
    from prefixlint.lint.fixer import fix_files
    from prefixlint.lint.rule_codes import validate_settings
    from prefixlint.lint.runner import finalize
    from prefixlint.model.source_text import decode_source

    name = str(Path(opts.stdin_filename or "stdin.py").absolute())
    settings = resolver.for_path(Path(name))
    data = sys.stdin.buffer.read()
    text, err = decode_source(name, data)
    kind = file_kind(name, settings) or "python"
    result = (
        FileResult(path=name, findings=[err]) if err is not None else check_source(name, text, settings, kind)
    )
    run = finalize(
        [Target(name, kind, settings)], {name: result}, texts={name: text} if text is not None else None
    )
    validate_settings(t.settings for t in run.targets)

    def settings_for(path: str) -> Settings:
        return resolver.for_path(Path(path))

    if (opts.fix or opts.diff) and text is not None:
        outcomes = [
            o
            for o in fix_files(run.findings, settings_for, opts.unsafe, write=False, overrides={name: text})
            if o.path == name
        ]
        fixed_text = outcomes[0].fixed if outcomes and outcomes[0].changed else text
        if opts.diff:
            sys.stdout.write(outcomes[0].diff() if outcomes and outcomes[0].changed else "")
            return EXIT_FINDINGS if fixed_text != text else EXIT_CLEAN
        sys.stdout.write(fixed_text)
        remaining = [f for f in run.findings if not (outcomes and f in outcomes[0].applied)]
        return _exit_for(remaining, opts)
    _report(run.findings, settings_for, [], opts)
    return _internal(run) or _exit_for(run.findings, opts)
