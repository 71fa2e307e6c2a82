"""Apply the fixes findings carry, ruff's way.

Only fixes whose applicability is allowed are applied (safe with ``--fix``, unsafe too with
``--unsafe-fixes``, display-only never), and only for codes allowed by ``fixable``/``unfixable``. A
fix whose edits overlap an already accepted fix waits for the next round. The fixed text must still
parse (libcst for Python, jinja2 for templates), otherwise the file is left untouched and the
reason reported. The CLI re-lints and repeats until nothing changes, at most ``MAX_ROUNDS`` times.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prefixlint.model.edits import Applicability, Edit, apply_edits
from prefixlint.model.findings import Finding
from prefixlint.model.settings import Settings
from prefixlint.model.source_text import split_lines, write_source

MAX_ROUNDS = 4


@dataclass
class FixOutcome:
    """What fixing one file did."""

    path: str
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.fixed != self.original

    def diff(self) -> str:
        """A unified diff from the original to the fixed text (paths relative to the working directory)."""
        shown = Path(os.path.relpath(self.path)).as_posix() if os.path.isabs(self.path) else self.path
        if shown.startswith("../"):
            shown = self.path
        out: list[str] = []
        for line in difflib.unified_diff(
            split_lines(self.original, keepends=True),
            split_lines(self.fixed, keepends=True),
            fromfile=f"a/{shown}".replace("//", "/"),
            tofile=f"b/{shown}".replace("//", "/"),
        ):
            out.append(line)
            if not line.endswith("\n"):  # the last line of either side: marked where it stands
                out.append("\n\\ No newline at end of file\n")
        return "".join(out)


def fix_target(f: Finding) -> str | None:
    """The file ``f``'s fix edits (it may differ from the file the finding was reported for)."""
    if f.fix is None:
        return None
    return f.fix.path or f.location.path


def is_fix_allowed(f: Finding, settings: Settings, unsafe: bool) -> bool:
    """True when ``f`` has a fix that this run may apply."""
    from prefixlint.rules.selection import selector_matches

    if f.fix is None or not f.fix.edits:
        return False
    if f.fix.applicability is Applicability.DISPLAY_ONLY:
        return False
    if f.fix.applicability is Applicability.UNSAFE and not (unsafe or settings.unsafe_fixes):
        return False
    if not any(selector_matches(s, f.code) for s in settings.fixable):
        return False
    return not any(selector_matches(s, f.code) for s in settings.unfixable)


def verify_text(path: str, text: str) -> str | None:
    """None when ``text`` parses as the kind of file ``path`` is, else the parser's message."""
    if path.endswith((".py", ".pyi")):
        import libcst

        try:
            libcst.parse_module(text)
        except Exception as exc:
            return (
                f"fixed code does not parse: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            )
        return None
    if path.endswith((".j2", ".jinja", ".jinja2", ".prompty", ".prompt", ".jinja.md", ".html")):
        import jinja2

        from prefixlint.analysis.templates.jinja_parse import ENV  # the analyzer's extensions

        try:
            ENV.parse(text)
        except jinja2.TemplateSyntaxError as exc:
            return f"fixed template does not parse: {exc.message} (line {exc.lineno})"
    return None


def fix_text(path: str, text: str, findings: Iterable[Finding]) -> FixOutcome:
    """Apply the non-overlapping fixes of ``findings`` to ``text`` and verify the result parses."""
    accepted: list[Edit] = []
    applied: list[Finding] = []
    for f in sorted(findings, key=lambda f: min((e.start for e in f.fix.edits), default=0) if f.fix else 0):
        assert f.fix is not None
        edits = f.fix.edits
        if any(e.start < 0 or e.end > len(text) or e.start > e.end for e in edits):
            continue
        if any(_overlaps(e, a) for e in edits for a in accepted):
            continue  # applied in a later round, after re-linting
        try:
            apply_edits(text, [*accepted, *edits])
        except ValueError:
            continue
        accepted.extend(edits)
        applied.append(f)
    outcome = FixOutcome(
        path=path, original=text, fixed=apply_edits(text, accepted) if accepted else text, applied=applied
    )
    if outcome.fixed != text and verify_text(path, text) is None:
        error = verify_text(path, outcome.fixed)
        if error is not None:
            outcome.error = error
            outcome.fixed = text
            outcome.applied = []
    return outcome


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.start == a.end == b.start == b.end:
        return True  # two insertions at one point: order would be ambiguous
    return a.start < b.end and b.start < a.end


def plan(
    findings: Iterable[Finding], settings_for: Callable[[str], Settings], unsafe: bool
) -> dict[str, list[Finding]]:
    """Allowed fixable findings grouped by the file their fix edits."""
    out: dict[str, list[Finding]] = {}
    for f in findings:
        target = fix_target(f)
        if target is None or not is_fix_allowed(f, settings_for(target), unsafe):
            continue
        out.setdefault(target, []).append(f)
    return out


def fix_files(
    findings: Iterable[Finding],
    settings_for: Callable[[str], Settings],
    unsafe: bool,
    write: bool = True,
    overrides: dict[str, str] | None = None,
) -> list[FixOutcome]:
    """Fix every file named by an allowed fix; ``write=False`` computes the result only (``--diff``).

    ``overrides`` maps a path to its text when it does not come from disk (standard input).
    """
    outcomes: list[FixOutcome] = []
    for path, group in sorted(plan(findings, settings_for, unsafe).items()):
        if overrides and path in overrides:
            text: str | None = overrides[path]
        else:
            text = _read(path)
        if text is None:
            outcomes.append(FixOutcome(path, "", "", error="cannot read file"))
            continue
        outcome = fix_text(path, text, group)
        if write and outcome.changed and not (overrides and path in overrides):
            try:
                write_source(path, outcome.fixed)
            except (OSError, UnicodeError) as exc:
                outcome.error = f"cannot write: {exc}"
                outcome.fixed = outcome.original
                outcome.applied = []
        outcomes.append(outcome)
    return outcomes


def _read(path: str) -> str | None:
    from prefixlint.model.source_text import decode_source

    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return decode_source(path, data)[0]
