"""Templates kept in module tables, annotated assignments and typed settings fields
(``collect.py``'s record of a module), seen in the findings a user gets: each module fills its
template with ``datetime.now()`` and the finding is on ``{today}`` where the template is written.
Each test runs the real ``prefixlint check`` once on a small fresh project (issue 16: broad
behaviour coverage for mutation testing).
"""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import needs_analyzer
from tests.test_prompts_messages import RULES, findings, send

pytestmark = needs_analyzer

SYSTEM = send("[{'role': 'system', 'content': system}, {'role': 'user', 'content': q}]")
TEXT = f"'Today is {{today}}.\\n' + {RULES!r}"
PROMPTS = f"class Prompts:\n    answer: str = {TEXT}\n\n\n"


def _typed(annotation: str, head: str = "") -> str:
    """A settings class whose ``prompts`` field is annotated ``annotation``, filled and sent."""
    return (
        head + PROMPTS + f"class Settings:\n    prompts: {annotation}\n\n\n"
        "def ask(q, settings: Settings):\n"
        "    system = settings.prompts.answer.format(today=datetime.now())\n" + SYSTEM
    )


def test_module_tables_and_annotated_assignments(tmp_path: Path) -> None:
    """``PROMPTS["qa"] = ...`` at module level, ``TEMPLATE: str = ...``, ``self.x: str = ...``."""
    modules = {
        "table.py": (
            f"PROMPTS = {{}}\nPROMPTS['qa'] = {TEXT}\n\n\ndef ask(q):\n"
            "    system = PROMPTS['qa'].format(today=datetime.now())\n" + SYSTEM
        ),
        "annotated.py": f"TEMPLATE: str = {TEXT}\n\n\ndef ask(q):\n"
        "    system = TEMPLATE.format(today=datetime.now())\n" + SYSTEM,
        "init_annotated.py": (
            f"class Bot:\n    def __init__(self):\n        self.template: str = {TEXT}\n\n"
            "    def ask(self, q):\n        system = self.template.format(today=datetime.now())\n"
            "    " + SYSTEM.replace("\n", "\n    ").rstrip() + "\n"
        ),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "annotated.py", 8, 27),
        ("PFX101", "init_annotated.py", 10, 40),
        ("PFX101", "table.py", 9, 27),
    ]


def test_settings_fields_by_annotation(tmp_path: Path) -> None:
    """The class of ``settings.prompts`` comes from the field's annotation: a name, a string,
    ``Optional[...]`` or ``... | None``."""
    modules = {
        "plain_name.py": _typed("Prompts"),
        "quoted.py": _typed("'Prompts'"),
        "optional.py": _typed("Optional[Prompts] = None", "from typing import Optional\n\n\n"),
        "union.py": _typed("Prompts | None = None"),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "optional.py", 12, 29),
        ("PFX101", "plain_name.py", 9, 29),
        ("PFX101", "quoted.py", 9, 29),
        ("PFX101", "union.py", 9, 29),
    ]
