"""A parameter's value from the project's callers (``analysis/python/callers.py``): constructors calling
``__init__`` (in the module or imported), static methods, decorated functions (called by a framework:
no callers followed), and callers in test files (left out, unless the function is a test helper).

Without a caller in view, a parameter named ``today`` is only known by its name: a day-grained
timestamp (PFX111 at the parameter's use). With the caller's ``datetime.now()`` followed, the finding
is PFX101 at the caller's argument.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer
from tests.test_flow_expressions import HEAD

pytestmark = needs_analyzer
SEND = (
    'client.chat.completions.create(model="gpt-4o", messages=['
    '{"role": "system", "content": system}, {"role": "user", "content": q}])'
)
AGENT = (
    HEAD
    + f"""

class Agent:
    def __init__(self, today):
        self.system = f"Today is {{today}}.\\n" + RULES

    def ask(self, q):
        system = self.system
        return {SEND}
"""
)
HELPER = HEAD + f'\n\ndef ask(q, today):\n    system = f"Today is {{today}}.\\n" + RULES\n    return {SEND}\n'
HELPER_ROW = 20  # the line of ``{today}`` in HELPER
CALLER = "from datetime import datetime\nfrom {module} import {name}\n\n\ndef main():\n    {call}\n"


def found(root: Path, files: dict[str, str]) -> list[tuple]:
    """(code, file, row, column) of each finding on a project of ``files``."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    return [
        (f["code"], Path(f["filename"]).as_posix(), f["location"]["row"], f["location"]["column"])
        for f in json.loads(out)
    ]


def caller(module: str, name: str, call: str) -> str:
    return CALLER.format(module=module, name=name, call=call)


def test_a_constructor_call_in_another_module_binds_init(tmp_path: Path) -> None:
    files = {
        "desk/__init__.py": "",
        "desk/agent.py": AGENT,
        "desk/main.py": caller("desk.agent", "Agent", "return Agent(datetime.now()).ask('q')"),
    }
    assert found(tmp_path, files) == [("PFX101", "desk/main.py", 6, 18)]


def test_a_constructor_call_in_the_same_module_binds_init(tmp_path: Path) -> None:
    agent = AGENT + "\n\ndef run(q):\n    return Agent(datetime.now()).ask(q)\n"
    got = found(tmp_path, {"desk/__init__.py": "", "desk/agent.py": agent})
    assert got == [("PFX101", "desk/agent.py", agent.count("\n"), 18)]


def test_a_call_of_another_class_of_the_same_name_is_not_a_caller(tmp_path: Path) -> None:
    other = "from datetime import datetime\n\n\nclass Agent:\n    pass\n\n\n"
    other += "def main():\n    Agent(datetime.now())\n"
    files = {"desk/__init__.py": "", "desk/agent.py": AGENT, "desk/other.py": other}
    assert found(tmp_path, files) == [("PFX111", "desk/agent.py", 21, 35)]  # by the name ``today``


def test_a_static_method_is_followed_to_its_callers(tmp_path: Path) -> None:
    helper = (
        HEAD
        + "\n\nclass Helper:\n    @staticmethod\n"
        + textwrap.indent(HELPER[len(HEAD) :].lstrip("\n"), "    ")
    )
    files = {
        "desk/__init__.py": "",
        "desk/agent.py": helper,
        "desk/main.py": caller("desk.agent", "Helper", "Helper.ask('q', datetime.now())"),
    }
    assert found(tmp_path, files) == [("PFX101", "desk/main.py", 6, 21)]


def test_a_function_registered_by_a_decorator_has_callers_we_cannot_see(tmp_path: Path) -> None:
    main = caller("desk.agent", "ask", "ask('q', datetime.now())")
    plain = {"desk/__init__.py": "", "desk/agent.py": HELPER, "desk/main.py": main}
    assert found(tmp_path / "plain", plain) == [("PFX101", "desk/main.py", 6, 14)]
    routed = {**plain, "desk/agent.py": HELPER.replace("\ndef ask", '\n@app.route("/ask")\ndef ask')}
    assert found(tmp_path / "routed", routed) == [("PFX111", "desk/agent.py", HELPER_ROW + 1, 26)]


def test_callers_in_test_files_are_left_out(tmp_path: Path) -> None:
    test = caller("desk.agent", "ask", "ask('q', datetime.now())").replace("def main", "def test_ask")
    for n, name in enumerate(("tests/test_agent.py", "desk/agent_test.py", "desk/conftest.py")):
        files = {"desk/__init__.py": "", "desk/agent.py": HELPER, name: test}
        assert found(tmp_path / str(n), files) == [("PFX111", "desk/agent.py", HELPER_ROW, 26)], name


def test_a_test_helper_is_followed_to_the_tests_that_call_it(tmp_path: Path) -> None:
    test = caller("tests.helpers", "ask", "ask('q', datetime.now())").replace("def main", "def test_ask")
    files = {"tests/__init__.py": "", "tests/helpers.py": HELPER, "tests/test_agent.py": test}
    assert found(tmp_path, files) == [("PFX101", "tests/test_agent.py", 6, 14)]
