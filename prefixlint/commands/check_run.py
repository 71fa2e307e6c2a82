"""What ``prefixlint check`` does once its options are read: lint paths or stdin, fix, report.

Both ways in call :func:`run_check`: the typer command (:mod:`prefixlint.commands.check`) and the
fast path that parses ``check``'s options before typer is imported (:mod:`prefixlint.commands.lean`).
Nothing here imports typer.

Exit codes: 0 clean (or everything fixed, or only findings with fewer than ``min-impact-tokens``
tokens at stake remain, see :attr:`prefixlint.model.findings.Finding.blocking`),
1 findings remain (or ``--diff`` would change files), 2 usage, configuration or internal error.
Errors go to stderr; in the machine-readable formats (json, json-lines, sarif, github) they are
also written where the report goes, in that format (:mod:`prefixlint.report.errors`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefixlint.commands.common import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, use_color, write_output
from prefixlint.model.settings import Settings
from prefixlint.report import OUTPUT_FORMATS

CHECK_FORMATS = OUTPUT_FORMATS
REPORTED: list[Any] = []  # errors :func:`failed` reported in this process (the CLI adds no second one)


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
    nothing_checked: bool = False


class CheckFailed(Exception):
    """The run cannot go on: exit 2 with this error."""

    def __init__(self, error: Any) -> None:
        super().__init__(error.message)
        self.error = error


def warn(message: str) -> None:
    print(f"prefixlint: warning: {message}", file=sys.stderr)


def run_check(
    paths: list[str] | None = None,
    output_format: str = "text",
    output_file: Path | None = None,
    config: Path | None = None,
    select: list[str] | None = None,
    extend_select: list[str] | None = None,
    ignore: list[str] | None = None,
    provider: str | None = None,
    model: str | None = None,
    fix: bool = False,
    unsafe_fixes: bool = False,
    diff: bool = False,
    show_fixes: bool = False,
    add_ignore: bool = False,
    changed_since: str | None = None,
    statistics: bool = False,
    exit_zero: bool = False,
    no_cache: bool = False,
    cache_dir: Path | None = None,
    jobs: int | None = None,
    stdin_filename: str | None = None,
    force_exclude: bool = False,
    no_prefilter: bool = False,
    quiet: bool = False,
    payload_shape: str | None = None,
    min_impact_tokens: int | None = None,
) -> int:
    """Run ``prefixlint check`` with these options; returns the exit code."""
    from prefixlint.lint.config import ConfigError
    from prefixlint.lint.discover import UsageError
    from prefixlint.lint.runner import RunOptions
    from prefixlint.report.errors import RunError

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
    try:
        if output_format not in CHECK_FORMATS:
            known = ", ".join(CHECK_FORMATS)
            raise CheckFailed(
                RunError(f"--output-format: unknown format {output_format!r}; expected one of {known}")
            )
        if payload_shape is not None:
            from prefixlint.model.settings import PAYLOAD_SHAPES

            if payload_shape not in PAYLOAD_SHAPES:
                shapes = ", ".join(PAYLOAD_SHAPES)
                raise CheckFailed(
                    RunError(f"--payload-shape: unknown shape {payload_shape!r}; expected one of {shapes}")
                )
        if statistics:
            from prefixlint.report.statistics import STATISTICS_FORMATS

            if output_format not in STATISTICS_FORMATS:
                raise CheckFailed(
                    RunError(
                        f"--statistics cannot be shown in the {output_format} output format; "
                        f"use {', '.join(STATISTICS_FORMATS)}"
                    )
                )
        overrides: dict[str, Any] = {
            "select": _codes(select),
            "extend_select": _codes(extend_select),
            "ignore": _codes(ignore),
            "provider": provider,
            "model": model,
            "unsafe_fixes": True if unsafe_fixes else None,
            "payload_shape": payload_shape,
            "min_impact_tokens": min_impact_tokens,
        }
        run_options = RunOptions(
            jobs=jobs, use_cache=not no_cache, cache_dir=cache_dir, prefilter=not no_prefilter
        )
        resolver = _resolver(config, overrides)
        if (paths or ["."]) == ["-"]:
            return _check_stdin(resolver, run_options, opts)
        return _check_paths([Path(p) for p in paths or ["."]], resolver, run_options, opts)
    except ConfigError as exc:
        return failed(opts, RunError.from_message(str(exc), exc.path if exc.path != "command line" else None))
    except UsageError as exc:
        return failed(opts, RunError(str(exc)))
    except CheckFailed as exc:
        return failed(opts, exc.error)


def failed(opts: CheckOptions, error: Any) -> int:
    """Report ``error`` on stderr, and as a report in the machine-readable formats; exit 2."""
    from prefixlint.report.errors import render_error

    REPORTED.append(error)
    print(f"prefixlint: error: {error.message}", file=sys.stderr)
    fmt = opts.output_format if opts.output_format in CHECK_FORMATS else "text"
    doc = render_error(fmt, error)
    if doc is not None:
        try:
            write_output(doc, opts.output_file)
        except OSError as exc:
            print(f"prefixlint: error: cannot write {opts.output_file}: {exc}", file=sys.stderr)
    return EXIT_ERROR


def report_error(fmt: str, message: str) -> None:
    """An error found before ``check`` ran (a bad command line, a crash) as a report on stdout."""
    from prefixlint.report.errors import RunError, render_error

    doc = render_error(fmt, RunError(message))
    if doc:
        sys.stdout.write(doc)
        sys.stdout.flush()


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


def _settings_lookup(resolver: Any, targets: list[Any]) -> Callable[[str], Settings]:
    """A target's settings are what the resolver gave it: no second lookup per file."""
    by_path: dict[str, Settings] = {t.path: t.settings for t in targets}

    def settings_for(path: str) -> Settings:
        hit = by_path.get(path)
        if hit is None:
            hit = by_path[path] = resolver.for_path(Path(path))
        return hit

    return settings_for


