"""The README rules table is generated from the rules' own metadata and must stay in sync."""

from __future__ import annotations

from cli_support import REPO, invoke

from prefixlint.report.markdown import END, START, replace_table, rules_table, table_in
from prefixlint.rules.base import all_rules

FIX_HINT = (
    "regenerate with: python -c 'from prefixlint.report.markdown import update_readme; update_readme()'"
)


def test_readme_rules_table_in_sync() -> None:
    readme = (REPO / "README.md").read_text("utf-8")
    assert readme.count(START) == 1 and readme.count(END) == 1
    assert table_in(readme) == rules_table(), FIX_HINT


def test_table_lists_every_rule_and_cli_prints_it() -> None:
    table = rules_table()
    rows = table.splitlines()[2:]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == [r.code for r in all_rules()]
    code, out, _ = invoke(["rules", "--output-format", "markdown"], REPO)
    assert code == 0 and out == table


def test_replace_table_round_trip() -> None:
    doc = f"intro\n{START}\nstale\n{END}\noutro\n"
    new = replace_table(doc, rules_table())
    assert table_in(new) == rules_table() and new.startswith("intro\n") and new.endswith(f"{END}\noutro\n")


def test_a_rule_code_must_look_like_pfx_and_three_digits() -> None:
    """A rule class whose code is not ``PFX`` and three digits is refused when it is defined."""
    import pytest

    from prefixlint.rules.base import Rule

    with pytest.raises(ValueError, match="must look like PFX123"):
        type("BadCode", (Rule,), {"code": "PFX12", "name": "bad-code", "check": lambda self, lay, ctx: []})
