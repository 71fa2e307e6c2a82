"""How often a time value changes (``analysis/python/kinds.py``, ``timegrain.py``): formats given as
constants, ``format()``, ``int``/``round`` of ``time.time()``, ``isoformat(timespec=...)``,
``replace(...=0)``, ISO prefixes, fields, ``bool`` and comparisons. A day or a year is PFX111 (a few
values), a flag computed from one too; finer than that is PFX101 (a miss on every request).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import needs_analyzer
from tests.test_flow_expressions import found, row

pytestmark = needs_analyzer

BODY = """
    import time
    from datetime import date
    DAY = "%Y-%m-%d"
    SPEC = "hours"
    def ask(q):
        system = f"Now {EXPR}\\n" + RULES
        return @SEND@
    """
CASES = [
    # (expression, code, granularity, cardinality, snippet or None for the whole expression)
    ("datetime.now().strftime(DAY)", "PFX111", "day", "few", None),
    ('format(datetime.now(), "%Y-%m-%d")', "PFX111", "day", "few", None),
    ("format(datetime.now(), DAY)", "PFX111", "day", "few", None),
    ("int(time.time())", "PFX101", "second", "per_request", None),
    ("round(time.time())", "PFX101", "second", "per_request", None),
    ("int(time.time(), 10)", "PFX101", "sub_second", "per_request", "time.time()"),
    ('datetime.now().isoformat(timespec="minutes")', "PFX101", "minute", "per_request", None),
    ("datetime.now().isoformat(timespec=SPEC)", "PFX101", "hour", "per_request", None),
    ("datetime.now().replace(microsecond=0)", "PFX101", "second", "per_request", "datetime.now()"),
    ("datetime.now().replace(second=0, microsecond=0)", "PFX101", "minute", "per_request", "datetime.now()"),
    ("datetime.now().isoformat()[:10]", "PFX111", "day", "few", "datetime.now().isoformat()"),
    ("datetime.now().year", "PFX111", "year", "few", None),
    ("bool(datetime.now())", "PFX101", None, "few", None),
    # a flag changes at most as often as what it tests: a weekend flag at most once a day (PFX111,
    # named after the date it reads); a flag of a finer value claims only its few values
    ("datetime.now().weekday() > 4", "PFX111", "day", "few", "datetime.now().weekday()"),
    ("bool(date.today().weekday() >= 5)", "PFX111", "day", "few", "date.today().weekday()"),
    ("not date.today().isoformat().startswith(DAY)", "PFX111", "day", "few", "date.today().isoformat()"),
    ("datetime.now().hour > 12", "PFX101", None, "few", None),
    ("date.today().ctime()", "PFX111", "day", "few", None),  # a finer view of a date is still a date
    ("datetime.now().ctime()", "PFX101", "second", "per_request", None),
    ("datetime.now().date().isoformat()", "PFX111", "day", "few", None),
]


@pytest.mark.parametrize(("expr", "code", "grain", "card", "snippet"), CASES, ids=[c[0] for c in CASES])
def test_the_grain_of_a_time_value(
    tmp_path: Path, expr: str, code: str, grain: str | None, card: str, snippet: str | None
) -> None:
    got = found(tmp_path, BODY.replace("EXPR", expr))
    assert len(got) == 1, got
    f = got[0]
    assert (f["code"], f["location"]["row"]) == (code, row(7))
    assert (f["value"]["kind"], f["value"]["granularity"], f["value"]["cardinality"]) == (
        "timestamp",
        grain,
        card,
    )
    assert f["snippet"] == (snippet or expr)
