"""The public development set: each case is a small project, positive or negative."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prefixlint.lint.checker import check_source, file_kind
from prefixlint.lint.config import settings_for

DEVSET = Path(__file__).resolve().parents[2] / "shared/eval/linter-devset"
LABELS = json.loads((DEVSET / "labels.json").read_text()) if (DEVSET / "labels.json").is_file() else {}


@pytest.mark.skipif(not LABELS, reason="development set not present")
@pytest.mark.parametrize("case", sorted(LABELS))
def test_devset_case(case: str, tmp_path: Path) -> None:
    root = tmp_path / case
    shutil.copytree(DEVSET / case, root)
    settings = settings_for(root)
    findings = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if file_kind(str(path), settings) is None:
            continue
        result = check_source(str(path), None, settings)
        assert result.internal_error is None, result.internal_error
        findings.extend(result.findings)
    described = [f"{f.location}: {f.code} {f.message}" for f in findings]
    if LABELS[case]["label"] == "positive":
        assert findings, f"{case}: expected a finding ({LABELS[case]['why']})"
        assert not any(f.code == "PFX001" for f in findings), described
    else:
        assert not findings, described
