"""What every command shares: exit codes, the usage-error exit, and where a report is written."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

# Set when a command finished and left nothing to clean up (its worker pool is shut down): the
# entry point may then leave without tearing the interpreter down.
FAST_EXIT: list[bool] = []


def fail(message: str) -> typer.Exit:
    """Print ``message`` to stderr and return the exit-2 exception to raise."""
    typer.echo(f"prefixlint: error: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def write_output(text: str, output_file: Path | None) -> None:
    """Write a report to ``output_file``, or to stdout when it is None."""
    if output_file is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        output_file.write_text(text, encoding="utf-8")
