"""Fields of a dataclass given as a typed parameter whose class is imported (``analysis/python/
evaluate.py``, ``_field``): a ``default_factory`` the catalog knows is that source, made per object;
another factory or a ``None`` default leaves only the field's name to tell; a static default is text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import needs_analyzer
from tests.test_flow_expressions import found

pytestmark = needs_analyzer

CTX = """from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class Ctx:
    stamp: datetime = field(default_factory=datetime.now)
    session_id: str = field(default_factory=new_id)
    user_id: str = field(default=None)
    region: str = field(default="eu")
    note: str = None
"""
BODY = """
    from desk.ctx import Ctx
    def ask(q, ctx: Ctx):
        system = f"Ref {ctx.ATTR}\\n" + RULES
        return @SEND@
    """


@pytest.mark.parametrize(
    ("attr", "expected"),
    [
        ("stamp", [("PFX101", 7, 45, "timestamp", "stamp = field(default_factory=datetime.now)")]),
        ("session_id", [("PFX102", 8, 23, "identifier", "session_id")]),
        ("user_id", [("PFX104", 9, 20, "user_identity", "user_id")]),
        ("region", []),
        ("note", []),
    ],
)
def test_a_field_of_an_imported_dataclass(tmp_path: Path, attr: str, expected: list[tuple]) -> None:
    files = {"desk/__init__.py": "", "desk/ctx.py": CTX}
    got = found(tmp_path, BODY.replace("ATTR", attr), files)
    assert [
        (f["code"], f["location"]["row"], f["location"]["column"], f["value"]["kind"], f["snippet"])
        for f in got
    ] == expected
    assert all(Path(f["filename"]).as_posix() == "desk/ctx.py" for f in got)
    assert all(f["value"]["timing"] == "request" for f in got)
