"""Every registered rule's VALID and INVALID examples, run through analysis and the rules."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from prefixlint.rules.base import Example, Rule, all_rules
from prefixlint.testing.rules import apply_rule_fixes, check_example, write_example

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


def test_every_rule_has_examples_and_docs() -> None:
    codes = {r.code for r in RULES}
    for code in LAYOUT_RULES:
        assert code in codes
    for rule in RULES:
        if rule.code in LAYOUT_RULES:
            assert rule.INVALID and rule.VALID, rule.code
        assert rule.summary() and "\n\n" in rule.documentation(), rule.code
        assert rule.name == rule.name.lower() and " " not in rule.name


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_fires(rule: type[Rule], example: Example, tmp_path: Path) -> None:
    findings = [f for f in check_example(example, tmp_path) if f.code == rule.code]
    assert findings, f"{rule.code} did not fire on:\n{example.code}"
    main = (tmp_path / example.path).resolve()
    if example.line is not None:
        lines = [f.location.line for f in findings if Path(f.location.path).resolve() == main]
        assert example.line in lines, f"{rule.code} fired at {lines}, expected line {example.line}"
    for f in findings:
        assert f.impact is None or f.impact.tokens_lost >= 0
        assert f.message
    if example.fixed is not None:
        fixed = apply_rule_fixes(findings, main, unsafe=example.unsafe)
        assert fixed == example.fixed
        cst.parse_module(fixed)
        # a second run of the fix changes nothing
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
