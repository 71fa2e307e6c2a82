"""Python analysis details that hand-made changes to the analyzer (mutants) went through unseen:
templates read through ``dedent``, ``.strip()``, ``.resolve()`` and ``.get(key)``, a sending helper
called twice, a filled prompt appended as a user ``Message(role=...)`` or rewritten in place, and the
units behind them (fill checks, token estimates, template candidates).

The project tests run the real ``prefixlint check`` in one process on a fresh small project.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from prefixlint.analysis.python.registry import breaks_ahead_of_static
from prefixlint.analysis.python.sources import dynamic, static
from prefixlint.analysis.python.template_patterns import candidates
from prefixlint.model.layout import DynamicKind, Timing
from tests.cli_support import invoke, needs_analyzer

RULES = " ".join(
    f"Rule {i}: answer only questions about billing, quote the invoice line, and never guess an amount."
    for i in range(12)
)
SEND = (
    'client.chat.completions.create(model="gpt-4o", messages=['
    '{"role": "system", "content": system}, {"role": "user", "content": q}])'
)
HEAD = "from datetime import datetime\nfrom openai import OpenAI\n\nclient = OpenAI()\n"


def rows(root: Path, files: dict[str, str], columns: bool = False) -> list[tuple]:
    """(code, file, line) of each finding (and its column, with ``columns``) of ``prefixlint check``
    on a fresh project of ``files``."""
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    found = json.loads(out)
    if columns:
        return [(f["code"], f["filename"], f["location"]["row"], f["location"]["column"]) for f in found]
    return [(f["code"], f["filename"], f["location"]["row"]) for f in found]


def ask(template: str) -> str:
    """A module that fills ``template`` (an expression) with the time and sends it."""
    fill = "    system = TEMPLATE.format(today=datetime.now())\n"
    return f"{HEAD}TEMPLATE = {template}\n\n\ndef ask(q):\n{fill}    return {SEND}\n"


# --- where a template's text comes from (templating.template_source, _file_path, _keyed_source) ----


@needs_analyzer
def test_a_template_through_dedent_imported_by_name(tmp_path: Path) -> None:
    app = ask(f'dedent("""\n    Today is {{today}}.\n    {RULES}\n""")')
    got = rows(tmp_path, {"app.py": "from textwrap import dedent\n" + app}, columns=True)
    assert got == [("PFX101", "app.py", 7, 14)]  # on ``{today}`` in the file


@needs_analyzer
def test_a_template_through_strip(tmp_path: Path) -> None:
    got = rows(tmp_path, {"app.py": ask(f'"""\nToday is {{today}}.\n{RULES}\n""".strip()')}, columns=True)
    assert got == [("PFX101", "app.py", 6, 10)]  # the line the strip drops is counted
    got = rows(tmp_path / "b", {"app.py": ask(f'"""  Today is {{today}}.\n{RULES}\n""".strip()')}, True)
    assert got == [("PFX101", "app.py", 5, 26)]


@needs_analyzer
def test_a_template_file_read_through_a_resolved_path(tmp_path: Path) -> None:
    files = {
        "prompt.txt": f"Today is {{today}}.\n{RULES}\n",
        "app.py": "from pathlib import Path\n"
        + ask('(Path(__file__).parent / "prompt.txt").resolve().read_text()'),
    }
    assert rows(tmp_path, files) == [("PFX101", "prompt.txt", 1)]


@needs_analyzer
def test_a_template_read_from_a_yaml_file_with_get(tmp_path: Path) -> None:
    files = {
        "prompts.yaml": f"system: |\n  Today is {{today}}.\n  {RULES}\n",
        "app.py": "import yaml\n" + ask('yaml.safe_load(open("prompts.yaml")).get("system")'),
    }
    assert rows(tmp_path, files) == [("PFX101", "prompts.yaml", 2)]


# --- in-house send paths: a helper that sends, called from two places (sendpaths) ----------------


@needs_analyzer
def test_a_sending_helper_called_twice_is_a_sink_at_both_calls(tmp_path: Path) -> None:
    app = f"""{HEAD}RULES = {RULES!r}


