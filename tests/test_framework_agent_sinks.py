"""Agent frameworks' system-prompt parameters, also through the project's own agent classes (issue 10).

lagent sends an agent's ``template=`` as the first system message and, for ``AgentForInternLM``,
the output parser's instruction (``output_format=InterpreterParser(template=...)``) right after it.
An application derives its agent from such a class, sometimes picking one of two classes at run
time. Each case is a small fresh project run through the real CLI (lagent need not be installed).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = " ".join(
    f"Step {i}: break the question into sub-questions, search each one, and write down what you found."
    for i in range(60)
)

PROMPTS = f"PLANNER_RULES = {RULES!r}\n"

AGENTS = textwrap.dedent(
    """
    from lagent.agents import AgentForInternLM


    class StreamingPlanner(AgentForInternLM):
        def stream(self, message):
            yield from self.forward(message)


    class Planner(StreamingPlanner):
        def __init__(self, budget, **kwargs):
            self.budget = budget
            super().__init__(**kwargs)


    class FixedPlanner(StreamingPlanner):
        def __init__(self, llm, template, output_format):
            super().__init__(llm=llm, template="Plan carefully.")
            self.shown = (template, output_format)
    """
)


def _findings(tmp_path: Path, build: str) -> list[tuple[str, int]]:
    files = {
        "app/__init__.py": "",
        "app/prompts.py": PROMPTS,
        "app/agents.py": AGENTS,
        "app/build.py": textwrap.dedent(build),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "."], cwd=tmp_path)
    assert code in (0, 1), out
    found = [f for f in json.loads(out) if not f["code"].startswith("PFX0")]
    return [(f["filename"], f["location"]["row"]) for f in found]


HEAD = """
from datetime import datetime

from lagent.prompts import InterpreterParser

from app.agents import FixedPlanner, Planner
from app.prompts import PLANNER_RULES
"""


def test_a_date_as_the_template_of_a_derived_agent_chosen_at_run_time(tmp_path: Path) -> None:
    build = HEAD + textwrap.dedent(
        """
        def build(llm, fast):
            today = datetime.now().strftime("Today is %Y-%m-%d.")
            return (Planner if fast else Planner)(
                llm=llm, budget=3, template=today, output_format=InterpreterParser(template=PLANNER_RULES)
            )
        """
    )
    assert _findings(tmp_path, build) == [("app/build.py", 10)]


def test_a_plain_lagent_agent_does_not_send_the_parser_instruction(tmp_path: Path) -> None:
    """lagent's ``Agent`` (DefaultAggregator) sends only its template: nothing static follows the date."""
    build = textwrap.dedent(
        """
        from datetime import datetime

        from lagent.agents import Agent
        from lagent.prompts import InterpreterParser

        from app.prompts import PLANNER_RULES


        def build(llm):
            today = datetime.now().strftime("Today is %Y-%m-%d.")
            return Agent(llm=llm, template=today, output_format=InterpreterParser(template=PLANNER_RULES))
        """
    )
    assert _findings(tmp_path, build) == []


def test_a_lagent_agent_called_directly(tmp_path: Path) -> None:
    build = textwrap.dedent(
        """
        from datetime import datetime

        from lagent.agents import AgentForInternLM
        from lagent.prompts import InterpreterParser

        from app.prompts import PLANNER_RULES


        def build(llm):
            return AgentForInternLM(
                llm=llm,
                template=datetime.now().strftime("Today is %Y-%m-%d."),
                output_format=InterpreterParser(template=PLANNER_RULES),
            )
        """
    )
    assert _findings(tmp_path, build) == [("app/build.py", 13)]


def test_a_derived_agent_that_does_not_pass_keywords_on_is_not_the_framework_sink(tmp_path: Path) -> None:
    """``FixedPlanner`` sets its own template: the ``template=`` it takes is not the system prompt."""
    build = HEAD + textwrap.dedent(
        """
        def build(llm):
            today = datetime.now().strftime("Today is %Y-%m-%d.")
            return FixedPlanner(
                llm=llm, template=today, output_format=InterpreterParser(template=PLANNER_RULES)
            )
        """
    )
    assert _findings(tmp_path, build) == []
