"""A prompt given to an agent framework as a callable (``prompt=lambda state: ...``) is read at what it
returns, per request (issue 10).

Each case is a small fresh project run through the real CLI: an agent built with
``create_react_agent`` whose ``prompt`` is a lambda or a function of the project. The framework calls
it on every step, so a per-request value in what it returns, ahead of a long static body, is a
finding on that value; a callable that returns constant text gives none.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "\n".join(
    f"Step {i}: check the facts twice, keep the answer short, and name the tool you used for it."
    for i in range(40)
)

JINJA_HELPER = """
import os
from datetime import datetime
from jinja2 import Environment, FileSystemLoader

env = Environment(loader=FileSystemLoader(os.path.dirname(__file__)))


def build_messages(name, state):
    values = {"NOW": datetime.now().strftime("%H:%M:%S"), **state}
    system = env.get_template(f"{name}.md").render(**values)
    return [{"role": "system", "content": system}] + state["messages"]
"""


def _agent(name: str, prompt: str, extra: str = "") -> str:
    return textwrap.dedent(
        f"""
        from langgraph.prebuilt import create_react_agent
        from prompts.helper import build_messages
        {extra}

        def {name}_node(state, model):
            agent = create_react_agent(model, tools=[], prompt={prompt})
            return agent.invoke(state)
        """
    )


def _findings(root: Path) -> list[dict]:
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "."], cwd=root)
    assert code in (0, 1), out
    return [f for f in json.loads(out) if not f["code"].startswith("PFX0")]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _rows(findings: list[dict], filename: str) -> list[int]:
    return sorted({f["location"]["row"] for f in findings if f["filename"] == filename})


def test_lambda_returning_a_rendered_message_list(tmp_path: Path):
    # two agents share the helper; each names its own template, and each template is reported
    root = _write(
        tmp_path,
        {
            "prompts/__init__.py": "",
            "prompts/helper.py": JINJA_HELPER,
            "prompts/writer.md": "---\nNOW: {{ NOW }}\n---\n" + RULES,
            "prompts/critic.md": "---\nNOW: {{ NOW }}\n---\nYou criticise drafts.\n" + RULES,
            "writer.py": _agent("writer", "lambda state: build_messages('writer', state)"),
            "critic.py": _agent("critic", "lambda state: build_messages('critic', state)"),
        },
    )
    findings = _findings(root)
    assert _rows(findings, "prompts/writer.md") == [2]
    assert _rows(findings, "prompts/critic.md") == [2]
    (writer,) = [f for f in findings if f["filename"] == "prompts/writer.md" and f["severity"] != "info"]
    assert any(c["filename"] == "writer.py" for c in writer["chain"])  # the agent is in the chain


def test_lambda_whose_template_has_no_live_expression(tmp_path: Path):
    # ``{ { NOW } }`` is literal text for Jinja: the lambda returns static text
    root = _write(
        tmp_path,
        {
            "prompts/__init__.py": "",
            "prompts/helper.py": JINJA_HELPER,
            "prompts/planner.md": "---\nNOW: { { NOW } }\n---\n" + RULES,
            "planner.py": _agent("planner", "lambda state: build_messages('planner', state)"),
        },
    )
    assert _rows(_findings(root), "prompts/planner.md") == []


def test_named_function_returning_text(tmp_path: Path):
    agent = _agent("dated", "dated_header", extra="import datetime")
    agent += textwrap.dedent(
        """
        def dated_header(state):
            return "Time: " + datetime.datetime.now().isoformat() + "\\n" + RULES
        """
    )
    agent += f'\nRULES = """{RULES}"""\n'
    root = _write(tmp_path, {"prompts/__init__.py": "", "prompts/helper.py": JINJA_HELPER, "agent.py": agent})
    findings = _findings(root)
    lines = agent.splitlines()
    row = next(i for i, ln in enumerate(lines, 1) if "isoformat()" in ln)
    assert row in _rows(findings, "agent.py")


def test_lambda_returning_constant_text(tmp_path: Path):
    root = _write(
        tmp_path,
        {
            "prompts/__init__.py": "",
            "prompts/helper.py": JINJA_HELPER,
            "agent.py": _agent(
                "fixed",
                "lambda state: FIXED",
                extra=f'\nFIXED = """You help.\n{RULES}"""\n',
            ),
        },
    )
    assert _rows(_findings(root), "agent.py") == []
