"""A module-level name assigned and then changed (``SYSTEM = SYSTEM + RULES``, ``SYSTEM += RULES``): its
value is built in source order, and a use reads the value the name has where it is used.

Each test writes a small project under ``tmp_path`` and runs the real checker in-process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import needs_analyzer
from tests.test_flow_expressions import found, row, where

pytestmark = needs_analyzer

SENDER = """
        def ask(q):
            return @SEND@
        """


@pytest.mark.parametrize(
    "grow",
    ["SYSTEM = SYSTEM + RULES", "SYSTEM += RULES", "SYSTEM = f'{SYSTEM}{RULES}'"],
    ids=["reassigned", "augmented", "f-string"],
)
def test_a_timestamp_ahead_of_the_rules_added_by_a_second_statement(tmp_path: Path, grow: str) -> None:
    got = found(
        tmp_path,
        f"""
        SYSTEM = f"Started {{datetime.now().isoformat()}}\\n"
        {grow}
        system = SYSTEM
        """
        + SENDER,
    )
    # computed at import: a process value, ahead of the rules the second statement added
    assert [where(f) for f in got] == [("PFX201", row(2), 21)]
    assert got[0]["impact"]["tokens_lost"] > 100


def test_a_use_between_the_statements_reads_the_value_it_has_there(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        BASE = RULES
        FIRST = BASE + f"\\nStarted {datetime.now().isoformat()}"
        BASE = f"Started {datetime.now().isoformat()}\\n" + BASE
        system = FIRST
        """
        + SENDER,
    )
    # FIRST took the rules and then the time: nothing ahead of static text (read as BASE's final
    # value, the time would come first)
    assert got == []


def test_a_static_text_grown_in_two_statements_stays_static(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        SYSTEM = "You answer billing questions.\\n"
        SYSTEM += RULES
        system = SYSTEM
        """
        + SENDER,
    )
    assert got == []


def test_a_part_added_under_an_if_at_module_level_is_conditional(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        import os
        SYSTEM = f"Started {datetime.now().isoformat()}\\n"
        if os.environ.get("VERBOSE"):
            SYSTEM += RULES
        system = SYSTEM
        """
        + SENDER,
    )
    assert [where(f) for f in got] == [("PFX201", row(3), 21)]
    assert got[0]["value"]["conditional"] is False  # the value is always there; the rules may follow
