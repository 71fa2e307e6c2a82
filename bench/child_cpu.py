"""CPU seconds of a command and of every process it started, workers it left to end on their own too.

``prefixlint check`` does not wait for a finished worker to exit (it would wait for the worker's heap
to be torn down), so the worker can outlive the command. ``RUSAGE_CHILDREN`` only counts processes that
were waited for, and an orphan is normally adopted and reaped by init. :func:`adopt_orphans` makes this
process their subreaper (Linux ``PR_SET_CHILD_SUBREAPER``); :func:`reap_orphans` then waits for them, so
their CPU time is counted. Wall times are taken before: a user does not wait for those exits.
"""

from __future__ import annotations

import ctypes
import os
import sys

_PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> bool:
    """Become the reaper of orphaned descendants; False where the system cannot (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def reap_orphans() -> None:
    """Wait for every child left (the descendants a finished command orphaned)."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
