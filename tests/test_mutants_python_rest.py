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


# --- a helper first reached at the hop limit (sendpaths.sending_sites) ----------------------------

STEPS = (
    "".join(f"def step{i}(messages):\n    return step{i + 1}(messages)\n\n\n" for i in range(1, 6))
    + 'def step6(messages):\n    return client.chat.completions.create(model="gpt-4o", messages=messages)\n'
)
MESSAGES = '[{"role": "system", "content": f"{datetime.now()}: " + RULES}, {"role": "user", "content": q}]'


@needs_analyzer
def test_a_helper_first_reached_at_the_hop_limit_still_sends_when_called_nearer(tmp_path: Path) -> None:
    """``far`` reaches ``step5`` four helpers deep, where the search stops; ``near`` calls it
    directly, two hops from the API call. What was found for ``step5`` at the limit is not its
    answer for ``near`` (it was, and ``near``'s finding was lost)."""
    app = (
        f"from datetime import datetime\nfrom llm import step1, step5\n\nRULES = {RULES!r}\n\n\n"
        f"def far(q):\n    return step1({MESSAGES})\n\n\ndef near(q):\n    return step5({MESSAGES})\n"
    )
    assert rows(tmp_path, {"llm.py": f"{HEAD}\n\n{STEPS}", "app.py": app}) == [("PFX101", "app.py", 12)]


@needs_analyzer
def test_which_helpers_send_is_worked_out_once_per_function(tmp_path: Path, monkeypatch) -> None:
    from prefixlint.analysis.python import ProjectContext, analyze_python, sendpaths
    from prefixlint.model.settings import Settings

    calls: list[str] = []
    real = sendpaths.function_sites

    def counted(mod, fdef):  # type: ignore[no-untyped-def]
        calls.append(fdef.name.value)
        return real(mod, fdef)

    monkeypatch.setattr(sendpaths, "function_sites", counted)
    callers = "".join(f"\n\ndef ask_{i}(q):\n    return step5({MESSAGES})\n" for i in range(4))
    (tmp_path / "llm.py").write_text(f"{HEAD}\n\n{STEPS}")
    app = tmp_path / "app.py"
    app.write_text(f"from datetime import datetime\nfrom llm import step5\n\nRULES = {RULES!r}\n{callers}")
    settings = Settings()
    result = analyze_python(str(app), app.read_text(), settings, ProjectContext(tmp_path, settings))
    stamps = [next(s for s in lay.segments if not s.static).location for lay in result.layouts]
    assert [loc.line for loc in stamps] == [8 + 4 * i for i in range(4)]
    # not once per caller: step5 once, step6 once from step5 and once more from the hop count of
    # its own layout
    assert sorted(calls) == ["step5", "step6", "step6"]


@needs_analyzer
def test_helpers_that_call_each_other_send_once_worked_out(tmp_path: Path, monkeypatch) -> None:
    """``ask`` retries through ``again``, which calls ``ask``: both send, and the cycle is read once
    (a helper being read counts as sending what its other calls send)."""
    from prefixlint.analysis.python import ProjectContext, analyze_python, sendpaths
    from prefixlint.model.settings import Settings

    calls: list[str] = []
    real = sendpaths.function_sites

    def counted(mod, fdef):  # type: ignore[no-untyped-def]
        calls.append(fdef.name.value)
        return real(mod, fdef)

    monkeypatch.setattr(sendpaths, "function_sites", counted)
    (tmp_path / "llm.py").write_text(
        f"{HEAD}\n\ndef ask(messages, retry=True):\n    if retry:\n        return again(messages)\n"
        '    return client.chat.completions.create(model="gpt-4o", messages=messages)\n\n\n'
        "def again(messages):\n    return ask(messages, retry=False)\n"
    )
    app = tmp_path / "app.py"
    app.write_text(
        f"from datetime import datetime\nfrom llm import again, ask\n\nRULES = {RULES!r}\n\n\n"
        f"def first(q):\n    return again({MESSAGES})\n\n\ndef second(q):\n    return ask({MESSAGES})\n"
    )
    settings = Settings()
    result = analyze_python(str(app), app.read_text(), settings, ProjectContext(tmp_path, settings))
    stamps = [next(s for s in lay.segments if not s.static).location for lay in result.layouts]
    assert sorted({loc.line for loc in stamps}) == [8, 12]
    assert sorted(calls) == ["again", "ask", "ask"]  # ask once more at its own hop count


# --- the folder a PackageLoader reads (templating._jinja_dirs) -------------------------------------

PACKAGE_APP = f"""{HEAD}from jinja2 import Environment, PackageLoader

env = Environment(loader=PackageLoader(%s))


def ask(q):
    system = env.get_template("sys.j2").render(when=datetime.now())
    return {SEND}
"""


@needs_analyzer
def test_a_package_loader_reads_its_folder_or_templates(tmp_path: Path) -> None:
    """The template the loader finds is the one reported, not a file of the same name elsewhere
    (which has the value at its end)."""
    ahead, behind = f"Checked {{{{ when }}}}.\n{RULES}\n", f"{RULES}\nChecked {{{{ when }}}}.\n"
    files = {
        "app/__init__.py": "",
        "app/prompts/sys.j2": ahead,
        "app/templates/sys.j2": behind,
        "app/main.py": PACKAGE_APP % '"app", "prompts"',
    }
    assert rows(tmp_path / "given", files) == [("PFX101", "app/prompts/sys.j2", 1)]
    files = {
        "app/__init__.py": "",
        "app/templates/sys.j2": ahead,
        "app/sys.j2": behind,
        "app/main.py": PACKAGE_APP % '"app"',
    }
    assert rows(tmp_path / "default", files) == [("PFX101", "app/templates/sys.j2", 1)]
