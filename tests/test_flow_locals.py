"""A local built over several statements (``analysis/python/resolve.py``): one-line ``if`` bodies,
``elif``, ``while``, ``try``/``except``/``else``/``finally``, loops over ``enumerate``/``zip`` and
annotated assignments. A part added under a branch is only maybe there (conditional); the static text
before the value is what a cache can keep.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import needs_analyzer
from tests.test_flow_expressions import found, prefix_tokens, row

pytestmark = needs_analyzer

CASES = {
    "one-line-if": (
        """
        def ask(q, verbose):
            system = "Intro.\\n"
            if verbose: system += f"Now: {datetime.now()}\\n"
            system += RULES
            return @SEND@
        """,
        (4, 35),
        True,
        5,
    ),
    "elif": (
        """
        def ask(q, mode):
            system = "Intro.\\n"
            if mode == "a":
                system += "A.\\n"
            elif mode == "b":
                system += f"Now: {datetime.now()}\\n"
            system += RULES
            return @SEND@
        """,
        (7, 27),
        True,
        7,
    ),
    "while": (
        """
        def ask(q):
            system = "Intro.\\n"
            while not system.endswith("x"):
                system += f"Now: {datetime.now()}\\n"
            system += RULES
            return @SEND@
        """,
        (5, 27),
        True,
        5,
    ),
    "except": (
        """
        def ask(q):
            try:
                system = "Intro.\\n"
            except ValueError:
                system = f"Now: {datetime.now()}\\n"
            else:
                system += "ok"
            finally:
                system += RULES
            return @SEND@
        """,
        (6, 26),
        True,
        3,
    ),
    "try-else": (
        """
        def ask(q):
            try:
                system = "Intro.\\n"
            except ValueError:
                system = "x"
            else:
                system += f"Now: {datetime.now()}\\n"
            system += RULES
            return @SEND@
        """,
        (8, 27),
        True,
        4,
    ),
    "zip": (
        """
        def ask(q, names):
            stamps = [datetime.now()]
            system = ""
            for n, s in zip(["Intro"], stamps):
                system = f"{n}: {s}\\n"
            system += RULES
            return @SEND@
        """,
        (3, 15),
        False,
        3,
    ),
    "annotated": (
        """
        def ask(q):
            system: str = f"Now: {datetime.now()}\\n"
            system += RULES
            return @SEND@
        """,
        (3, 27),
        False,
        3,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_value_added_by_a_statement_form(tmp_path: Path, case: str) -> None:
    body, (line, col), conditional, prefix = CASES[case]
    got = found(tmp_path, body)
    assert [(f["code"], f["location"]["row"], f["location"]["column"]) for f in got] == [
        ("PFX101", row(line), col)
    ]
    assert got[0]["value"]["conditional"] is conditional
    assert ("(conditionally)" in got[0]["message"]) is conditional
    assert prefix_tokens(got[0]) == prefix


def test_the_item_of_an_enumerated_sequence_is_the_loop_value(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        def ask(q):
            stamps = [datetime.now()]
            system = ""
            for i, s in enumerate(stamps):
                system = f"Step {i}: {s}\\n"
            system += RULES
            return @SEND@
        """,
    )
    assert [(f["code"], f["location"]["row"], f["location"]["column"]) for f in got] == [
        ("PFX101", row(3), 15)
    ]
    assert got[0]["value"]["kind"] == "timestamp"


def test_a_value_appended_to_a_local_list_is_in_its_text(tmp_path: Path) -> None:
    body = """
        def ask(q):
            notes = []
            notes.append(datetime.now())
            system = f"Notes: {notes}\\n" + RULES
            return @SEND@
        """
    got = found(tmp_path, body)
    assert [(f["code"], f["location"]["row"], f["location"]["column"]) for f in got] == [
        ("PFX101", row(4), 18)
    ]
    assert (
        found(tmp_path / "static", body.replace("notes.append(datetime.now())", 'notes.insert(0, "x")')) == []
    )
