"""A progress bar on stderr for long runs (rich), shown only to a person at a terminal.

It is drawn when stderr is a terminal, the run is not ``--quiet`` and there are at least
:data:`MIN_FILES` files; it disappears when the run ends, so the report reads as without it. rich is
imported only then. The bar redraws from the callback (``auto_refresh=False``): no thread is started,
so files are still checked in forked children (see :mod:`prefixlint.lint.workers`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

MIN_FILES = 200
_REDRAW_S = 0.1


@contextmanager
def progress_bar(total: int, stream: TextIO | None = None, force: bool = False) -> Iterator[Any]:
    """Yields ``advance(result)``, or None when no bar is shown (short run, not a terminal)."""
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    if not force and (total < MIN_FILES or not (isatty and isatty())):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=stream, force_terminal=True if force else None, stderr=stream is sys.stderr)
    bar = Progress(
        TextColumn("Checking"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        auto_refresh=False,
    )
    task = bar.add_task("check", total=total)
    last = [0.0]

    def advance(_result: object = None) -> None:
        bar.advance(task)
        now = time.monotonic()
        if now - last[0] >= _REDRAW_S:
            last[0] = now
            bar.refresh()

    with bar:
        bar.refresh()
        yield advance
