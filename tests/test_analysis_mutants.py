"""Analysis behaviour that a plausible change to the analyzer would alter (issue 16).

Each test writes a small project under ``tmp_path`` and runs the real ``prefixlint check`` on it, so
it asserts findings a user sees, not the analyzer's internals. The docstring of each test names the
change to the analysis it catches (checked by applying that change by hand).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke

RULES = (
    "You are a careful payroll assistant. Answer briefly, cite the help centre, never guess numbers. "
    "Refuse questions about other employees and say which policy applies to each answer you give. "
)
OPENAI = "from openai import OpenAI\n\nclient = OpenAI()\n"
SEND = (
    'client.chat.completions.create(model="gpt-4.1", messages=['
    '{{"role": "system", "content": {system}}}, {{"role": "user", "content": q}}])'
)


def send(system: str) -> str:
    """A chat call that sends ``system`` ahead of the user's question ``q``."""
    return SEND.format(system=system)


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))


def check(root: Path, files: dict[str, str], *args: str) -> list[dict]:
    """Findings of ``prefixlint check`` (JSON) on a fresh project made of ``files``."""
    write(root, files)
    code, out, err = invoke(["check", "--no-cache", "--output-format", "json", *args, "."], root)
    assert code in (0, 1), err
    return json.loads(out)


def codes(findings: list[dict]) -> list[tuple[str, str, int]]:
    """(code, file, line) of each finding."""
    return [(f["code"], f["filename"], f["location"]["row"]) for f in findings]


# --- templating.render: a render at import time fixes what the template computes itself ---------


def test_template_rendered_at_import_time_is_a_process_value(tmp_path: Path) -> None:
    """A module-level ``Template(...).render()`` runs once per process: the timestamp the template
    reads is PFX201 there, and PFX101 only where a function renders it per request.
    Catches: dropping the import-time branch of ``render()`` (both would say PFX101)."""
    app = (
        "from jinja2 import Template\n" + OPENAI + f"RULES = {RULES!r}\n"
        'SYSTEM = Template("Today is {{ current_date }}.\\n" + RULES).render()\n\n\n'
        f"def ask(q):\n    return {send('SYSTEM')}\n\n\n"
        "def ask_fresh(q):\n"
        '    system = Template("Today is {{ current_date }}.\\n" + RULES).render()\n'
        f"    return {send('system')}\n"
    )
    found = codes(check(tmp_path, {"app.py": app}))
    assert found == [("PFX201", "app.py", 6), ("PFX101", "app.py", 14)]


# --- += and if without else ----------------------------------------------------------------------


def test_plus_equals_carries_a_timestamp_ahead_of_static_text(tmp_path: Path) -> None:
    """``system += f"...{now}..."`` then ``system += RULES``: the timestamp lands ahead of the rules,
    and the user message (a bare ``q``) holds no timestamp of its own.
    Catches: ``+=`` dropped from the replayed ops, or replayed in the wrong order."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q):\n"
        '    system = "Payroll desk.\\n"\n'
        '    system += f"Now: {datetime.now():%H:%M}.\\n"\n'
        "    system += RULES\n"
        f"    return {send('system')}\n\n\n"
        "def ask_late(q):\n"
        "    system = RULES\n"
        '    system += f"Now: {datetime.now():%H:%M}."\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX101", "app.py", 10)]
    assert found[0]["location"]["column"] == 23  # the ``datetime.now()`` inside the f-string


def test_if_without_else_that_overrides_a_prompt(tmp_path: Path) -> None:
    """An ``if`` with no ``else`` that replaces a static prompt with a dated one makes the prompt
    dated on that path; one that replaces a dated prompt with a static one leaves it dated on the
    other path. Both are reported, as conditional.
    Catches: a conditional assignment read as unconditional (either way), or its branch not walked."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q, urgent):\n"
        "    system = RULES\n"
        "    if urgent:\n"
        '        system = f"Now: {datetime.now():%H:%M}.\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        "def ask_short(q, short):\n"
        '    system = f"Today: {datetime.now():%Y-%m-%d}.\\n" + RULES\n'
        "    if short:\n"
        "        system = RULES\n"
        f"    return {send('system')}\n\n\n"
        "def ask_static(q, short):\n"
        "    system = RULES\n"
        "    if short:\n"
        '        system = "Be brief. " + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX101", "app.py", 11), ("PFX101", "app.py", 16)]
    assert all("(conditionally)" in f["message"] for f in found)


# --- the chain of locations through a helper ----------------------------------------------------


def steps(finding: dict) -> list[tuple[str, int]]:
    """(file, line) of the finding's chain, origin first."""
    return [(c["filename"], c["location"]["row"]) for c in finding["chain"]]


def test_chain_runs_from_the_value_through_the_helper_to_the_sink(tmp_path: Path) -> None:
    """The finding sits where the timestamp is computed; its chain then lists the argument, the
    helper's placeholder (the line a user moves), the helper call, the message and the sink.
    Catches: a call, a bound parameter or a message dropping its step from the chain."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def build(moment):\n"
        '    return f"Now {moment}.\\n" + RULES\n\n\n'
        "def ask(q):\n"
        "    stamp = datetime.now()\n"
        "    system = build(stamp)\n"
        "    return client.chat.completions.create(\n"
        '        model="gpt-4.1",\n'
        '        messages=[{"role": "system", "content": system}, {"role": "user", "content": q}],\n'
        "    )\n"
    )
    (finding,) = check(tmp_path, {"app.py": app})
    assert (finding["code"], finding["location"]["row"]) == ("PFX101", 13)
    assert steps(finding) == [("app.py", 14), ("app.py", 9), ("app.py", 14), ("app.py", 17), ("app.py", 15)]


def test_chain_through_a_helper_in_another_module(tmp_path: Path) -> None:
    """A prompt helper in another module: the finding is in that module, and the chain comes back
    through the call in the caller to its sink."""
    files = {
        "helpers.py": "from datetime import datetime\n\n"
        f"RULES = {RULES!r}\n\n\n"
        "def system_prompt():\n"
        '    return f"Now {datetime.now():%H:%M}.\\n" + RULES\n',
        "app.py": "from helpers import system_prompt\n" + OPENAI + "\n\n"
        "def ask(q):\n"
        "    system = system_prompt()\n"
        f"    return {send('system')}\n",
    }
    (finding,) = check(tmp_path, {**files})
    assert (finding["code"], finding["filename"], finding["location"]["row"]) == ("PFX101", "helpers.py", 7)
    assert steps(finding) == [("app.py", 8), ("app.py", 9), ("app.py", 9)]  # call, message, sink
