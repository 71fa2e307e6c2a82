"""A helper's ``*args`` and ``**kwargs`` hold what its callers pass them.

``def build(*sections): return "\\n".join(sections)`` and ``def render(template, **values): return
template.format(**values)`` are common prompt helpers. Their star parameters were not bound, so a
timestamp passed through them was missed, or reported by a placeholder's name only.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "You are the store assistant. Answer only from the catalogue, and quote prices exactly. " * 80

HEAD = f'''
from datetime import datetime

import openai

RULES = "{RULES}"


def send(system, question):
    return openai.OpenAI().chat.completions.create(
        model="gpt-4o",
        messages=[{{"role": "system", "content": system}}, {{"role": "user", "content": question}}],
    )
'''


def findings(root: Path, body: str) -> list[tuple[str, int, str]]:
    """(code, row, the source text at the finding's column) of each finding in ``app.py``."""
    source = HEAD + textwrap.dedent(body)
    (root / "app.py").write_text(source)
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    lines = source.splitlines()
    got = []
    for f in json.loads(out):
        row, col = f["location"]["row"], f["location"]["column"] - 1
        got.append((f["code"], row, lines[row - 1][col : col + 14]))
    return got


def test_a_timestamp_passed_to_star_args_is_found(tmp_path: Path) -> None:
    body = """
    def build(title, *sections):
        return title + "\\n".join(sections)


    def ask(question):
        return send(build("Assistant\\n", f"Now: {datetime.now()}", RULES), question)
    """
    assert findings(tmp_path, body) == [("PFX101", 20, "datetime.now()")]


def test_a_value_passed_to_kwargs_fills_the_template_the_helper_formats(tmp_path: Path) -> None:
    """``{header}`` says nothing by its name: only the value bound through ``**values`` does."""
    body = """
    SYSTEM = "{header}\\n" + RULES


    def render(template, **values):
        return template.format(**values)


    def ask(question):
        return send(render(SYSTEM, header=f"Session opened {datetime.now()}"), question)
    """
    # at the placeholder the value is put in, in the caller's template
    assert [(c, text) for c, _row, text in findings(tmp_path, body)] == [("PFX101", '{header}\\n" + ')]


def test_a_dict_passed_to_a_parameter_fills_the_format_of_its_items(tmp_path: Path) -> None:
    body = """
    def render(fields):
        return "Clock: {clock}\\n{rules}".format(**fields)


    def ask(question):
        return send(render({"clock": datetime.now(), "rules": RULES}), question)
    """
    assert [c for c, _row, _text in findings(tmp_path, body)] == ["PFX101"]


def test_static_values_through_star_parameters_give_no_finding(tmp_path: Path) -> None:
    body = """
    def build(*sections, **values):
        return "\\n".join(sections).format(**values)


    def ask(question):
        return send(build("You are {name}.", RULES, name="Ava"), question)
    """
    assert findings(tmp_path, body) == []
