"""Values followed to the prompt that holds them, on patterns seen in real applications (issue 10).

Each test writes a small project under ``tmp_path`` and runs the real CLI,
``prefixlint check --output-format json``, in a subprocess.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.cli_support import needs_analyzer
from tests.cli_support import project_findings as _findings
from tests.cli_support import write_project as _write

pytestmark = needs_analyzer

# Static text long enough that a value ahead of it matters (well over 100 tokens).
GUIDE = "\n".join(
    f"Guideline {i}: cite the shipment record you used, and say when a field is missing from it."
    for i in range(14)
)


def _rows(findings: list[dict], path: str) -> list[int]:
    return sorted(f["location"]["row"] for f in findings if Path(f["filename"]).as_posix().endswith(path))


def test_table_item_read_through_a_local_name_is_a_template(tmp_path: Path) -> None:
    # ``tmpl = TABLE["key"]`` then ``tmpl.format(...)``: the table item's placeholders are filled
    # (it was read as plain text, with the retrieved documents lost).
    texts = f'TEXTS = {{}}\n\nTEXTS["brief"] = """Shipment records:\n{{records}}\n---\n{GUIDE}\n"""\n'
    _write(
        tmp_path,
        {
            "desk/__init__.py": "",
            "desk/texts.py": texts,
            "desk/answer.py": """
                from openai import OpenAI

                from desk.texts import TEXTS

                client = OpenAI()


                def reply(question, index):
                    found = index.similarity_search(question, k=4)
                    records = "\\n".join(d.page_content for d in found)
                    tmpl = TEXTS["brief"]
                    system = tmpl.format(records=records)
                    return client.chat.completions.create(
                        model="gpt-4o",
                        messages=[
                            {"role": "system", "content": system},
                            {"role": "user", "content": question},
                        ],
                    )
            """,
        },
    )
    found = [f for f in _findings(tmp_path) if f["filename"].endswith("texts.py")]
    assert [f["location"]["row"] for f in found] == [4]
    assert found[0]["value"]["kind"] == "retrieved_context"


def _tools_module() -> str:
    tools = []
    for i in range(6):
        tools.append(
            f'''
                {{
                    "name": "lookup_{i}",
                    "description": """
                Look up a shipment by its tracking number and return its route, carrier and status.
                Use it before answering a question about shipment {i}.
                    """.strip(),
                    "parameters": {{
                        "type": "object",
                        "properties": {{
                            "tracking": {{"type": "string", "description": "The tracking number"}},
                            "depth": {{"type": "integer", "minimum": -1}},
                        }},
                        "required": ["tracking"],
                    }},
                }},'''
        )
    return "TOOLS = [" + "".join(tools) + "\n]\n"


def test_json_of_an_imported_literal_tool_list_is_static(tmp_path: Path) -> None:
    # ``json.dumps(TOOLS)`` of a nested literal defined in another module renders the same text on
    # every call: the observations ahead of it cost the whole tools block, and the dump itself is
    # not unsorted-JSON noise.
    _write(
        tmp_path,
        {
            "bot/__init__.py": "",
            "bot/tools.py": textwrap.dedent(_tools_module()),
            "bot/prompts.py": '''
                LOOP = """You plan shipments.
                Observations so far:
                {observations}

                Tools you may call:
                {tools}"""
            ''',
            "bot/loop.py": """
                import json

                from openai import OpenAI

                from bot.prompts import LOOP
                from bot.tools import TOOLS

                client = OpenAI()


                class Planner:
                    def __init__(self):
                        self.notes = []

                    def observe(self, tool_result):
                        self.notes.append(f"Observed: {json.dumps(tool_result)}")

                    def step(self):
                        prompt = LOOP.format(
                            observations="\\n".join(self.notes),
                            tools=json.dumps(TOOLS, indent=2),
                        )
                        return client.chat.completions.create(
                            model="gpt-4o", messages=[{"role": "user", "content": prompt}]
                        )
            """,
        },
    )
    findings = _findings(tmp_path)
    assert _rows(findings, "bot/prompts.py") == [3]
    assert _rows(findings, "bot/loop.py") == []


def test_template_held_by_a_settings_field_default(tmp_path: Path) -> None:
    # ``config.prompts.answer.format(...)``: the config comes from a function annotated to return a
    # settings class, ``prompts`` is a field of another settings class, and ``answer`` defaults to a
    # template joined from literals on several lines (one an f-string of a constant).
    policy = " ".join(
        f"Policy {i}: quote the order note you rely on and never guess a date." for i in range(14)
    )
    texts = (
        f"POLICY = {policy!r}\n"
        "\n"
        "ANSWER = (\n"
        '    "Answer from the order notes.\\n\\n"\n'
        '    "Notes:\\n{notes}\\n\\n"\n'
        '    f"{POLICY}\\n\\n"\n'
        '    "Reply in {style}."\n'
        ")\n"
    )
    _write(
        tmp_path,
        {
            "shop/__init__.py": "",
            "shop/texts.py": texts,
            "shop/settings.py": """
                from pydantic import BaseModel, Field

                from shop.texts import ANSWER


                class PromptConfig(BaseModel):
                    answer: str = ANSWER
                    system: str = "You answer questions about orders."


                class AppConfig(BaseModel):
                    prompts: PromptConfig = Field(default_factory=PromptConfig)


                def load_config(raw=None) -> AppConfig:
                    if raw is None:
                        return AppConfig()
                    return AppConfig.model_validate(raw)
            """,
            "shop/service.py": """
                from shop.settings import load_config


                async def answer(question, store, llm, raw=None):
                    config = load_config(raw)
                    prompts = config.prompts
                    hits = store.similarity_search(question)
                    notes = "\\n".join(h.page_content for h in hits)
                    messages = [
                        {"role": "system", "content": prompts.system},
                        {"role": "user", "content": prompts.answer.format(notes=notes, style="short")},
                    ]
                    return await llm.call(messages=messages)
            """,
        },
    )
    found = [f for f in _findings(tmp_path) if f["filename"].endswith("texts.py")]
    assert [(f["location"]["row"], f["location"]["column"]) for f in found] == [(5, 14)]
    assert found[0]["value"]["kind"] == "retrieved_context"


def _agent_project(root: Path, base_think: str) -> None:
    guide = textwrap.indent(GUIDE, " " * 16).lstrip()
    _write(
        root,
        {
            "crawl/__init__.py": "",
            "crawl/prompts.py": f'''
                SYSTEM = "You are a web agent."

                STEP = """Where you are:
                {{page}}

                {guide}
                """
            ''',
            "crawl/helper.py": """
                from datetime import datetime

                from crawl.prompts import STEP


                class PageHelper:
                    def __init__(self, browser):
                        self.browser = browser

                    def next_prompt(self):
                        seen = f"{datetime.now():%H:%M:%S}: {self.browser.url}"
                        return STEP.format(page=seen)
            """,
            "crawl/base.py": f"""
                from openai import OpenAI

                from crawl.prompts import SYSTEM

                client = OpenAI()


                def user_message(text):
                    return {{"role": "user", "content": text}}


                class Agent:
                    step_prompt: str = ""

                    def __init__(self):
                        self.messages = []

                    def think(self):
{textwrap.indent(textwrap.dedent(base_think), " " * 24)}
            """,
            "crawl/web.py": """
                from typing import Optional

                from crawl.base import Agent
                from crawl.helper import PageHelper


                class WebAgent(Agent):
                    helper: Optional[PageHelper] = None

                    def think(self):
                        self.step_prompt = self.helper.next_prompt()
                        return super().think()
            """,
        },
    )


@pytest.mark.parametrize(
    "append",
    [
        "msg = user_message(self.step_prompt)\nself.messages += [msg]",
        'self.messages.append({"role": "user", "content": self.step_prompt})',
    ],
)
def test_fill_appended_as_the_newest_turn_of_a_kept_conversation_is_not_a_finding(
    tmp_path: Path, append: str
) -> None:
    # The filled step prompt goes back to the agent, which appends it to the conversation it keeps:
    # only that (growing) conversation precedes it, so nothing after the page could be cached.
    body = append.replace("\n", "\n" + " " * 12)
    _agent_project(
        tmp_path,
        f"""
        if self.step_prompt:
            {body}
        return client.chat.completions.create(
            model="gpt-4o", messages=[{{"role": "system", "content": SYSTEM}}, *self.messages]
        )
        """,
    )
    assert _rows(_findings(tmp_path), "crawl/prompts.py") == []


def test_fill_sent_as_a_fresh_first_turn_is_still_a_finding(tmp_path: Path) -> None:
    # The same fill as the only user message after a static system prompt: the guide after the page
    # could be cached, so the page is reported.
    _agent_project(
        tmp_path,
        """
        messages = [{"role": "system", "content": SYSTEM}, user_message(self.step_prompt)]
        return client.chat.completions.create(model="gpt-4o", messages=messages)
        """,
    )
    assert _rows(_findings(tmp_path), "crawl/prompts.py") == [4]


def test_answers_gathered_by_an_inner_function_are_per_request(tmp_path: Path) -> None:
    # A map step's answers (an inner ``async def`` over the question, gathered), unpacked with
    # ``for n, points in enumerate(...)`` and a nested loop, fill a table template that is sent to
    # a model function we cannot see: the answers sit ahead of the whole guide.
    texts = f'TABLE = {{}}\n\nTABLE["merge"] = """Reviewer notes:\n{{notes}}\n\n{GUIDE}\n"""\n'
    _write(
        tmp_path,
        {
            "review/__init__.py": "",
            "review/texts.py": texts,
            "review/merge.py": """
                import asyncio

                from review.texts import TABLE


                async def _review_all(question, parts, config):
                    ask = config["model"]

                    async def _one(part):
                        reply = await ask(question, system_prompt="Review this part: " + part)
                        return reply.get("points", [])

                    return await asyncio.gather(*[_one(p) for p in parts])


                async def merged_answer(question, parts, config):
                    ask = config["model"]
                    reviews = await _review_all(question, parts, config)
                    lines = []
                    for n, points in enumerate(reviews):
                        for point in points:
                            lines.append(f"Reviewer {n}: {point['text']}")
                    notes = "\\n".join(lines)
                    return await ask(question, TABLE["merge"].format(notes=notes))
            """,
        },
    )
    assert _rows(_findings(tmp_path), "review/texts.py") == [4]


def test_a_prompt_file_opened_by_a_concatenated_literal_path(tmp_path: Path) -> None:
    """``open("prompts/" "system.txt")`` is a path like any literal (it once crashed the analysis)."""
    _write(
        tmp_path,
        {
            "prompts/system.txt": "Today is {today}.\n" + GUIDE + "\n",
            "app.py": """
                from datetime import datetime

                from openai import OpenAI

                client = OpenAI()


                def ask(q):
                    with open("prompts/" "system.txt") as f:
                        system = f.read().format(today=datetime.now())
                    return client.chat.completions.create(
                        model="gpt-4o",
                        messages=[{"role": "system", "content": system}, {"role": "user", "content": q}],
                    )
            """,
        },
    )
    found = _findings(tmp_path)
    assert [f["code"] for f in found] == ["PFX101"], found
    assert _rows(found, "prompts/system.txt") == [1]


def test_a_comprehension_variable_is_an_item_of_its_sequence(tmp_path: Path) -> None:
    # Each batch of retrieved records goes to a helper through a comprehension
    # (``gather(*[self._one(records=b) for b in batches])``): ``b`` is an item of the per-request
    # batches, not an unknown free name, so the records ahead of the guide are a finding.
    texts = f'BATCH_PROMPT = """Shipment records:\n{{records}}\n---\n{GUIDE}\n"""\n'
    _write(
        tmp_path,
        {
            "desk/__init__.py": "",
            "desk/texts.py": texts,
            "desk/batches.py": """
                import asyncio

                from openai import AsyncOpenAI

                from desk.texts import BATCH_PROMPT

                client = AsyncOpenAI()


                class Desk:
                    def __init__(self, index):
                        self.index = index

                    async def _one(self, records, question):
                        system = BATCH_PROMPT.format(records=records)
                        return await client.chat.completions.create(
                            model="gpt-4o",
                            messages=[
                                {"role": "system", "content": system},
                                {"role": "user", "content": question},
                            ],
                        )

                    async def answer(self, question):
                        found = self.index.similarity_search(question, k=20)
                        batches = [found[i : i + 5] for i in range(0, len(found), 5)]
                        jobs = [self._one(records=b, question=question) for b in batches]
                        return await asyncio.gather(*jobs)
            """,
        },
    )
    found = [f for f in _findings(tmp_path) if f["filename"].endswith("texts.py")]
    assert [f["location"]["row"] for f in found] == [2]
    assert found[0]["value"]["timing"] == "request"


@pytest.mark.parametrize(
    ("tail", "fill", "rows"),
    [
        ("Text: {{input_text}}\n", "SUMMARY_PROMPT.format(persona=persona)", []),
        ("Text follows.\n", "SUMMARY_PROMPT.format(persona=persona)", [2]),
        # filled marker by marker: a marker left is one another helper replaces, not a template
        ("Text: {input_text}\n", 'SUMMARY_PROMPT.replace("{persona}", persona)', [2]),
    ],
)
def test_a_filled_text_that_still_holds_placeholders_is_a_template_not_a_request(
    tmp_path: Path, tail: str, fill: str, rows: list[int]
) -> None:
    # A tuning step fills the persona into a template whose ``{{input_text}}`` survives as
    # ``{input_text}``, and writes the result to a file for a later stage: no request sends it as
    # it is, so the persona is no value ahead of a prompt body. Without the left placeholder the
    # same prompt-named text is still reported.
    texts = f'SUMMARY_PROMPT = """\nYou are {{persona}}.\n{GUIDE}\n{tail}"""\n'
    _write(
        tmp_path,
        {
            "tune/__init__.py": "",
            "tune/texts.py": texts,
            "tune/make.py": """
                from pathlib import Path

                from tune.texts import SUMMARY_PROMPT


                def create_summary_prompt(model, docs, out: Path):
                    persona = model.complete("Describe an expert for: " + docs[0]).content
                    prompt = FILL
                    out.write_text(prompt)
                    return prompt
            """.replace("FILL", fill),
        },
    )
    assert _rows(_findings(tmp_path), "tune/texts.py") == rows