def _check_paths(paths: list[Path], resolver: Any, run_options: Any, opts: CheckOptions) -> int:
    # What discovery and the run need, imported before a worker is forked: it shares them.
    import prefixlint.lint.discover
    import prefixlint.lint.rule_codes
    import prefixlint.lint.runner  # noqa: F401
    from prefixlint.lint.prestart import maybe_prestart
    from prefixlint.lint.workers import discard_prestarted

    changed = _changed_lines(opts.changed_since, paths)
    maybe_prestart([str(p) for p in paths])  # its imports overlap discovery and settings checks
    try:
        return _check_found(paths, resolver, run_options, opts, changed)
    finally:
        discard_prestarted()


def _check_found(paths: list[Path], resolver: Any, run_options: Any, opts: CheckOptions, changed: Any) -> int:
    import dataclasses

    from prefixlint.lint.discover import discover
    from prefixlint.lint.rule_codes import validate_settings
    from prefixlint.lint.runner import check_targets, finalize, relint
    from prefixlint.report.progress import progress_bar

    unread: list[str] = []
    targets = discover(paths, resolver, force_exclude=opts.force_exclude, unread=unread)
    for warning in resolver.warnings:
        warn(warning)
    validate_settings(t.settings for t in targets)
    for name in unread:  # named on the command line, read by no analyzer: not checked
        warn(
            f"{name}: not checked: no analyzer reads this file (Python, a template or prompt file "
            "matching `template-globs`/`plain-prompt-globs`, or a JSON request payload; see "
            "`payload-globs` and `--payload-shape`)"
        )
    if unread and not targets:
        opts = dataclasses.replace(opts, nothing_checked=True)
    settings_for = _settings_lookup(resolver, targets)

    with progress_bar(0 if opts.quiet else len(targets)) as advance:
        run = finalize(targets, check_targets(targets, run_options, advance), changed)
    if opts.add_ignore:
        return _add_ignores(run)
    applied: list[Any] = []
    if opts.fix or opts.diff:

        def again(last: Any, changed_paths: set[str], stand_ins: dict[str, str]) -> Any:
            return relint(last, changed_paths, run_options, changed, stand_ins)

        done = _converge(run, again, settings_for, opts, write=not opts.diff)
        if opts.diff:
            return _print_diff(done, opts) or _internal(done.run)
        run, applied = done.run, done.applied
    _report(run.findings, settings_for, applied, opts)
    return _internal(run) or _exit_for(run.findings, opts)


def _changed_lines(ref: str | None, paths: list[Path]) -> dict[str, set[int]] | None:
    if not ref:
        return None
    from prefixlint.lint.gitdiff import GitError, changed_lines
    from prefixlint.report.errors import RunError

    try:
        return changed_lines(ref, paths)
    except GitError as exc:
        raise CheckFailed(RunError(f"--changed-since {ref}: {exc}")) from exc


