"""Values followed across functions and modules, and where prompts are sent (issue 10).

Each test writes a small multi-module project (with a subpackage) under ``tmp_path`` and runs the
real CLI, ``prefixlint check --output-format json``, in a subprocess.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import needs_analyzer
from tests.cli_support import project_findings as _findings
from tests.cli_support import write_project as _write

pytestmark = needs_analyzer

# Long enough static text that a value ahead of it matters (well over 100 tokens).
RULES = " ".join(
    f"Rule {i}: answer only questions about payroll setup, employee records and tax forms, and cite the form."
    for i in range(12)
)


# A module whose ``send(question, header)`` puts ``header`` ahead of the rules in the system prompt.
SEND_WITH_HEADER = f'''
    from openai import OpenAI

    client = OpenAI()
    RULES = """{RULES}"""


    def send(question, header):
        return client.chat.completions.create(
            model="gpt-4.1",
            messages=[
                {{"role": "system", "content": header + "\\n" + RULES}},
                {{"role": "user", "content": question}},
            ],
        )
'''


def _at(findings: list[dict], path: str) -> list[dict]:
    return [f for f in findings if Path(f["filename"]).as_posix().endswith(path)]


def _chain_files(finding: dict) -> set[str]:
    return {Path(loc["filename"]).name for loc in finding.get("chain", []) if "filename" in loc}


def _prompts_module() -> str:
    return f'''
        SYSTEM_TEMPLATE = """Today is {{current_date}}.
        {RULES}
        """

        PROMPTS = {{}}
        PROMPTS["answer"] = """Context:
        {{context_data}}
        ---
        {RULES}
        """

        GREETING = """Mode: {{mode}}
        {RULES}
        """
    '''


def test_template_filled_in_another_module_and_sent_through_in_house_helper(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/prompts/__init__.py": "",
            "app/prompts/system.py": _prompts_module(),
            "app/llm.py": """
                from openai import OpenAI

                client = OpenAI()


                def call_model(messages):
                    return client.chat.completions.create(model="gpt-4.1", messages=messages)
            """,
            "app/agent.py": """
                from datetime import datetime

                from app.llm import call_model
                from app.prompts.system import SYSTEM_TEMPLATE


                def answer(question):
                    system = SYSTEM_TEMPLATE.format(current_date=datetime.now().strftime("%H:%M:%S"))
                    return call_model([
                        {"role": "system", "content": system},
                        {"role": "user", "content": question},
                    ])
            """,
        },
    )
    found = _at(_findings(tmp_path), "app/prompts/system.py")
    assert [f["location"]["row"] for f in found] == [1]  # the placeholder's line in the constant
    chain = _chain_files(found[0])
    assert {"agent.py", "llm.py"} <= chain  # the fill site, then the real API call


def test_last_user_message_through_a_wrapper_is_not_a_finding(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "svc/__init__.py": "",
            "svc/client.py": """
                from openai import OpenAI

                client = OpenAI()


                def call_model(messages):
                    return client.chat.completions.create(model="gpt-4.1", messages=messages)


                def ask(messages):
                    return call_model(messages)
            """,
            "svc/handlers.py": f'''
                import uuid

                from svc.client import ask

                RULES = """{RULES}"""


                def handle(question):
                    request_id = str(uuid.uuid4())
                    return ask([
                        {{"role": "system", "content": RULES}},
                        {{"role": "user", "content": f"[{{request_id}}] {{question}}"}},
                    ])
            ''',
        },
    )
    assert _findings(tmp_path) == []


def test_wrapper_with_a_per_request_value_ahead_of_the_rules_is_found(tmp_path: Path) -> None:
    # the same helpers, but the id is placed ahead of the static rules: found at the caller's line
    _write(
        tmp_path,
        {
            "svc/__init__.py": "",
            "svc/client.py": """
                from openai import OpenAI

                client = OpenAI()


                def call_model(messages):
                    return client.chat.completions.create(model="gpt-4.1", messages=messages)
            """,
            "svc/handlers.py": f'''
                import uuid

                from svc.client import call_model

                RULES = """{RULES}"""


                def handle(question):
                    request_id = str(uuid.uuid4())
                    return call_model([
                        {{"role": "system", "content": f"Request {{request_id}}\\n" + RULES}},
                        {{"role": "user", "content": question}},
                    ])
            ''',
        },
    )
    found = _findings(tmp_path)
    assert [(Path(f["filename"]).name, f["code"]) for f in found] == [("handlers.py", "PFX102")]
    assert "client.py" in _chain_files(found[0])


def test_parameter_resolved_through_callers(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/core/__init__.py": "",
        "pkg/core/build.py": SEND_WITH_HEADER,
        "pkg/main.py": """
            from pkg.core.build import send

            HEADER = "You are the payroll assistant."


            def run(question):
                return send(question, HEADER)


            def run_again(question):
                return send(question, header="You are the payroll assistant, second desk.")
        """,
    }
    _write(tmp_path, files)
    assert _findings(tmp_path) == []  # every caller passes a constant: static

    # one caller passes a per-request value: the parameter takes its kind, with the chain
    files["pkg/late.py"] = """
        import time

        from pkg.core.build import send


        def run_late(question):
            return send(question, f"Time: {time.time()}")
    """
    _write(tmp_path, files)
    found = _findings(tmp_path)
    assert [(Path(f["filename"]).name, f["code"]) for f in found] == [("late.py", "PFX101")]
    assert "build.py" in _chain_files(found[0])


def test_parameter_without_visible_caller_is_not_called_per_request(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/api.py": f'''
                from openai import OpenAI

                client = OpenAI()
                RULES = """{RULES}"""


                def public_entry(question, header):
                    return client.chat.completions.create(
                        model="gpt-4.1",
                        messages=[
                            {{"role": "system", "content": header + "\\n" + RULES}},
                            {{"role": "user", "content": question}},
                        ],
                    )
            ''',
        },
    )
    for finding in _findings(tmp_path):
        assert "per request" not in finding["message"]


def test_prompt_table_and_system_prompt_keyword_to_an_unknown_helper(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "rag/__init__.py": "",
            "rag/prompts/__init__.py": "",
            "rag/prompts/system.py": _prompts_module(),
            "rag/query.py": """
                from rag.prompts.system import PROMPTS


                async def answer(query, store, config):
                    model_func = config["model_func"]
                    chunks = store.similarity_search(query)
                    context = "\\n".join(c.page_content for c in chunks)
                    template = PROMPTS["answer"]
                    return await model_func(query, system_prompt=template.format(context_data=context))
            """,
        },
    )
    found = _at(_findings(tmp_path), "rag/prompts/system.py")
    # the table item's placeholder line (the unused SYSTEM_TEMPLATE is reported by its name alone)
    assert [(f["location"]["row"], f["code"]) for f in found if f["code"] == "PFX105"] == [(7, "PFX105")]
    assert "query.py" in _chain_files(next(f for f in found if f["code"] == "PFX105"))


def test_placeholder_filled_only_with_config_is_a_process_value(tmp_path: Path) -> None:
    """``MODE`` is read from the environment once, at import, in another module: the placeholder it
    fills is a process value (PFX201), never a per-request or unknown one."""
    _write(
        tmp_path,
        {
            "bot/__init__.py": "",
            "bot/prompts/__init__.py": "",
            "bot/prompts/system.py": f'''
                GREETING = """Mode: {{mode}}
                {RULES}
                """
            ''',
            "bot/settings.py": """
                import os

                MODE = os.environ.get("BOT_MODE", "strict")
            """,
            "bot/chat.py": """
                from openai import OpenAI

                from bot.prompts.system import GREETING
                from bot.settings import MODE

                client = OpenAI()


                def reply(question):
                    return client.chat.completions.create(
                        model="gpt-4.1",
                        messages=[
                            {"role": "system", "content": GREETING.format(mode=MODE)},
                            {"role": "user", "content": question},
                        ],
                    )
            """,
        },
    )
    found = _at(_findings(tmp_path), "bot/prompts/system.py")
    assert [(f["code"], f["location"]["row"]) for f in found] == [("PFX201", 1)]
    assert "once per process" in found[0]["message"]


def test_google_genai_and_agent_framework_sinks(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "agents/__init__.py": "",
            "agents/prompts.py": f'''
                INSTRUCTIONS = """Session {{session_id}}.
                {RULES}
                """
            ''',
            "agents/gemini.py": """
                from datetime import datetime

                from google import genai

                from agents.prompts import INSTRUCTIONS

                client = genai.Client()


                def ask(question):
                    body = INSTRUCTIONS.replace("{session_id}", "-")
                    prompt = f"Now: {datetime.now().isoformat()}\\n" + body
                    return client.models.generate_content(model="gemini-2.5-flash", contents=prompt)
            """,
            "agents/crew.py": """
                import uuid

                from agents import Agent as _unused  # noqa: F401  (a local package named like the SDK)
                from langgraph.prebuilt import create_react_agent

                from agents.prompts import INSTRUCTIONS


                def build(model, tools):
                    return create_react_agent(
                        model, tools, prompt=INSTRUCTIONS.format(session_id=uuid.uuid4().hex)
                    )
            """,
        },
    )
    found = _findings(tmp_path)
    gemini = _at(found, "agents/gemini.py")
    assert [f["code"] for f in gemini] == ["PFX101"]
    prompts = _at(found, "agents/prompts.py")
    assert [(f["location"]["row"], f["code"]) for f in prompts] == [(1, "PFX102")]


def test_replace_fill_and_fill_site_without_visible_sink(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "voice/__init__.py": "",
            "voice/prompts/__init__.py": "",
            "voice/prompts/text.py": f'''
                PERSONA = """You are the front desk.
                Caller: {{{{ caller_name }}}}
                {RULES}
                """

                THINK = """Clock: {{current_time}}
                {RULES}
                """
            ''',
            "voice/session.py": """
                from datetime import datetime

                from voice.prompts.text import PERSONA, THINK


                class Session:
                    def __init__(self, settings, caller):
                        # where the prompt goes (a settings dict of a voice SDK) is not visible
                        settings["think"] = THINK.format(current_time=datetime.now().strftime("%H:%M:%S"))
                        self.persona = PERSONA.replace("{{ caller_name }}", caller.display_name)
            """,
        },
    )
    found = sorted(
        (f["location"]["row"], f["code"]) for f in _at(_findings(tmp_path), "voice/prompts/text.py")
    )
    assert found == [(2, "PFX104"), (6, "PFX101")]


def test_chat_template_messages_from_an_imported_module(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "notes/__init__.py": "",
            "notes/llm/__init__.py": "",
            "notes/llm/templates.py": f'''
                SYSTEM = """Current time: {{now_time}}
                {RULES}
                """

                MESSAGES = [("system", SYSTEM), ("human", "{{request}}")]
            ''',
            "notes/llm/chain.py": """
                from langchain_core.prompts import ChatPromptTemplate

                import notes.llm.templates as templates

                PROMPT = ChatPromptTemplate.from_messages(templates.MESSAGES)
            """,
        },
    )
    found = _at(_findings(tmp_path), "notes/llm/templates.py")
    assert [(f["location"]["row"], f["code"]) for f in found] == [(1, "PFX101")]


def test_a_test_file_calling_with_a_literal_does_not_make_the_value_static(tmp_path: Path) -> None:
    """Tests call application code with literals; they are not the application's callers."""
    files = {
        "pkg/__init__.py": "",
        "pkg/agent.py": f'''
            from openai import OpenAI

            client = OpenAI()
            RULES = """{RULES}"""


            def research(question):
                system = "Research task: " + question + "\\n" + RULES
                return client.chat.completions.create(
                    model="gpt-4.1",
                    messages=[{{"role": "system", "content": system}}, {{"role": "user", "content": "Go."}}],
                )
        ''',
        "tests/test_agent.py": """
            from pkg.agent import research


            def test_research():
                assert research("What is Python?")
        """,
    }
    _write(tmp_path, files)
    found = _findings(tmp_path)
    # no application caller in view: the parameter is what its name says (user input), not static
    assert [(Path(f["filename"]).name, f["code"]) for f in found] == [("agent.py", "PFX109")], found

    # a test module's own helpers still take their values from its tests
    files["tests/helpers.py"] = f'''
        from openai import OpenAI

        client = OpenAI()
        RULES = """{RULES}"""


        def ask(question):
            system = "Research task: " + question + "\\n" + RULES
            return client.chat.completions.create(
                model="gpt-4.1",
                messages=[{{"role": "system", "content": system}}, {{"role": "user", "content": "Go."}}],
            )
    '''
    files["tests/test_helpers.py"] = """
        from tests.helpers import ask


        def test_ask():
            assert ask("What is Python?")
    """
    _write(tmp_path, files)
    found = _findings(tmp_path)
    assert [(Path(f["filename"]).name, f["code"]) for f in found] == [("agent.py", "PFX109")], found


def test_a_process_value_of_one_caller_outranks_an_unknown_value_of_another(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/build.py": SEND_WITH_HEADER,
        "pkg/a_desk.py": """
            from pkg.build import send


            def ask(question, desk):
                return send(question, desk.banner)
        """,
        "pkg/z_deploy.py": """
            import os

            from pkg.build import send

            HOST = os.environ["HOSTNAME"]


            def ask_here(question):
                return send(question, HOST)
        """,
    }
    _write(tmp_path, files)
    found = _findings(tmp_path)
    # per-request values first, then values fixed per process, then values of unknown nature
    assert [(Path(f["filename"]).name, f["code"]) for f in found] == [("z_deploy.py", "PFX201")]
