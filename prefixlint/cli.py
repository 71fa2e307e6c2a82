"""The ``prefixlint`` command line: ``check``, ``rules``, ``rule``, plus mounted ``engine`` and ``bench``.

Exit codes: 0 clean (or everything fixed), 1 findings remain (or ``--diff`` would change files),
2 usage, configuration or internal error. Errors go to stderr; reports go to stdout or ``-o``.
"""

import json
import sys
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup

from prefixlint import __version__
from prefixlint.config import ConfigError, Settings

# --- option values without pydantic ---------------------------------------------------------------
#
# typer 0.29 coerces every parameter value through a pydantic ``TypeAdapter`` built on each
# invocation (``typer._coercion.build_runtime_param``), even an unset option and its own ``--help``;
# only a bool flag that already holds a bool, and file types, skip it. Importing pydantic and building
# about 15 adapters costs some 0.2 s, more than a warm ``check`` spends linting, and no annotation,
# ``parser=`` or ``min=`` avoids it. So these commands use typer's ``cls=`` hook to give each
# parameter a coercer for the plain shapes they declare (str, int, Path, list[str], bool). A value it
# is not sure of goes to typer's own coercion: values are accepted or rejected, and errors worded,
# exactly as typer does (tests/test_cli_startup.py compares the two).

_UNSURE = object()

try:  # typer internals (the pinned 0.29); without them typer's own coercion is used unchanged
    from typer._click.exceptions import BadParameter as _BadParameter
    from typer._coercion import RuntimeParam as _RuntimeParam
    from typer._coercion import build_runtime_param as _build_runtime_param
    from typer._param_types import coerce_cli_path as _coerce_cli_path
except ImportError:  # pragma: no cover
    _RuntimeParam = None


