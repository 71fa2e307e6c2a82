"""Items of module-level prompt tables (``analysis/python/constants.py``): ``PROMPTS["qa"]`` read in the
module that defines it, through an imported name or through the imported module, and the reads that
are not the table's item (a parameter or local of the same name, a key the table lacks).

Each test writes a small package under ``tmp_path`` and runs the real checker in-process.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "\n".join(
    f"Rule {i}: answer only questions about billing, quote the invoice line, and never guess an amount."
    for i in range(12)
)
# The table: the ``{today}`` placeholder of item "qa" is on line 2, column 23.
TABLE = f'''PROMPTS = {{
    "qa": """Today is {{today}}.
{RULES}""",
    "short": "Short.",
}}
'''
BY_NAME, BY_MODULE = "from desk.prompts import PROMPTS", "from desk import prompts"
HEAD = "from datetime import datetime\nfrom openai import OpenAI\nclient = OpenAI()\n"
SEND = (
    'client.chat.completions.create(model="gpt-4o", messages=['
    '{"role": "system", "content": system}, {"role": "user", "content": q}])'
)


def found(root: Path, files: dict[str, str]) -> list[tuple[str, str, int, int]]:
    """(code, file, row, column) of each finding on the package ``desk`` made of ``files``."""
    files = {"desk/__init__.py": "", **files}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).replace("@SEND@", SEND))
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    return [
        (f["code"], Path(f["filename"]).as_posix(), f["location"]["row"], f["location"]["column"])
        for f in json.loads(out)
    ]


def ask(read: str, imports: str = "", params: str = "q") -> str:
    """A module that fills the table item ``read`` with the time and sends it."""
    return (
        HEAD
        + imports
        + f"\n\ndef ask({params}):\n    system = {read}.format(today=datetime.now())\n    return {SEND}\n"
    )


def test_an_item_of_a_table_in_the_same_module(tmp_path: Path) -> None:
    assert found(tmp_path, {"desk/app.py": TABLE + ask('PROMPTS["qa"]')}) == [
        ("PFX101", "desk/app.py", 2, 23)
    ]


def test_an_item_of_a_table_imported_by_name(tmp_path: Path) -> None:
    files = {"desk/prompts.py": TABLE, "desk/app.py": ask('PROMPTS["qa"]', BY_NAME)}
    assert found(tmp_path, files) == [("PFX101", "desk/prompts.py", 2, 23)]


def test_an_item_of_a_table_read_through_its_module(tmp_path: Path) -> None:
    files = {"desk/prompts.py": TABLE, "desk/app.py": ask('prompts.PROMPTS["qa"]', BY_MODULE)}
    assert found(tmp_path, files) == [("PFX101", "desk/prompts.py", 2, 23)]


def test_an_item_set_key_by_key_at_module_level(tmp_path: Path) -> None:
    table = f'PROMPTS = {{}}\nPROMPTS["qa"] = """Today is {{today}}.\n{RULES}"""\n'
    files = {"desk/prompts.py": table, "desk/app.py": ask('PROMPTS["qa"]', BY_NAME)}
    assert found(tmp_path, files) == [("PFX101", "desk/prompts.py", 2, 29)]


def test_a_parameter_named_like_the_table_is_not_the_table(tmp_path: Path) -> None:
    app = TABLE + ask('PROMPTS["qa"]', params="q, PROMPTS")
    assert found(tmp_path, {"desk/app.py": app}) == []


def test_a_local_named_like_the_table_is_not_the_table(tmp_path: Path) -> None:
    app = TABLE + ask('PROMPTS["qa"]').replace("    system =", "    PROMPTS = load()\n    system =")
    assert found(tmp_path, {"desk/app.py": app}) == []


def test_a_key_the_table_lacks_or_a_key_not_written_out_is_no_item(tmp_path: Path) -> None:
    assert found(tmp_path / "a", {"desk/app.py": TABLE + ask('PROMPTS["nope"]')}) == []
    assert found(tmp_path / "b", {"desk/app.py": TABLE + ask("PROMPTS[KEY]", 'KEY = "qa"')}) == []


def test_a_module_attribute_that_is_not_a_module_import_is_no_item(tmp_path: Path) -> None:
    # ``cfg.PROMPTS["qa"]`` where ``cfg`` is an object, not an imported module
    files = {"desk/prompts.py": TABLE, "desk/app.py": ask('cfg.PROMPTS["qa"]', "cfg = object()")}
    assert found(tmp_path, files) == []
    # ``prompts.PROMPTS`` where ``prompts`` is the table module's ``PROMPTS`` imported by name
    files = {
        "desk/prompts.py": TABLE + "TABLES = PROMPTS\n",
        "desk/app.py": ask('TABLES.PROMPTS["qa"]', "from desk.prompts import TABLES"),
    }
    assert found(tmp_path / "b", files) == []
