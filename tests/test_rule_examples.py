"""Every registered rule's VALID and INVALID examples, run through ``prefixlint check``'s own pipeline.

An invalid example must give a finding of its rule's code, on its line and column range when the
example gives them, and the fixed text it names through the real fixer, which a second round leaves
alone. The whole of every finding (code, range, severity, message, impact, chain, fix and its diff)
is compared with a snapshot (``__snapshots__/test_rule_examples.ambr``); after a deliberate change,
review it with ``pytest tests/test_rule_examples.py --snapshot-update`` and ``git diff``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from prefixlint.model.edits import Applicability
from prefixlint.rules.base import Example, Rule, all_rules
from prefixlint.testing.rules import apply_rule_fixes, check_example, render_findings, write_example

RULES = all_rules()


def _cases(kind: str) -> list:
    out = []
    for rule in RULES:
        for i, ex in enumerate(getattr(rule, kind)):
            out.append(pytest.param(rule, ex, id=f"{rule.code}-{kind.lower()}-{i}"))
    return out


LAYOUT_RULES = [
    "PFX101",
    "PFX102",
    "PFX103",
    "PFX104",
    "PFX105",
    "PFX106",
    "PFX107",
    "PFX108",
    "PFX109",
    "PFX111",
    "PFX120",
    "PFX201",
    "PFX301",
    "PFX401",
    "PFX402",
    "PFX403",
    "PFX501",
    "PFX502",
    "PFX503",
    "PFX504",
]

_SAFETY = {
    Applicability.SAFE: "The fix is safe",
    Applicability.UNSAFE: "The fix is unsafe",
    Applicability.DISPLAY_ONLY: "The fix is shown, not applied",
    None: "There is no automatic fix",
}


def test_every_rule_has_examples_and_docs() -> None:
    codes = {r.code for r in RULES}
    for code in LAYOUT_RULES:
        assert code in codes
    for rule in RULES:
        if rule.code in LAYOUT_RULES:
            assert rule.INVALID and rule.VALID, rule.code
        assert rule.summary() and "\n\n" in rule.documentation(), rule.code
        assert rule.name == rule.name.lower() and " " not in rule.name


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_says_why_its_fix_is_safe_or_unsafe(rule: type[Rule]) -> None:
    doc = rule.documentation()
    assert "Fix safety:" in doc, f"{rule.code}: add a 'Fix safety:' paragraph to the docstring"
    safety = doc.split("Fix safety:", 1)[1].strip()
    assert safety.startswith(_SAFETY[rule.fix_applicability]), (rule.code, safety[:60])
    assert len(safety.split(".")[0].split()) > 5 or len(safety.split(".")) > 2, "say why"


# Rules whose segments the analysis is still learning to produce (issue 10): an invalid example of
# one of these is skipped, with the reason, only while the analysis of the example gives no segment
# the rule matches; once it does, the example must fire like any other.
PENDING_ANALYSIS = {
    "PFX111": "the analysis does not fill Segment.granularity (a date) yet",
    "PFX120": "the analysis does not give Timing.UNKNOWN (an attribute read) yet",
}


def analysis_gives(rule: type[Rule], example: Example, root: Path) -> bool:
    """True when the analysis of the example's main file gives a segment that ``rule`` matches."""
    from prefixlint.lint.checker import analyze
    from prefixlint.testing.rules import example_settings

    main = root / example.path
    settings = example_settings(example, root)
    analysis = analyze(str(main.resolve()), main.read_text("utf-8"), "python", settings)
    matches = rule().matches  # type: ignore[attr-defined]
    return any(matches(s) for layout in analysis.layouts for s in layout.segments if s.dynamic)


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_fires(rule: type[Rule], example: Example, tmp_path: Path, snapshot: Any) -> None:
    findings = [f for f in check_example(example, tmp_path) if f.code == rule.code]
    if not findings and rule.code in PENDING_ANALYSIS and not analysis_gives(rule, example, tmp_path):
        pytest.skip(PENDING_ANALYSIS[rule.code])
    assert findings, f"{rule.code} did not fire on:\n{example.code}"
    main = (tmp_path / example.path).resolve()
    here = [f for f in findings if Path(f.location.path).resolve() == main]
    if example.line is not None:
        assert example.line in [f.location.line for f in here], f"{rule.code}: expected line {example.line}"
    at = [f for f in here if example.line is None or f.location.line == example.line]
    if example.col is not None:
        assert example.col in [f.location.col + 1 for f in at], f"{rule.code}: expected column {example.col}"
    if example.end_line is not None or example.end_col is not None:
        ends = [(f.location.end_line, (f.location.end_col or 0) + 1) for f in at]
        assert (example.end_line or example.line, example.end_col) in ends, (rule.code, ends)
    for f in findings:
        assert f.code == rule.code and f.rule_name == rule.name and f.message
        assert f.impact is None or f.impact.tokens_lost >= 0
        # An unsafe fix may be marked safe where the analysis knows more, when its docs say when.
        doc = " ".join(rule.documentation().split())
        safer = {Applicability.SAFE} if "marked safe when" in doc else set()
        assert f.fix is None or f.fix.applicability in {rule.fix_applicability, *safer}, rule.code
    assert render_findings(findings, tmp_path) == snapshot
    if example.fixed is not None:
        fixed = apply_rule_fixes(findings, main, unsafe=example.unsafe)
        assert fixed == example.fixed
        cst.parse_module(fixed)
        # a second round of the fix changes nothing
        again_root = tmp_path / "again"
        again = Example(
            code=fixed, path=example.path, files=example.files, provider=example.provider, model=example.model
        )
        write_example(again, again_root)
        second = [f for f in check_example(again, again_root) if f.code == rule.code]
        assert apply_rule_fixes(second, again_root / example.path, unsafe=example.unsafe) == fixed


@pytest.mark.parametrize(("rule", "example"), _cases("VALID"))
def test_valid_example_is_quiet(rule: type[Rule], example: Example, tmp_path: Path) -> None:
    findings = [f for f in check_example(example, tmp_path) if f.code == rule.code]
    assert not findings, [f"{f.location}: {f.message}" for f in findings]
