"""Run a ``check`` whose command line :mod:`.lean` has read: its worker is forked first.

The worker imports libcst and the analyzer (most of a one-file check's start-up) while this process
imports the check command and reads the settings: see :mod:`prefixlint.lint.prestart`.
"""

from __future__ import annotations

from typing import Any


def launch_check(kwargs: dict[str, Any]) -> int:
    """``run_check(**kwargs)``, with the first worker forked before it is imported."""
    from prefixlint.lint.prestart import maybe_prestart
    from prefixlint.lint.workers import discard_prestarted

    maybe_prestart(kwargs["paths"])
    try:
        from prefixlint.commands.check_run import run_check

        return run_check(**kwargs)
    finally:
        discard_prestarted()  # a check that stopped before analysing (a configuration error)
