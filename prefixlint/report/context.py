"""What every reporter needs besides the findings, and how paths are shown."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prefixlint.model.findings import Finding


@dataclass
class ReportContext:
    """What a reporter needs besides the findings."""

    fixable: set[int] = field(default_factory=set)  # indexes of findings fixable in this run
    hidden_unsafe: int = 0  # fixes that --unsafe-fixes would enable
    fixed: int = 0  # findings fixed by --fix in this run
    show_fixes: bool = False
    applied: Sequence[Finding] = ()
    color: bool = False
    quiet: bool = False  # findings only, no summary
    nothing_checked: bool = False  # no file given was read by any analyzer
    sources: Mapping[str, str] = field(default_factory=dict)  # texts not on disk (stdin), by path


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it is below it (ruff prints relative paths)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
