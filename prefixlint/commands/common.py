"""What every command shares: exit codes, the usage-error exit, colour, and where a report is written.

Nothing here imports typer at module level: ``check``'s fast path (see :mod:`.lean`) uses it too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def fail(message: str) -> Any:
    """Print ``message`` to stderr and return the exit-2 exception to raise (``typer.Exit``)."""
    import typer

    print(f"prefixlint: error: {message}", file=sys.stderr)
    return typer.Exit(EXIT_ERROR)


def write_output(text: str, output_file: Path | None) -> None:
    """Write a report to ``output_file``, or to stdout when it is None."""
    if output_file is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        output_file.write_text(text, encoding="utf-8")


def use_color(stream: TextIO, environ: dict[str, str] | None = None) -> bool:
    """ANSI colours on ``stream``: ``NO_COLOR`` (any non-empty value) turns them off, ``FORCE_COLOR``
    on, otherwise only a terminal gets them (https://no-color.org, as ruff does)."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR") or env.get("CLICOLOR_FORCE"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
