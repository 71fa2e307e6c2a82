"""bench/findings_diff.py: a finding gained or lost is reported; the order of findings is not a change."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "bench" / "findings_diff.py"
_spec = importlib.util.spec_from_file_location("findings_diff", _PATH)
assert _spec is not None and _spec.loader is not None
findings_diff = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(findings_diff)

A = {"code": "PFX101", "filename": "a.py", "location": {"row": 3, "column": 1}}
B = {"code": "PFX109", "filename": "b.py", "location": {"row": 9, "column": 4}}


def test_same_findings_in_another_order_are_no_difference() -> None:
    assert findings_diff.differences(json.dumps([A, B]), json.dumps([B, A])) == ([], [])


def test_a_lost_and_a_gained_finding_are_both_reported() -> None:
    gone, new = findings_diff.differences(json.dumps([A]), json.dumps([B]))
    assert [json.loads(g)["code"] for g in gone] == ["PFX101"]
    assert [json.loads(n)["code"] for n in new] == ["PFX109"]


def test_a_report_that_is_not_json_differs_from_one_that_is() -> None:
    gone, new = findings_diff.differences("Traceback ...", json.dumps([A]))
    assert gone and new
