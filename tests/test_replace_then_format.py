"""A template with constant text put in by ``.replace()`` and then filled by ``.format()``.

``TEMPLATE.replace("{tools}", TOOLS).format(date=now)`` was read as the replaced text only: the
``.format()`` after it was not applied, so its per-request values were lost and the prompt passed.
The replaced template keeps its other placeholders where they are written.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "You are the store assistant. Answer only from the catalogue, and quote prices exactly. " * 40

HEAD = f'''
from datetime import datetime

import openai

RULES = "{RULES}"
TOOLS = "search(query): look the query up in the catalogue.\\n" * 5


def send(system, question):
    return openai.OpenAI().chat.completions.create(
        model="gpt-4o",
        messages=[{{"role": "system", "content": system}}, {{"role": "user", "content": question}}],
    )
'''


def findings(root: Path, body: str, extra: dict[str, str] | None = None) -> list[dict]:
    (root / "app.py").write_text(HEAD + textwrap.dedent(body))
    for name, text in (extra or {}).items():
        (root / name).write_text(text)
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    return json.loads(out)


def located(root: Path, found: list[dict], needle: str) -> list[tuple[str, str]]:
    """(code, the source text at each finding's location, as long as ``needle``)."""
    out = []
    for f in found:
        line = (root / f["filename"]).read_text().splitlines()[f["location"]["row"] - 1]
        col = f["location"]["column"] - 1
        out.append((f["code"], line[col : col + len(needle)]))
    return out


def test_a_format_after_a_constant_replace_is_applied(tmp_path: Path) -> None:
    body = """
    TEMPLATE = "Tools:\\n{tools}\\nNow: {now}.\\n" + RULES


    def ask(question):
        return send(TEMPLATE.replace("{tools}", TOOLS).format(now=datetime.now()), question)
    """
    found = findings(tmp_path, body)
    # the placeholder after the replaced one, on the same escaped line, is placed at its braces
    assert located(tmp_path, found, "{now}") == [("PFX101", "{now}")]
    assert found[0]["impact"]["tokens_lost"] > 600  # the rules after it (the tools are ahead of it)


def test_chained_replaces_in_a_multi_line_template_then_format(tmp_path: Path) -> None:
    body = '''
    TEMPLATE = """You are {name}.
    Tools:
    {tools}
    Today is {today}.
    """ + RULES


    def ask(question):
        system = TEMPLATE.replace("{name}", "Ava").replace("{tools}", TOOLS)
        return send(system.format(today=datetime.now().strftime("%Y-%m-%d")), question)
    '''
    found = findings(tmp_path, body)
    assert located(tmp_path, found, "{today}") == [("PFX111", "{today}")]  # a date: one miss a day


def test_an_imported_template_replaced_then_formatted(tmp_path: Path) -> None:
    prompts = 'HEADER = "Session started {started}.\\nTools: {tools}\\n"\n'
    body = """
    from prompts import HEADER


    def ask(question):
        return send(HEADER.replace("{tools}", TOOLS).format(started=datetime.now()) + RULES, question)
    """
    found = findings(tmp_path, body, {"prompts.py": prompts})
    assert [(f["code"], f["filename"]) for f in found] == [("PFX101", "prompts.py")]
    assert located(tmp_path, found, "{started}") == [("PFX101", "{started}")]


def test_a_replace_that_puts_in_a_per_request_value_is_still_reported_there(tmp_path: Path) -> None:
    body = """
    TEMPLATE = "Now: {now}.\\nTools: {tools}\\n" + RULES


    def ask(question):
        return send(TEMPLATE.replace("{now}", str(datetime.now())).replace("{tools}", TOOLS), question)
    """
    assert [f["code"] for f in findings(tmp_path, body)] == ["PFX101"]


def test_static_fills_after_a_replace_give_no_finding(tmp_path: Path) -> None:
    body = """
    TEMPLATE = "You are {name}.\\nTools: {tools}\\n" + RULES


    def ask(question):
        return send(TEMPLATE.replace("{tools}", TOOLS).format(name="Ava"), question)
    """
    assert findings(tmp_path, body) == []
