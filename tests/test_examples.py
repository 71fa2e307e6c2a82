"""examples/: each file is flagged with the codes its README row lists, and the good ones are quiet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prefixlint.lint.checker import check_source
from prefixlint.lint.config import settings_for

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ROW = re.compile(r"^\| `([^`]+\.py)`(?: \+ `[^`]+`)? \| ([^|]+) \|", re.M)
EXPECTED = {
    name: set(re.findall(r"PFX\d{3}", codes))
    for name, codes in ROW.findall((EXAMPLES / "README.md").read_text())
}


def test_readme_lists_every_example() -> None:
    files = {p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.py") if p.name != "__init__.py"}
    assert files - {"support_bot/prompts.py"} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_findings_match_readme(name: str) -> None:
    path = EXAMPLES / name
    settings = settings_for(path)
    paths = [path]
    if name.startswith("support_bot/"):
        paths = sorted((EXAMPLES / "support_bot").glob("*.py"))
    codes: set[str] = set()
    for p in paths:
        result = check_source(str(p), None, settings)
        assert result.internal_error is None
        codes |= {f.code for f in result.findings}
    assert codes == EXPECTED[name]