def chat(messages):
    return client.chat.completions.create(model="gpt-4o", messages=messages)


def first(q):
    return chat(
        [{{"role": "system", "content": f"{{datetime.now()}}: " + RULES}}, {{"role": "user", "content": q}}]
    )


def second(q):
    return chat(
        [{{"role": "system", "content": f"{{datetime.now()}} " + RULES}}, {{"role": "user", "content": q}}]
    )
"""
    assert rows(tmp_path, {"app.py": app}) == [("PFX101", "app.py", 14), ("PFX101", "app.py", 20)]


# --- a fill that becomes the newest user turn of a kept conversation (uses) ----------------------

AGENT = f'''{HEAD}SYSTEM = "You are a billing agent."
NEXT = """Checked at {{stamp}}.
{RULES}
"""


class Message:
    def __init__(self, role, content):
        self.role = role
        self.content = content


class Agent:
    def __init__(self):
        self.history = []
        self.pending = ""

    def plan(self):
        self.pending = NEXT.format(stamp=datetime.now().isoformat())

    def step(self):
%s
        system = {{"role": "system", "content": SYSTEM}}
        return client.chat.completions.create(model="gpt-4o", messages=[system, *self.history])
'''


@needs_analyzer
def test_a_fill_appended_as_a_message_with_a_user_role_keyword_is_not_a_finding(tmp_path: Path) -> None:
    agent = AGENT % '        self.history.append(Message(role="user", content=self.pending))'
    assert rows(tmp_path, {"agent.py": agent}) == []
    other = AGENT % '        self.history.append(Message(role="tool", content=self.pending))'
    assert rows(tmp_path / "tool", {"agent.py": other}) == [("PFX101", "agent.py", 6)]


@needs_analyzer
def test_a_fill_rewritten_into_its_own_attribute_is_still_the_same_turn(tmp_path: Path) -> None:
    body = (
        '        self.pending = f"Note: retry\\n{self.pending}"\n'
        '        self.history.append({"role": "user", "content": self.pending})'
    )
    assert rows(tmp_path, {"agent.py": AGENT % body}) == []
    body = body.replace("self.pending = f", "self.note = f")
    assert rows(tmp_path / "other", {"agent.py": AGENT % body}) == [("PFX101", "agent.py", 6)]


# --- units ------------------------------------------------------------------------------------------


def test_a_fill_breaks_ahead_of_static_only_with_a_per_request_value_before_a_long_body() -> None:
    body = static("x" * 500)
    stamp = dynamic(DynamicKind.TIMESTAMP, Timing.REQUEST, "now()", None)
    assert breaks_ahead_of_static([static("Intro. "), stamp, body])
    assert not breaks_ahead_of_static([static("Intro. "), body])  # nothing per request
    assert not breaks_ahead_of_static([body, stamp, static("short")])  # too little after it
    at_start = dynamic(DynamicKind.TIMESTAMP, Timing.PROCESS, "START", None)
    assert not breaks_ahead_of_static([at_start, body])  # one value for the whole run


def test_a_value_of_a_kind_without_a_typical_size_counts_no_tokens() -> None:
    assert dynamic(DynamicKind.TIMESTAMP, Timing.REQUEST, "now()", None).tokens == 0
    assert dynamic(DynamicKind.UNKNOWN, Timing.REQUEST, "x", None).tokens == 0
    assert dynamic(DynamicKind.RETRIEVED_CONTEXT, Timing.REQUEST, "docs", None).tokens == 500


def test_template_candidates_do_not_look_below_the_depth_of_the_pattern(tmp_path: Path) -> None:
    for rel in ("a.j2", "sub/b.j2", "sub/deeper/c.j2", ".hidden/d.j2"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert [p.name for p in candidates("*.j2", [tmp_path])] == ["a.j2"]
    assert [p.name for p in candidates("*/*.j2", [tmp_path])] == ["b.j2"]