def _converge(run: Any, relint: Any, settings_for: Any, opts: CheckOptions, write: bool, **kw: Any) -> Any:
    """Fix until stable (see :mod:`prefixlint.lint.fixloop`), with its warnings on stderr."""
    from prefixlint.lint.fixloop import MAX_ROUNDS, fix_until_stable

    done = fix_until_stable(run, relint, settings_for, opts.unsafe, write=write, **kw)
    said: set[tuple[str, str]] = set()
    for path, error in done.errors:
        if (path, error) not in said:
            said.add((path, error))
            warn(f"{path}: {'not fixed' if opts.diff else 'left untouched'}: {error}")
    for path in done.unstable:
        warn(f"{path}: fixes did not converge (a fix undoes another, or more than {MAX_ROUNDS} rounds)")
    return done


def _print_diff(done: Any, opts: CheckOptions) -> int:
    outcomes = done.outcomes()
    write_output("".join(o.diff() for o in outcomes), opts.output_file)
    n = len(done.applied)
    if not opts.quiet:
        print(
            f"Would fix {n} error{'s' if n != 1 else ''}." if n else "No errors would be fixed.",
            file=sys.stderr,
        )
    return EXIT_FINDINGS if outcomes else EXIT_CLEAN


def _exit_for(findings: list[Any], opts: CheckOptions) -> int:
    """1 when a finding fails the run; those below ``min-impact-tokens`` do not."""
    return EXIT_CLEAN if opts.exit_zero or not any(f.blocking for f in findings) else EXIT_FINDINGS


def _internal(run: Any) -> int:
    for path, error in run.internal_errors:
        print(f"prefixlint: internal error in {path}: {error.splitlines()[0]}", file=sys.stderr)
    return EXIT_ERROR if run.internal_errors else 0


def _report(
    findings: list[Any],
    settings_for: Callable[[str], Settings],
    applied: list[Any],
    opts: CheckOptions,
    sources: dict[str, str] | None = None,
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
        color=opts.output_file is None and use_color(sys.stdout),
        quiet=opts.quiet,
        nothing_checked=opts.nothing_checked,
        sources=sources or {},
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
    print(f"Added {total} prefixlint: ignore directive{'s' if total != 1 else ''}.", file=sys.stderr)
    return _internal(run) or EXIT_CLEAN


def _check_stdin(resolver: Any, run_options: Any, opts: CheckOptions) -> int:
    """Lint stdin as ``--stdin-filename`` (default ``stdin.py``); with ``--fix`` print the fixed code.

    The text stands in for that file while it is checked (in a worker, like any file), fixed round
    after round, and reported with snippets from the text itself.
    """
    import dataclasses

    from prefixlint.analysis.payloads.sniff import JSON_SUFFIXES
    from prefixlint.lint.checker import FileResult, file_kind
    from prefixlint.lint.discover import Target
    from prefixlint.lint.rule_codes import validate_settings
    from prefixlint.lint.runner import check_targets, finalize, relint
    from prefixlint.model.source_text import decode_source, source_overlay

    name = str(Path(opts.stdin_filename or "stdin.py").absolute())
    settings = resolver.for_path(Path(name))
    validate_settings([settings])
    text, err = decode_source(name, sys.stdin.buffer.read())
    kind = file_kind(name, settings) or ("payload" if name.endswith(JSON_SUFFIXES) else "python")
    target = Target(name, kind, settings)
    stand_ins = {name: text} if text is not None else {}
    run_options = dataclasses.replace(run_options, use_cache=False)
    with source_overlay(stand_ins):
        if err is not None:
            results = {name: FileResult(path=name, findings=[err])}
        else:
            results = check_targets([target], run_options)
        run = finalize([target], results, texts=stand_ins or None)
    settings_for = _settings_lookup(resolver, [target])
    if (opts.fix or opts.diff) and text is not None:

        def again(last: Any, changed: set[str], pending: dict[str, str]) -> Any:
            return relint(last, changed, run_options, None, pending)

        done = _converge(run, again, settings_for, opts, write=False, stand_ins=stand_ins)
        fixed = done.texts.get(name, text)
        if opts.diff:
            mine = [o for o in done.outcomes() if o.path == name]
            sys.stdout.write(mine[0].diff() if mine else "")
            return EXIT_FINDINGS if fixed != text else EXIT_CLEAN
        sys.stdout.write(fixed)
        sys.stdout.flush()
        return _internal(done.run) or _exit_for(done.run.findings, opts)
    _report(run.findings, settings_for, [], opts, sources=stand_ins)
    return _internal(run) or _exit_for(run.findings, opts)
