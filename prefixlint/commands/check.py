"""``prefixlint check``'s typer command: its options, help and usage errors; the work is in :mod:`.check_run`.

A plain ``prefixlint check ...`` command line does not come here: :mod:`.lean` parses it before typer
is imported, from a table that tests keep equal to this signature. This command serves ``--help``,
command lines the fast path leaves to typer (errors and unusual values), and in-process callers.

Exit codes: 0 clean (or everything fixed, or only informational findings remain: fewer than
``min-impact-tokens`` tokens at stake), 1 findings remain (or ``--diff`` would change files),
2 usage, configuration or internal error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from prefixlint.commands.check_run import CHECK_FORMATS, CheckOptions, run_check

__all__ = ["CHECK_FORMATS", "CheckOptions", "check"]


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
    payload_shape: Annotated[
        str | None,
        typer.Option(
            "--payload-shape",
            help="Request shape of JSON payload files: auto, chat, responses or messages.",
        ),
    ] = None,
    min_impact_tokens: Annotated[
        int | None,
        typer.Option(
            "--min-impact-tokens",
            min=0,
            help="Tokens at stake below which a finding is informational: shown, but exit 0 "
            "(overrides `min-impact-tokens`; 0: every finding fails the run).",
        ),
    ] = None,
) -> None:
    """Lint files for prompt layouts that defeat the provider's prefix cache."""
    raise typer.Exit(
        run_check(
            paths=paths,
            output_format=output_format,
            output_file=output_file,
            config=config,
            select=select,
            extend_select=extend_select,
            ignore=ignore,
            provider=provider,
            model=model,
            fix=fix,
            unsafe_fixes=unsafe_fixes,
            diff=diff,
            show_fixes=show_fixes,
            add_ignore=add_ignore,
            changed_since=changed_since,
            statistics=statistics,
            exit_zero=exit_zero,
            no_cache=no_cache,
            cache_dir=cache_dir,
            jobs=jobs,
            stdin_filename=stdin_filename,
            force_exclude=force_exclude,
            no_prefilter=no_prefilter,
            quiet=quiet,
            payload_shape=payload_shape,
            min_impact_tokens=min_impact_tokens,
        )
    )
