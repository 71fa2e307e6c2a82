"""A ``check`` of named files forks its first worker early (see :func:`.workers.prestart`).

Pre-commit runs ``prefixlint check FILE...`` in a fresh process for every commit. Such a run spends
about 0.1 s importing the check command, finding files, reading their settings and checking rule
selectors before the worker that analyses them would be forked, and the worker then spends about
0.2 s importing libcst and the analyzer. :mod:`prefixlint.commands.check_launch` forks it as soon as
the command line is parsed, so the worker imports while this process does the rest: two cores
instead of one in turn. ``PREFIXLINT_NO_PRESTART=1`` turns it off.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def worth_prestarting(paths: Sequence[str] | None) -> bool:
    """True when the command line names files and one is a Python file with a prompt word.

    Only then is a worker sure to import libcst. A directory may be fully cached or hold no prompt
    code; the built-in words stand in for the settings, which are not read yet (a file that passes
    only by a configured sink just goes without the head start).
    """
    if not paths or "-" in paths:
        return False
    from prefixlint.lint.prefilter import PREFILTER_CASED, PREFILTER_LITERALS, _Prefilter

    words = _Prefilter.build(PREFILTER_LITERALS, PREFILTER_CASED)
    for path in paths:
        if not path.endswith((".py", ".pyi")):
            continue
        try:
            with open(path, "rb") as fh:
                if words.search(fh.read()):
                    return True
        except OSError:
            continue
    return False


def warm() -> None:
    """What every Python check imports first: the checker, the analyzer (libcst), rules and plugins."""
    from prefixlint.lint.pool import fewer_gc_passes

    with fewer_gc_passes():  # as in a worker: the collector would scan every new class again and again
        import prefixlint.analysis.python  # noqa: F401
        from prefixlint.plugins import BUILTIN
        from prefixlint.rules.base import load_builtin_rules

        load_builtin_rules()
        for name in BUILTIN:
            __import__(f"prefixlint.plugins.{name}")


def maybe_prestart(paths: Sequence[str] | None) -> None:
    """Fork the first worker now when :func:`worth_prestarting` says so."""
    if os.environ.get("PREFIXLINT_NO_PRESTART") or not worth_prestarting(paths):
        return
    from prefixlint.lint.workers import prestart

    prestart(warm)