def _lean_value(annotation: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
    """``value`` as typer would coerce it for ``annotation``, or ``_UNSURE``."""
    if info.parser is not None:
        return _UNSURE
    if annotation is str or annotation is bool:
        return value if type(value) is annotation else _UNSURE
    if annotation is int:
        if type(value) is str and value.isascii() and value.isdigit() and len(value) <= 18:
            number = int(value)
        elif type(value) is int:
            number = value
        else:
            return _UNSURE
        if info.clamp or (info.min is not None and number < info.min):
            return _UNSURE
        return _UNSURE if info.max is not None and number > info.max else number
    if annotation is Path and info.path_type is None and type(value) is str:
        try:  # typer's own checks (exists, readable, ...) on the path pydantic would have built
            return _coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
        except (_BadParameter, ValueError):  # ValueError: a NUL byte, which pydantic reports
            return _UNSURE  # let typer word the error from the value as given
    if (
        get_origin(annotation) is list
        and get_args(annotation) == (str,)
        and type(value) in (list, tuple)
        and all(type(v) is str for v in value)
    ):
        return list(value)
    return _UNSURE


if _RuntimeParam is not None:

    @dataclass(frozen=True)
    class _LeanRuntimeParam(_RuntimeParam):  # type: ignore[misc,valid-type]
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            out = _lean_value(self.annotation, self.parameter_info, value, param, ctx)
            if out is not _UNSURE:
                return out
            full = param._runtime_param = _build_runtime_param(self.descriptor)
            return full._coerce_value(value, param=param, ctx=ctx)


def _install_lean_coercion(params: list[Any]) -> None:
    if _RuntimeParam is None:  # pragma: no cover
        return
    for p in params:
        descriptor = getattr(p, "type_descriptor", None)
        if descriptor is None or getattr(p, "_runtime_param", 0) is not None:
            continue
        if descriptor.file_annotation is None:
            p._runtime_param = _LeanRuntimeParam(
                parameter_info=descriptor.parameter_info,
                annotation=descriptor.annotation,
                descriptor=descriptor,
            )


class LeanCommand(TyperCommand):
    """A typer command whose parameters are coerced without pydantic when the value is plain."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        _install_lean_coercion(params)
        return params


class _Commands(MutableMapping[str, Any]):
    """The root group's commands, with the :data:`MOUNTS` sub-apps built on first access."""

    def __init__(self, commands: MutableMapping[str, Any], pending: list[str]) -> None:
        self._commands = dict(commands)
        self._pending = [n for n in pending if n not in self._commands]
        self._order = [*self._commands, *self._pending]

    def _load(self, name: str) -> None:
        self._pending.remove(name)
        group = _mounted_group(name)
        if group is not None:
            self._commands[name] = group

    def __getitem__(self, name: str) -> Any:
        if name in self._pending:
            self._load(name)
        return self._commands[name]

    def __setitem__(self, name: str, command: Any) -> None:
        if name in self._pending:
            self._pending.remove(name)
        if name not in self._order:
            self._order.append(name)
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        if name in self._pending:
            self._pending.remove(name)
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        for name in list(self._pending):
            self._load(name)
        return iter([n for n in self._order if n in self._commands])

    def __len__(self) -> int:
        return sum(1 for _ in self)


class LeanGroup(TyperGroup):
    """The top-level group: lean coercion for its own options, :data:`MOUNTS` built on demand."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self.commands, list(MOUNTS))

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        _install_lean_coercion(params)
        return params


app = typer.Typer(
    cls=LeanGroup,
    name="prefixlint",
    help="Make LLM prompts hit the provider's prefix cache.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
CHECK_FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github")

OutputFormat = Annotated[
    str, typer.Option("--output-format", envvar="PREFIXLINT_OUTPUT_FORMAT", help="text (default) or json.")
]


def fail(message: str) -> typer.Exit:
    """Print ``message`` to stderr and return the exit-2 exception to raise."""
    typer.echo(f"prefixlint: error: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def _codes(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [c.strip().upper() for v in values for c in v.split(",") if c.strip()]


def _check_selectors(selectors: list[str], where: str) -> None:
    from prefixlint.rulecodes import rule_codes

    codes = rule_codes()
    for s in selectors:
        if s != "ALL" and not any(c.startswith(s) for c in codes):
            raise fail(f"{where}: unknown rule selector {s!r} (see `prefixlint rules`)")


def _write(text: str, output_file: Path | None) -> None:
    if output_file is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        output_file.write_text(text, encoding="utf-8")


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"prefixlint {__version__}")
        raise typer.Exit(0)


@app.command(cls=LeanCommand)
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
    from prefixlint.runner import RunOptions, SettingsResolver, UsageError

    if output_format not in CHECK_FORMATS:
        raise fail(
            f"--output-format: unknown format {output_format!r}; expected one of {', '.join(CHECK_FORMATS)}"
        )
    overrides: dict[str, Any] = {
        "select": _codes(select),
        "extend_select": _codes(extend_select),
        "ignore": _codes(ignore),
        "provider": provider,
        "model": model,
        "unsafe_fixes": True if unsafe_fixes else None,
    }
    for key in ("select", "extend_select", "ignore"):
        if overrides[key]:
            _check_selectors(overrides[key], f"--{key.replace('_', '-')}")
    try:
        resolver = SettingsResolver(
            config.resolve() if config else None, {k: v for k, v in overrides.items() if v is not None}
        )
    except ConfigError as exc:
        raise fail(str(exc)) from exc
    options = RunOptions(jobs=jobs, use_cache=not no_cache, cache_dir=cache_dir, prefilter=not no_prefilter)
    given = paths or ["."]
    try:
        if given == ["-"]:
            code = _check_stdin(
                resolver,
                stdin_filename,
                fix,
                unsafe_fixes,
                diff,
                output_format,
                output_file,
                statistics,
                exit_zero,
                quiet,
                show_fixes,
            )
        else:
            code = _check_paths(
                [Path(p) for p in given],
                resolver,
                options,
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
            )
    except ConfigError as exc:
        raise fail(str(exc)) from exc
    except UsageError as exc:
        raise fail(str(exc)) from exc
    _FAST_EXIT.append(True)
    raise typer.Exit(code)


def _validate_settings(targets: list[Any]) -> None:
    seen: set[int] = set()
    for t in targets:
        if id(t.settings) in seen:
            continue
        seen.add(id(t.settings))
        where = f"{t.settings.root}: [tool.prefixlint]" if t.settings.root else "settings"
        _check_selectors([*t.settings.select, *t.settings.extend_select, *t.settings.ignore], where)


def _check_paths(
    paths: list[Path],
    resolver: Any,
    options: Any,
    *,
    output_format: str,
    output_file: Path | None,
    fix: bool,
    unsafe: bool,
    diff: bool,
    show_fixes: bool,
    add_ignore: bool,
    changed_since: str | None,
    statistics: bool,
    exit_zero: bool,
    quiet: bool,
    force_exclude: bool,
) -> int:
    from prefixlint.fixer import MAX_ROUNDS, fix_files
    from prefixlint.runner import check_targets, discover, finalize

    changed = None
    if changed_since:
        from prefixlint.gitdiff import GitError, changed_lines

        try:
            changed = changed_lines(changed_since)
        except GitError as exc:
            raise fail(f"--changed-since {changed_since}: {exc}") from exc
    targets = discover(paths, resolver, force_exclude=force_exclude)
    _validate_settings(targets)

    def lint() -> Any:
        return finalize(targets, check_targets(targets, options), changed)

    # A target's settings are what the resolver gives for its path: no second lookup per file.
    by_path: dict[str, Settings] = {t.path: t.settings for t in targets}

    def settings_for(path: str) -> Settings:
        hit = by_path.get(path)
        if hit is None:
            hit = by_path[path] = resolver.for_path(Path(path))
        return hit

    run = lint()
    if add_ignore:
        return _add_ignores(run)
    if diff:
        outcomes = fix_files(run.findings, settings_for, unsafe, write=False)
        for o in outcomes:
            if o.error:
                typer.echo(f"prefixlint: warning: {o.path}: not fixed: {o.error}", err=True)
        changed_outcomes = [o for o in outcomes if o.changed]
        _write("".join(o.diff() for o in changed_outcomes), output_file)
        n = sum(len(o.applied) for o in changed_outcomes)
        if not quiet:
            typer.echo(
                f"Would fix {n} error{'s' if n != 1 else ''}." if n else "No errors would be fixed.", err=True
            )
        return _internal(run) or (EXIT_FINDINGS if changed_outcomes else EXIT_CLEAN)
    applied: list[Any] = []
    if fix:
        for _ in range(MAX_ROUNDS):
            outcomes = fix_files(run.findings, settings_for, unsafe, write=True)
            for o in outcomes:
                if o.error:
                    typer.echo(f"prefixlint: warning: {o.path}: left untouched: {o.error}", err=True)
            done = [f for o in outcomes if o.changed for f in o.applied]
            if not done:
                break
            applied.extend(done)
            run = lint()
    _report(
        run.findings, output_format, output_file, settings_for, unsafe, applied, show_fixes, statistics, quiet
    )
    internal = _internal(run)
    if internal:
        return internal
    return EXIT_CLEAN if exit_zero or not run.findings else EXIT_FINDINGS


def _internal(run: Any) -> int:
    for path, error in run.internal_errors:
        typer.echo(f"prefixlint: internal error in {path}: {error.splitlines()[0]}", err=True)
    return EXIT_ERROR if run.internal_errors else 0


def _report(
    findings: list[Any],
    output_format: str,
    output_file: Path | None,
    settings_for: Any,
    unsafe: bool,
    applied: list[Any],
    show_fixes: bool,
    statistics: bool,
    quiet: bool,
) -> None:
    from prefixlint.edits import Applicability
    from prefixlint.fixer import fix_target, is_fix_allowed
    from prefixlint.report import ReportContext, render
    from prefixlint.report.statistics import render_statistics

    fixable: set[int] = set()
    hidden = 0
    for i, f in enumerate(findings):
        target = fix_target(f)
        if target is None:
            continue
        settings = settings_for(target)
        if is_fix_allowed(f, settings, unsafe):
            fixable.add(i)
        elif f.fix.applicability is Applicability.UNSAFE and is_fix_allowed(f, settings, True):
            hidden += 1
    ctx = ReportContext(
        fixable=fixable,
        hidden_unsafe=hidden,
        fixed=len(applied),
        show_fixes=show_fixes,
        applied=applied,
        color=output_file is None and sys.stdout.isatty(),
        quiet=quiet,
    )
    if statistics:
        _write(render_statistics(findings, ctx, output_format), output_file)
        return
    text = render(output_format, findings, ctx)
    _write(text, output_file)


def _add_ignores(run: Any) -> int:
    from prefixlint.checker import read_source
    from prefixlint.fixer import write_atomic
    from prefixlint.suppressions import add_ignores, parse_suppressions

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
            write_atomic(path, new)
            total += count
    typer.echo(f"Added {total} prefixlint: ignore directive{'s' if total != 1 else ''}.", err=True)
    return _internal(run) or EXIT_CLEAN


def _check_stdin(
    resolver: Any,
    stdin_filename: str | None,
    fix: bool,
    unsafe: bool,
    diff: bool,
    output_format: str,
    output_file: Path | None,
    statistics: bool,
    exit_zero: bool,
    quiet: bool,
    show_fixes: bool,
) -> int:
    """Lint stdin as ``--stdin-filename`` (default ``stdin.py``); with ``--fix`` print the fixed code."""
    from prefixlint.checker import check_source, decode_source, file_kind
    from prefixlint.fixer import fix_files
    from prefixlint.runner import Target, finalize

    name = str(Path(stdin_filename).absolute()) if stdin_filename else str(Path("stdin.py").absolute())
    settings = resolver.for_path(Path(name))
    data = sys.stdin.buffer.read()
    text, err = decode_source(name, data)
    kind = file_kind(name, settings) or "python"
    if err is not None:
        from prefixlint.checker import FileResult

        result = FileResult(path=name, findings=[err])
    else:
        result = check_source(name, text, settings, kind)
    run = finalize(
        [Target(name, kind, settings)], {name: result}, texts={name: text} if text is not None else None
    )
    _validate_settings(run.targets)

    def settings_for(path: str) -> Settings:
        return resolver.for_path(Path(path))

    if (fix or diff) and text is not None:
        outcomes = [
            o
            for o in fix_files(run.findings, settings_for, unsafe, write=False, overrides={name: text})
            if o.path == name
        ]
        fixed_text = outcomes[0].fixed if outcomes and outcomes[0].changed else text
        if diff:
            sys.stdout.write(outcomes[0].diff() if outcomes and outcomes[0].changed else "")
            return EXIT_FINDINGS if fixed_text != text else EXIT_CLEAN
        sys.stdout.write(fixed_text)
        remaining = [f for f in run.findings if not (outcomes and f in outcomes[0].applied)]
        return EXIT_CLEAN if exit_zero or not remaining else EXIT_FINDINGS
    _report(run.findings, output_format, output_file, settings_for, unsafe, [], show_fixes, statistics, quiet)
    return _internal(run) or (EXIT_CLEAN if exit_zero or not run.findings else EXIT_FINDINGS)


@app.command("rules", cls=LeanCommand)
def rules_cmd(
    output_format: Annotated[
        str, typer.Option("--output-format", help="text (default), json, or markdown (the README table).")
    ] = "text",
) -> None:
    """List every rule: code, name, fix applicability and summary."""
    from prefixlint.rules.base import all_rules

    rules = all_rules()
    if output_format == "json":
        _write(json.dumps([_rule_json(r) for r in rules], indent=2) + "\n", None)
    elif output_format == "markdown":
        from prefixlint.report.markdown import rules_table

        _write(rules_table(), None)
    elif output_format == "text":
        width = max((len(r.name) for r in rules), default=10)
        for r in rules:
            fix = r.fix_applicability.value if r.fix_applicability else "-"
            typer.echo(f"{r.code}  {r.name:<{width}}  {fix:<7}  {r.summary()}")
    else:
        raise fail(f"--output-format: unknown format {output_format!r} for `rules` (text, json, markdown)")


def _rule_json(rule: Any) -> dict[str, Any]:
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary(),
        "fix": rule.fix_applicability.value if rule.fix_applicability else None,
        "default_severity": rule.default_severity.value,
        "documentation": rule.documentation(),
        "examples": {
            "valid": [_example_json(e) for e in rule.VALID],
            "invalid": [_example_json(e) for e in rule.INVALID],
        },
    }


def _example_json(example: Any) -> dict[str, Any]:
    return {
        "path": example.path,
        "code": example.code,
        "files": example.files,
        "line": example.line,
        "fixed": example.fixed,
        "unsafe": example.unsafe,
        "note": example.note,
    }


@app.command("rule", cls=LeanCommand)
def rule_cmd(
    code: Annotated[str, typer.Argument(help="A rule code, e.g. PFX101.")],
    output_format: Annotated[str, typer.Option("--output-format", help="text (default) or json.")] = "text",
) -> None:
    """Print a rule's documentation and examples."""
    from prefixlint.rules.base import get_rule

    rule = get_rule(code)
    if rule is None:
        raise fail(f"unknown rule code {code!r} (see `prefixlint rules`)")
    if output_format == "json":
        _write(json.dumps(_rule_json(rule), indent=2) + "\n", None)
        return
    if output_format != "text":
        raise fail(f"--output-format: unknown format {output_format!r} for `rule` (text, json)")
    fix = rule.fix_applicability.value if rule.fix_applicability else "none"
    out = [
        f"# {rule.name} ({rule.code})",
        "",
        f"Fix: {fix}. Default severity: {rule.default_severity.value}.",
        "",
        rule.documentation(),
        "",
    ]
    for title, examples in (("Flagged", rule.INVALID), ("Not flagged", rule.VALID)):
        for ex in examples:
            out.append(f"## {title}: {ex.path}" + (f" ({ex.note})" if ex.note else ""))
            out.extend(["", "```", ex.code.rstrip("\n"), "```", ""])
            if ex.fixed is not None:
                out.extend(
                    [
                        f"Fixed ({'unsafe' if ex.unsafe else 'safe'} fix):",
                        "",
                        "```",
                        ex.fixed.rstrip("\n"),
                        "```",
                        "",
                    ]
                )
    _write("\n".join(out) + "\n", None)


# Sub-apps mounted under the root: (module with a typer ``app``, help). They are imported and built
# only when used (run, listed in help, completed, or suggested for a typo), so `check` skips them; one
# that fails to import is left out, as if it were not mounted.
MOUNTS: dict[str, tuple[str, str]] = {
    "engine": ("prefixlint.engine.cli", "The reference prefix-caching inference engine."),
    "bench": ("prefixlint.canary.cli", "Cache canaries and benchmarks against live endpoints."),
}


def _mounted_group(name: str) -> Any:
    """The click group of mounted sub-app ``name``, as ``app.add_typer`` would have built it."""
    import importlib

    module, help_text = MOUNTS[name]
    try:
        sub = importlib.import_module(module).app
    except Exception:
        return None
    import typer.main

    holder = typer.Typer(
        rich_markup_mode=app.rich_markup_mode,
        suggest_commands=app.suggest_commands,
        pretty_exceptions_short=app.pretty_exceptions_short,
    )
    holder.add_typer(sub, name=name, help=help_text)
    return typer.main.get_group(holder).commands[name]


_FAST_EXIT: list[bool] = []  # set when `check` finished: nothing left to clean up


def _is_process_entry() -> bool:
    """True when ``main`` runs as the program (console script or ``python -m prefixlint``)."""
    entry = sys.modules.get("__main__")
    spec = getattr(entry, "__spec__", None)
    if spec is not None and spec.name == "prefixlint.__main__":
        return True
    import os

    name = os.path.basename(getattr(entry, "__file__", None) or "")
    return name.removesuffix(".exe") in ("prefixlint", "prefixlint-script.py")


def _hard_exit(code: int) -> None:
    """Flush and leave without tearing the interpreter down (as mypy does): about 0.07 s saved.

    Only after ``check`` (its worker pool is already shut down) and only when this process is the
    command itself, never when ``main`` is called from other code.
    """
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
        logging = sys.modules.get("logging")  # never imported: no handlers to flush
        if logging is not None:
            logging.shutdown()
    except Exception:
        return  # let the normal exit report it
    os._exit(code)


def main() -> None:
    """Console-script entry point: never a traceback, exit 2 on an internal error."""
    try:
        app()
    except SystemExit as exc:
        if _FAST_EXIT and isinstance(exc.code, int) and _is_process_entry():
            _hard_exit(exc.code)
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        typer.echo(f"prefixlint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":
    main()
