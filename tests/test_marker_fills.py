"""Prompt files filled by a helper that receives their text as a parameter (issue 10).

The text comes from storage the analyzer cannot follow (here a row object); the helper fills it with
``str.replace`` on placeholder-shaped markers. The project's prompt files that hold two or more of
those markers are linked to the helper, and a per-request value it puts ahead of a long static body
is reported on the marker's line in the file. Each case is a fresh project run through the CLI.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "\n".join(
    f"Rule {i}: plan the next action, name the tool you pick, and explain the risk you see in it."
    for i in range(30)
)

HELPER = """
class PromptFiller:
    @staticmethod
    def fill(text, started, tools):
        text = text.replace("{tools}", ", ".join(tools))
        if "{started}" in text:
            text = text.replace("{started}", started)
        text = text.replace("{mode}", "strict")
        return text
"""

CALLER = """
import datetime
from filler import PromptFiller

TOOLS = ["search", "read"]


def next_step(row):
    started = datetime.datetime.now().strftime("%H:%M:%S")
    return PromptFiller.fill(row.prompt, started, TOOLS)
"""


def _rows(root: Path, filename: str) -> list[int]:
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "."], cwd=root)
    assert code in (0, 1), out
    return sorted({f["location"]["row"] for f in json.loads(out) if f["filename"] == filename})


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_file_holding_the_markers_is_filled_on_its_own_lines(tmp_path: Path):
    agent = "You are a planning agent.\nMode: {mode}\nTools: {tools}\nStarted: {started}\n" + RULES + "\n"
    root = _write(
        tmp_path,
        {
            "prompts/agent.txt": agent,
            "filler.py": HELPER,
            "steps.py": CALLER,
            "prompts/notes.md": "No markers.\n",
        },
    )
    assert _rows(root, "prompts/agent.txt") == [4]


def test_file_with_only_one_of_the_markers_is_not_linked(tmp_path: Path):
    other = "You review code.\nStarted: {started}\n" + RULES + "\n"
    root = _write(tmp_path, {"prompts/review.txt": other, "filler.py": HELPER, "steps.py": CALLER})
    assert _rows(root, "prompts/review.txt") == []


def test_value_at_the_end_of_the_file_is_not_reported(tmp_path: Path):
    agent = "You are a planning agent.\nTools: {tools}\n" + RULES + "\nStarted: {started}\n"
    root = _write(tmp_path, {"prompts/agent.txt": agent, "filler.py": HELPER, "steps.py": CALLER})
    assert _rows(root, "prompts/agent.txt") == []


def test_helper_that_reassigns_its_template_parameter(tmp_path: Path):
    # ``t = t.replace(...)`` inside a helper: its return is the filled text, not the argument
    head = textwrap.dedent(
        """
        import datetime
        from openai import OpenAI

        client = OpenAI()


        def fill(t, now):
            t = t.replace("<NOW>", now)
            return t


        def answer(question):
            system = fill(SYSTEM, datetime.datetime.now().isoformat())
            messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
            return client.chat.completions.create(model="gpt-4o", messages=messages)
        """
    )
    app = head + f'\nSYSTEM = """You are a support agent.\nNow: <NOW>\n{RULES}\n"""\n'
    root = _write(tmp_path, {"app.py": app})
    line = next(i for i, ln in enumerate(app.splitlines(), 1) if ln.startswith("Now: <NOW>"))
    assert line in _rows(root, "app.py")


def test_helper_that_defaults_or_extends_its_parameter_keeps_the_callers_value(tmp_path: Path):
    head = textwrap.dedent(
        """
        import datetime
        from openai import OpenAI

        client = OpenAI()


        def build(header=None):
            if header is None:
                header = "You are a support agent."
            header += "\\n"
            return header + RULES


        def answer(question):
            system = build("Now: " + datetime.datetime.now().isoformat())
            messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
            return client.chat.completions.create(model="gpt-4o", messages=messages)
        """
    )
    app = head + f'\nRULES = """{RULES}"""\n'
    root = _write(tmp_path, {"app.py": app})
    line = next(i for i, ln in enumerate(app.splitlines(), 1) if "isoformat()" in ln)
    assert line in _rows(root, "app.py")
