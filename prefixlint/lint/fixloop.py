"""Fix until nothing is left to fix, as ruff does: one ``--fix`` (or ``--diff``) call converges.

A round applies every allowed, non-overlapping fix (see :mod:`.fixer`), then lints again the files it
changed and the files that depend on them. It stops when a round fixes nothing, when a file's text
comes back to one it had before (two fixes undoing each other), or after :data:`MAX_ROUNDS`.

``write=False`` (``--diff``, standard input) changes nothing on disk: the fixed texts stand in for
the files (see :func:`prefixlint.model.source_text.source_overlay`) while the next round lints them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prefixlint.lint.fixer import FixOutcome, fix_files
from prefixlint.model.findings import Finding
from prefixlint.model.settings import Settings

MAX_ROUNDS = 100  # ruff's limit

Relint = Callable[[Any, set[str], dict[str, str]], Any]  # (last run, changed paths, stand-ins) -> run


@dataclass
class Converged:
    """What the rounds did: the last lint, every fix applied, and each changed file's two texts."""

    run: Any
    applied: list[Finding] = field(default_factory=list)
    originals: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, why a fix was not applied)
    unstable: list[str] = field(default_factory=list)  # files whose fixes did not converge
    rounds: int = 0

    def outcomes(self) -> list[FixOutcome]:
        """One outcome per changed file, from its original text to its final one (for ``--diff``)."""
        return [
            FixOutcome(path, self.originals[path], self.texts[path], self._applied_to(path))
            for path in sorted(self.originals)
            if self.texts[path] != self.originals[path]
        ]

    def _applied_to(self, path: str) -> list[Finding]:
        return [f for f in self.applied if f.fix is not None and (f.fix.path or f.location.path) == path]


def fix_until_stable(
    run: Any,
    relint: Relint,
    settings_for: Callable[[str], Settings],
    unsafe: bool,
    *,
    write: bool,
    stand_ins: Mapping[str, str] | None = None,
    max_rounds: int = MAX_ROUNDS,
) -> Converged:
    """Fix ``run``'s findings round after round; ``relint(last run, changed paths, stand-ins)`` lints again.

    ``stand_ins`` are texts of files that are not on disk (standard input); they are never written.
    """
    pending: dict[str, str] = dict(stand_ins or {})  # texts not (or not yet) on disk
    never_written = set(pending)
    out = Converged(run)
    seen: dict[str, set[str]] = {}
    changed: dict[str, FixOutcome] = {}
    for _ in range(max_rounds):
        outcomes = fix_files(out.run.findings, settings_for, unsafe, write=False, overrides=pending)
        changed: dict[str, FixOutcome] = {}
        for o in outcomes:
            if o.error:
                out.errors.append((o.path, o.error))
                continue
            if not o.changed:
                continue
            history = seen.setdefault(o.path, {o.original})
            if o.fixed in history:  # back to an earlier text: the fixes undo each other
                if o.path not in out.unstable:
                    out.unstable.append(o.path)
                continue
            history.add(o.fixed)
            changed[o.path] = o
        if not changed:
            return out
        for path, o in changed.items():
            if write and path not in never_written:
                error = _write(path, o.fixed)
                if error is not None:
                    out.errors.append((path, error))
                    continue
            else:
                pending[path] = o.fixed
            out.originals.setdefault(path, o.original)
            out.texts[path] = o.fixed
            out.applied.extend(o.applied)
        out.rounds += 1
        out.run = relint(out.run, set(changed), dict(pending))
    out.unstable.extend(p for p in changed if p not in out.unstable)  # still changing after the last round
    return out


def _write(path: str, text: str) -> str | None:
    from prefixlint.model.source_text import write_source

    try:
        write_source(path, text)
    except (OSError, UnicodeError) as exc:
        return f"cannot write: {exc}"
    return None
