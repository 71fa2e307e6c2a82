"""One literal fixture per rule (``tests/fixtures/rules/<CODE>.py`` or a folder ``<CODE>/``), as ruff keeps.

Each fixture holds cases that must be reported (a ``# error`` comment on the line the finding is
reported on) and near misses that must not (``# ok``); ``# missed:`` marks a case the analyzer does
not find yet, with the reason. The fixture is checked with only its rule selected (all rules for
PFX900, which reports suppressions of the others), through the same pipeline as ``prefixlint check``,
and every finding, whole, is compared with a snapshot (``__snapshots__/test_rule_fixtures.ambr``).
After a deliberate change: ``pytest tests/test_rule_fixtures.py --snapshot-update``, then read the diff.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from prefixlint.lint.config import load_settings_file
from prefixlint.model.settings import Settings
from prefixlint.rules.base import all_rules, get_rule
from prefixlint.testing.rules import check_files, render_findings

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
CODES = sorted(p.name.removesuffix(".py") for p in FIXTURES.iterdir() if p.name.startswith("PFX"))
MARK = re.compile(r"#\s*(error|ok)\b")
# Rules whose segments the analysis is still learning to produce (issue 10): the fixture is skipped,
# with the reason, only while the analysis gives no segment the rule matches.
PENDING_ANALYSIS = {
    "PFX111": "the analysis does not fill Segment.granularity (a date) yet",
    "PFX120": "the analysis does not give Timing.UNKNOWN (an attribute read) yet",
}


def _analysis_gives(rule: Any, files: list[Path], settings: Settings) -> bool:
    """True when the analysis of the fixture gives a segment that ``rule`` matches."""
    from prefixlint.lint.checker import analyze

    for path in files:
        if path.suffix == ".py":
            layouts = analyze(str(path.resolve()), path.read_text("utf-8"), "python", settings).layouts
            if any(rule().matches(s) for layout in layouts for s in layout.segments if s.dynamic):
                return True
    return False


def test_every_rule_has_a_fixture() -> None:
    builtin = [r.code for r in all_rules() if r.__module__.startswith("prefixlint.rules.")]
    assert sorted(builtin) == CODES


def _copy(code: str, dest: Path) -> list[Path]:
    src = FIXTURES / code
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True)
    else:
        shutil.copy(FIXTURES / f"{code}.py", dest / f"{code}.py")
    return sorted(p for p in dest.rglob("*") if p.is_file())


@pytest.mark.parametrize("code", CODES)
def test_fixture(code: str, tmp_path: Path, snapshot: Any) -> None:
    rule = get_rule(code)
    assert rule is not None
    files = _copy(code, tmp_path)
    rules = None if code == "PFX900" else [rule]
    config = tmp_path / "pyproject.toml"  # a folder fixture may carry its config
    settings = load_settings_file(config) if config.is_file() else Settings()
    findings = check_files(files, tmp_path, settings, rules)
    findings = [f for f in findings if f.code == code]
    if not findings and code in PENDING_ANALYSIS and not _analysis_gives(rule, files, settings):
        pytest.skip(PENDING_ANALYSIS[code])
    assert findings, f"{code}: its fixture gives no finding"
    reported = {(Path(f.location.path).resolve(), f.location.line) for f in findings}
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = MARK.search(line)
            if m and m.group(1) == "error":
                assert (path.resolve(), n) in reported, f"{path.name}:{n}: expected {code} here"
            elif m:
                assert (path.resolve(), n) not in reported, f"{path.name}:{n}: {code} where none belongs"
    assert render_findings(findings, tmp_path) == snapshot
