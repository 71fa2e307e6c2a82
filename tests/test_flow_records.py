"""Attributes of objects built by a project class's constructor (``analysis/python/records.py``),
with the class imported as a module attribute (``models.Hit(...)``): fields inherited from a base
dataclass, an ``__init__`` inherited from a base class, and a pydantic model given positional
arguments (which field each one sets is not known: no kind is claimed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import needs_analyzer
from tests.test_flow_expressions import found, row

pytestmark = needs_analyzer

MODELS = """from dataclasses import dataclass
from pydantic import BaseModel


@dataclass
class Base:
    sid: str


@dataclass
class Hit(Base):
    took: object


class Model(BaseModel):
    sid: str
    took: object


class Plain:
    def __init__(self, sid, took):
        self.sid = sid
        self.took = took


class Child(Plain):
    pass
"""


def read(root: Path, build: str, attr: str) -> list[tuple]:
    body = f"""
        from desk import models
        def ask(q, session_id):
            hit = {build}
            system = f"Ref {{hit.{attr}}}\\n" + RULES
            return @SEND@
        """
    files = {"desk/__init__.py": "", "desk/models.py": MODELS}
    got = found(root, body, files)
    return [(f["code"], f["snippet"], f["location"]["row"], f["location"]["column"]) for f in got]


@pytest.mark.parametrize("cls", ["Hit", "Child"])
def test_each_attribute_is_the_argument_bound_to_it(tmp_path: Path, cls: str) -> None:
    build = f"models.{cls}(session_id, datetime.now())"
    col = len(f"    hit = models.{cls}(") + 1
    assert read(tmp_path / "sid", build, "sid") == [("PFX102", "session_id", row(4), col)]
    col += len("session_id, ")
    assert read(tmp_path / "took", build, "took") == [("PFX101", "datetime.now()", row(4), col)]


def test_a_model_given_positional_arguments_claims_no_kind(tmp_path: Path) -> None:
    assert read(tmp_path / "pos", "models.Model(session_id, datetime.now())", "sid") == []
    by_name = read(tmp_path / "kw", "models.Model(sid=session_id, took=datetime.now())", "took")
    assert by_name == [("PFX101", "datetime.now()", row(4), 45)]
