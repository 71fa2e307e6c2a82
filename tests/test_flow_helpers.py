"""Text returned by the project's helpers (``analysis/python/evaluate.py``, ``call_function``): a
static method called on its class, a helper that calls itself, one that returns nothing, keywords it
does not take, and several returns (the costliest one counts, only maybe).
"""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import needs_analyzer
from tests.test_flow_expressions import found, row

pytestmark = needs_analyzer


def rows(root: Path, body: str) -> list[tuple]:
    return [
        (f["code"], f["location"]["row"], f["location"]["column"], f["value"]["conditional"])
        for f in found(root, body)
    ]


def test_a_static_method_called_on_its_class_in_the_same_module(tmp_path: Path) -> None:
    body = """
        class Builder:
            @staticmethod
            def head(stamp):
                return f"Now {stamp}\\n"

        def ask(q):
            system = Builder.head(datetime.now()) + RULES
            return @SEND@
        """
    assert rows(tmp_path, body) == [("PFX101", row(8), 27, False)]


def test_a_helper_that_calls_itself_still_gives_its_other_return(tmp_path: Path) -> None:
    body = """
        def head(n):
            if n:
                return head(n - 1)
            return f"Now {datetime.now()}\\n"

        def ask(q):
            system = head(3) + RULES
            return @SEND@
        """
    assert rows(tmp_path, body) == [("PFX101", row(5), 19, True)]


def test_of_several_returns_the_dynamic_one_counts_conditionally(tmp_path: Path) -> None:
    body = """
        def head(short):
            if short:
                return "Hi.\\n"
            return f"Now {datetime.now()}\\n"

        def ask(q, short):
            system = head(short) + RULES
            return @SEND@
        """
    got = found(tmp_path, body)
    assert [(f["code"], f["location"]["row"], f["location"]["column"]) for f in got] == [
        ("PFX101", row(5), 19)
    ]
    assert "(conditionally)" in got[0]["message"]


def test_a_helper_that_returns_nothing_adds_no_text(tmp_path: Path) -> None:
    body = """
        def head(stamp):
            print(stamp)

        def ask(q):
            system = f"{head(datetime.now())}" + RULES
            return @SEND@
        """
    assert rows(tmp_path, body) == []


def test_a_keyword_the_helper_does_not_take_binds_nothing(tmp_path: Path) -> None:
    body = """
        def head(stamp="fixed"):
            return f"Now {stamp}\\n"

        def ask(q):
            system = head(other=datetime.now()) + RULES
            return @SEND@
        """
    assert rows(tmp_path, body) == []
    assert rows(tmp_path / "kw", body.replace("other=", "stamp=")) == [("PFX101", row(6), 25, False)]
