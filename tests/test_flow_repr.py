"""A ``repr`` that prints a memory address (``analysis/python/evaluate.py``, ``_address_repr``): an
object of a plain class of the project without its own ``__repr__`` (PFX403). A dataclass, an
``attrs`` class, a class with a base (whose repr may be custom) or one that defines ``__repr__`` (or
``__str__``, for ``str``) prints no address.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import needs_analyzer
from tests.test_flow_expressions import found, row

pytestmark = needs_analyzer

BODY = """
    from dataclasses import dataclass
    import attr
    DECOclass BotBASE:
    METHOD    def ask(self, q):
            system = f"Bot EXPR\\n" + RULES
            return @SEND@
    """
STR = "    def __str__(self):\n            return 'bot'\n    "
REPR = STR.replace("__str__", "__repr__")


def bot(expr: str, deco: str = "", base: str = "", method: str = "") -> str:
    body = BODY.replace("DECO", deco).replace("BASE", base).replace("METHOD", method)
    return body.replace("EXPR", expr)


@pytest.mark.parametrize(
    ("expr", "method"),
    [
        ("{repr(self)}", ""),
        ("{self!r}", ""),
        ("{self!r}", STR),
        ("{str(self)}", ""),
        ("{self!s}", ""),
        ("{self}", ""),
    ],
)
def test_the_default_repr_of_a_plain_class_is_an_address(tmp_path: Path, expr: str, method: str) -> None:
    got = found(tmp_path, bot(expr, method=method))
    assert [(f["code"], f["value"]["timing"]) for f in got] == [("PFX403", "static")]
    assert got[0]["location"]["row"] == row(6) + method.count("\n")
    assert "memory address" in got[0]["message"]


@pytest.mark.parametrize(
    ("expr", "deco", "base", "method"),
    [
        ("{repr(self)}", "@dataclass\n    ", "", ""),
        ("{repr(self)}", "@attr.s\n    ", "", ""),
        ("{repr(self)}", "", "(Base)", ""),
        ("{repr(self)}", "", "", REPR),
        ("{str(self)}", "", "", STR),
        ("{self!s}", "", "", STR),
        ("{self}", "", "", STR),
        ("{self}", "", "", STR.replace("__str__(self)", "__format__(self, spec)")),
        ("{self:>10}", "", "", ""),
    ],
)
def test_a_repr_the_class_defines_or_may_inherit_is_not_an_address(
    tmp_path: Path, expr: str, deco: str, base: str, method: str
) -> None:
    assert found(tmp_path, bot(expr, deco, base, method)) == []
