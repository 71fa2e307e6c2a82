"""Templates kept on settings objects (``analysis/python/objects.py``): the class of a value from a
constructor, a typed parameter, a return annotation or a module-level instance, a field's class from
its annotation, ``default_factory`` or default call, and the field's default text (plain, or given
to ``Field`` by position or keyword).

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
# ``{today}`` of ``answer`` is on line 5, column 31; of ``pos`` on line 18, of ``kw`` on line 31.
SETTINGS = f'''from pydantic import BaseModel, Field


class Prompts(BaseModel):
    answer: str = """Today is {{today}}.
{RULES}"""
    pos: str = Field("""Now {{today}}.
{RULES}""", description="the answer prompt")
    kw: str = Field(default="""At {{today}}.
{RULES}""")
    described: str = Field(description="""Said at {{today}}.
{RULES}""")


class Settings(BaseModel):
    prompts: Prompts = Field(default_factory=Prompts)
    made: Prompts = Prompts()
    typed: Prompts


def load_settings() -> Settings:
    return Settings()


SETTINGS = Settings()
'''
HEAD = "from datetime import datetime\nfrom openai import OpenAI\nclient = OpenAI()\n"
SEND = (
    'client.chat.completions.create(model="gpt-4o", messages=['
    '{"role": "system", "content": system}, {"role": "user", "content": q}])'
)


def found(root: Path, read: str, before: str = "pass", params: str = "q", here: bool = False) -> list[tuple]:
    """(code, file, row, column) of each finding when ``ask`` fills the template ``read`` with the time
    (after the statements ``before``); the classes are in ``desk/settings.py``, or in the same module
    as ``ask`` with ``here``."""
    imports = "from desk.settings import Settings, load_settings\n"
    app = HEAD + imports + f"\n\ndef ask({params}):\n    {before}\n"
    app += f"    system = {read}.format(today=datetime.now())\n    return {SEND}\n"
    files = {"desk/__init__.py": "", "desk/settings.py": SETTINGS, "desk/app.py": app}
    if here:
        files = {"desk/__init__.py": "", "desk/app.py": SETTINGS + app.replace(imports, "")}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    return [
        (f["code"], Path(f["filename"]).as_posix(), f["location"]["row"], f["location"]["column"])
        for f in json.loads(out)
    ]


def test_a_field_default_reached_through_a_returned_settings_object(tmp_path: Path) -> None:
    got = found(tmp_path, "settings.prompts.answer", "settings = load_settings()")
    assert got == [("PFX101", "desk/settings.py", 5, 31)]


def test_a_field_default_given_to_field_by_position_or_by_keyword(tmp_path: Path) -> None:
    got = found(tmp_path / "pos", "settings.prompts.pos", "settings = load_settings()")
    assert got == [("PFX101", "desk/settings.py", 18, 29)]
    got = found(tmp_path / "kw", "settings.prompts.kw", "settings = load_settings()")
    assert got == [("PFX101", "desk/settings.py", 31, 35)]


def test_a_field_whose_class_is_its_default_call(tmp_path: Path) -> None:
    got = found(tmp_path, "settings.made.answer", "settings = Settings()")
    assert got == [("PFX101", "desk/settings.py", 5, 31)]


def test_a_typed_parameter_holds_its_class(tmp_path: Path) -> None:
    got = found(tmp_path, "s.prompts.answer", params="q, s: Settings")
    assert got == [("PFX101", "desk/settings.py", 5, 31)]


def test_a_module_level_instance_and_a_field_known_by_its_annotation(tmp_path: Path) -> None:
    got = found(tmp_path, "SETTINGS.typed.answer", here=True)
    assert got == [("PFX101", "desk/app.py", 5, 31)]


def test_a_name_copied_from_another_local_holds_the_same_object(tmp_path: Path) -> None:
    got = found(tmp_path, "settings.made.answer", "other = Settings()\n    settings = other")
    assert got == [("PFX101", "desk/settings.py", 5, 31)]
    # the copy is made before ``other`` is assigned: not the object
    assert found(tmp_path / "late", "settings.made.answer", "settings = other\n    other = Settings()") == []


def test_a_field_description_is_not_its_default(tmp_path: Path) -> None:
    assert found(tmp_path, "settings.prompts.described", "settings = load_settings()") == []
