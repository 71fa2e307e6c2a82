"""Layout shapes produced by the Python analyzer for each way people build prompts."""

from __future__ import annotations

import textwrap
from pathlib import Path

from prefixlint.analysis.python import ProjectContext, analyze_python
from prefixlint.model.layout import Cardinality, DynamicKind, Layout, Nondeterminism, Section, Timing
from prefixlint.model.settings import Settings

RULES = "You are a careful payroll assistant. Answer briefly, cite the help centre, never guess numbers."


def analyze(
    tmp_path: Path,
    code: str,
    files: dict[str, str] | None = None,
    main: str = "app.py",
    settings: Settings | None = None,
):  # type: ignore[no-untyped-def]
    settings = settings or Settings()
    for name, text in (files or {}).items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    path = tmp_path / main
    path.parent.mkdir(parents=True, exist_ok=True)
    text = textwrap.dedent(code)
    path.write_text(text)
    return analyze_python(str(path), text, settings, ProjectContext(tmp_path, settings))


def only(tmp_path: Path, code: str, **kw) -> Layout:  # type: ignore[no-untyped-def]
    result = analyze(tmp_path, code, **kw)
    assert not result.errors, result.errors
    sinks = [lay for lay in result.layouts if "(name)" not in lay.sink_name]
    assert len(sinks) == 1, [lay.sink_name for lay in result.layouts]
    return sinks[0]


def dyn(layout: Layout) -> list[tuple[str, str]]:
    """(kind, timing) of every dynamic segment, in order."""
    return [(s.kind.value, s.timing.value) for s in layout.segments if not s.static and s.kind]


def first_dynamic_before(layout: Layout, text: str) -> bool:
    """True when a cache-breaking segment comes before the static segment containing ``text``."""
    for seg in layout.segments:
        if seg.static and text in seg.text:
            return False
        if seg.breaks_cache:
            return True
    raise AssertionError(f"{text!r} not in layout")


OPENAI = "from openai import OpenAI\nclient = OpenAI()\n"


def test_fstring_with_now_is_a_request_timestamp_first(tmp_path: Path) -> None:
    lay = only(
        tmp_path,
        OPENAI
        + f"""
from datetime import datetime
def ask(q):
    system = f"Today is {{datetime.now():%Y-%m-%d}}.\\n{RULES}"
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {{"role": "system", "content": system}}, {{"role": "user", "content": q}}])
""",
    )
    assert dyn(lay)[0] == ("timestamp", "request")
    assert first_dynamic_before(lay, "careful payroll")
    assert lay.provider == "openai" and lay.model == "gpt-4.1"
    assert lay.segments[-1].is_last_user_message and lay.segments[-1].kind is DynamicKind.USER_INPUT
    ts = next(s for s in lay.segments if s.kind is DynamicKind.TIMESTAMP)
    assert ts.location.line == 6 and ts.section is Section.SYSTEM
    assert any(f.purpose == "move-to-end" for f in ts.fixes)


def test_format_percent_template_join_dedent_and_plus_equals(tmp_path: Path) -> None:
    code = (
        OPENAI
        + f"""
import string, textwrap, uuid
from datetime import date
TEMPLATE = "User: {{user_name}}. {RULES}"
PCT = "Request %s. {RULES}"
DOLLAR = string.Template("Docs: $docs. {RULES}")
def ask(q, user_name, store):
    a = TEMPLATE.format(user_name=user_name)
    b = PCT % (uuid.uuid4(),)
    c = DOLLAR.substitute(docs=store.similarity_search(q))
    d = "\\n".join([str(date.today()), "{RULES}"])
    e = textwrap.dedent('''
        Rules:
        {RULES}
    ''')
    e += f"{{q}}"
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {{"role": "system", "content": a + b + c + d + e}}, {{"role": "user", "content": q}}])
"""
    )
    lay = only(tmp_path, code)
    kinds = [k for k, _ in dyn(lay)]
    assert kinds[:4] == ["user_identity", "identifier", "retrieved_context", "timestamp"]
    statics = "".join(s.text for s in lay.segments if s.static)
    assert "Rules:\n" + RULES in statics  # dedent applied
    assert "user_input" in kinds


def test_message_list_built_with_append_extend_insert(tmp_path: Path) -> None:
    lay = only(
        tmp_path,
        OPENAI
        + f"""
def turn(history, q, docs):
    messages = []
    messages.append({{"role": "user", "content": q}})
    messages.insert(0, {{"role": "system", "content": "{RULES}"}})
    for d in docs:
        messages.append({{"role": "system", "content": d}})
    return client.chat.completions.create(model="gpt-4.1", messages=messages)
""",
    )
    roles = [s.role for s in lay.segments]
    assert roles[0] == "system" and lay.segments[0].text == RULES
    loop = [s for s in lay.segments if s.repeated]
    assert loop and loop[0].kind is DynamicKind.RETRIEVED_CONTEXT


def test_history_splat_and_extend_are_history(tmp_path: Path) -> None:
    lay = only(
        tmp_path,
        OPENAI
        + f"""
def turn(history, q):
    messages = [{{"role": "system", "content": "{RULES}"}}]
    messages.extend(history)
    messages.append({{"role": "user", "content": q}})
    return client.chat.completions.create(model="gpt-4.1", messages=messages)
""",
    )
    assert [s.kind for s in lay.segments if not s.static] == [DynamicKind.HISTORY, DynamicKind.USER_INPUT]
    assert lay.history_after(0)
    assert lay.segments[-1].is_last_user_message


def test_anthropic_blocks_with_cache_control(tmp_path: Path) -> None:
    lay = only(
        tmp_path,
        f"""
import anthropic
client = anthropic.Anthropic()
def ask(q):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=[
        {{"type": "text", "text": "{RULES}", "cache_control": {{"type": "ephemeral", "ttl": "1h"}}}},
        {{"type": "text", "text": "More.", "cache_control": {{"type": "ephemeral"}}}},
    ], messages=[{{"role": "user", "content": q}}])
""",
    )
    assert lay.provider == "anthropic" and lay.model == "claude-sonnet-4-5"
    assert [cc.ttl for _, cc in lay.breakpoints()] == ["1h", "5m"]
    assert lay.breakpoints()[0][1].location.line == 6


def test_self_attribute_from_init_and_helper_returning_messages(tmp_path: Path) -> None:
    lay = only(
        tmp_path,
        OPENAI
        + f"""
import socket
class Bot:
    def __init__(self):
        self.system = f"Host {{socket.gethostname()}}. {RULES}"

    def build(self, q):
        return [{{"role": "system", "content": self.system}}, {{"role": "user", "content": q}}]

    def ask(self, q):
        return client.chat.completions.create(model="gpt-4.1", messages=self.build(q))
""",
    )
    assert dyn(lay)[0] == ("environment", "request")
    assert first_dynamic_before(lay, "careful payroll")


def test_cross_module_constant_and_function(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/prompts.py": f'SYSTEM_TEMPLATE = """Today is {{current_date}}.\n{RULES}"""\n'
        f'def footer():\n    return "{RULES}"\n',
    }
    result = analyze(
        tmp_path,
        OPENAI
        + """
from datetime import datetime
from .prompts import SYSTEM_TEMPLATE
import pkg.prompts
def ask(q):
    system = SYSTEM_TEMPLATE.format(current_date=datetime.now().date().isoformat()) + pkg.prompts.footer()
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": q}])
""",
        files=files,
        main="pkg/agent.py",
    )
    lay = result.layouts[0]
    ts = next(s for s in lay.segments if s.kind is DynamicKind.TIMESTAMP)
    assert ts.timing is Timing.REQUEST
    assert ts.location.path.endswith("prompts.py") and ts.location.line == 1
    assert any(c.path.endswith("agent.py") for c in ts.chain)
    assert first_dynamic_before(lay, "careful payroll")
    assert any(d.endswith("prompts.py") for d in result.dependencies)


def test_timing_import_time_default_argument_and_never(tmp_path: Path) -> None:
    lay = only(
        tmp_path,
        OPENAI
        + f"""
from datetime import datetime
import os
STARTED = f"Started {{datetime.now()}}. "
NOTE = "Format: {{datetime.now()}}. "
VERSION = "v2"
def ask(q, pid=os.getpid()):
    system = STARTED + f"Worker {{pid}}. " + NOTE + f"{{VERSION}} {RULES}"
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {{"role": "system", "content": system}}, {{"role": "user", "content": q}}])
""",
    )
    assert dyn(lay)[:2] == [("timestamp", "process"), ("environment", "process")]
    text = "".join(s.text for s in lay.segments if s.static)
    assert "Format: {datetime.now()}." in text and "v2 " + RULES in text


def test_dataclass_default_factory(tmp_path: Path) -> None:
    lay = only(
        tmp_path,
        OPENAI
        + f"""
from dataclasses import dataclass, field
from datetime import datetime
@dataclass
class Ctx:
    user_id: str
    received_at: datetime = field(default_factory=datetime.now)
def ask(ctx: Ctx, q: str):
    system = f"Received {{ctx.received_at:%H:%M}}. {RULES}"
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {{"role": "system", "content": system}}, {{"role": "user", "content": q}}])
""",
    )
    assert dyn(lay)[0] == ("timestamp", "request")


def test_responses_litellm_cache_key_tools_and_json(tmp_path: Path) -> None:
    result = analyze(
        tmp_path,
        OPENAI
        + f"""
import json, uuid
import litellm
TOOLS = [{{"type": "function", "name": "a"}}]
def ask(q, schema, names: set[str]):
    client.responses.create(model="gpt-4.1", instructions="{RULES}", input=q, tools=TOOLS,
                            prompt_cache_key=str(uuid.uuid4()))
    tools = [{{"type": "function", "name": n}} for n in names]
    return litellm.completion(model="anthropic/claude-sonnet-4-5", tools=tools, messages=[
        {{"role": "system", "content": "Schema: " + json.dumps(schema) + "{RULES}"}},
        {{"role": "user", "content": q}}])
""",
    )
    responses, lite = result.layouts[:2]
    assert responses.segments[0].section is Section.TOOLS
    assert responses.segments[1].text == RULES and responses.segments[1].section is Section.SYSTEM
    assert responses.cache_key is not None and responses.cache_key.kind is DynamicKind.IDENTIFIER
    assert lite.provider == "anthropic" and lite.model == "claude-sonnet-4-5"
    nds = [s.nondeterminism for s in lite.segments if s.nondeterminism]
    assert nds == [Nondeterminism.SET_ITERATION, Nondeterminism.UNSORTED_JSON]
    json_seg = next(s for s in lite.segments if s.nondeterminism is Nondeterminism.UNSORTED_JSON)
    assert json_seg.fixes[0].purpose == "sort-keys"


def test_langchain_and_pydantic_ai(tmp_path: Path) -> None:
    result = analyze(
        tmp_path,
        f"""
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from pydantic_ai import Agent
prompt = ChatPromptTemplate.from_messages([
    ("system", "Today is {{today}}. {RULES}"),
    MessagesPlaceholder("chat_history"),
    ("human", "{{question}}"),
])
agent = Agent("openai:gpt-4.1", system_prompt="{RULES}")

@agent.system_prompt
def add_user(ctx) -> str:
    return f"The user is {{ctx.deps.user_name}}."
""",
    )
    names = [lay.sink_name for lay in result.layouts]
    assert any("ChatPromptTemplate" in n for n in names) and any("Agent" in n for n in names)
    assert any("system-prompt hooks" in n for n in names)
    chat = next(lay for lay in result.layouts if "ChatPromptTemplate" in lay.sink_name)
    kinds = [s.kind for s in chat.segments if not s.static]
    assert kinds == [DynamicKind.TIMESTAMP, DynamicKind.HISTORY, DynamicKind.USER_INPUT]


def test_unfilled_template_constant_yields_a_named_layout(tmp_path: Path) -> None:
    result = analyze(tmp_path, f'SYSTEM_TEMPLATE = "Context: {{context}}\\n{RULES * 3}"\n')
    assert [lay.sink_name for lay in result.layouts] == ["SYSTEM_TEMPLATE (name)"]
    assert dyn(result.layouts[0])[0][0] == "retrieved_context"


def test_config_extends_sinks_and_dynamic_sources(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {
            "sinks": [{"call": "*.ask_model", "system": "system"}],
            "dynamic-sources": [{"pattern": "clock.stamp", "kind": "timestamp"}],
        }
    )
    lay = only(
        tmp_path,
        f"""
import clock
def go(llm, q):
    return llm.ask_model(system=f"At {{clock.stamp()}}. {RULES}", prompt=q)
""",
        settings=settings,
    )
    assert dyn(lay)[0] == ("timestamp", "request")


def test_syntax_error_and_odd_input_never_raise(tmp_path: Path) -> None:
    result = analyze(tmp_path, "def broken(:\n    pass\n")
    assert result.errors and result.errors[0].location.line >= 1 and not result.layouts
    assert "syntax" in result.errors[0].message
    deep = "x = " + "(" * 200 + "1" + ")" * 200 + "\n"
    analyze(tmp_path, deep)  # must not raise


def test_template_class_render_and_env_config(tmp_path: Path) -> None:
    lay = only(
        tmp_path,
        OPENAI
        + f"""
import os
from datetime import datetime
BOT = os.getenv("BOT_NAME", "Harbor")
class PromptTemplate:
    def __init__(self, text):
        self.text = text
    def render(self, **kw):
        return f"Date: {{datetime.now()}}\\n" + self.text.format(**kw)
SYSTEM = PromptTemplate(f"You are {{BOT}}. {RULES}")
def ask(q):
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {{"role": "system", "content": SYSTEM.render()}}, {{"role": "user", "content": q}}])
""",
    )
    assert dyn(lay)[0] == ("timestamp", "request")
    assert first_dynamic_before(lay, "careful payroll")
    # an environment variable read at import is configuration fixed at start-up: a process value,
    # one text per deploy, never a per-request one
    env = [s for s in lay.segments if s.kind is DynamicKind.ENVIRONMENT]
    assert env and all(s.timing is Timing.PROCESS and s.cardinality is Cardinality.FEW for s in env)


def test_named_template_needs_a_long_static_body(tmp_path: Path) -> None:
    short = analyze(tmp_path, 'QA_TEMPLATE = "Context: {context}\\n\\nQuestion: {question}"\n')
    assert short.layouts == []


def test_conditional_returns_report_the_costlier_alternative(tmp_path: Path) -> None:
    lay = only(
        tmp_path,
        OPENAI
        + f"""
SYSTEM = "You are Harbor. {{memory}}\\n{RULES}"
def build(template: str, memory: str) -> str:
    if "{{memory}}" in template:
        return template.format(memory=memory)
    return template + "\\n" + memory
def ask(q, memory):
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {{"role": "system", "content": build(SYSTEM, memory)}}, {{"role": "user", "content": q}}])
""",
    )
    mem = next(s for s in lay.segments if s.kind is DynamicKind.MEMORY)
    assert mem.conditional and first_dynamic_before(lay, "careful payroll")


def test_pydantic_ai_hooks_are_spliced_in_order(tmp_path: Path) -> None:
    result = analyze(
        tmp_path,
        f"""
from datetime import date
from pydantic_ai import Agent
agent = Agent("openai:gpt-4.1", system_prompt="Be brief.")

@agent.system_prompt
def add_date() -> str:
    return f"Today is {{date.today()}}."

@agent.system_prompt
def rules() -> str:
    return "{RULES}"
""",
    )
    hooks = next(lay for lay in result.layouts if "hooks" in lay.sink_name)
    assert next(s.text for s in hooks.segments if s.static) == "Be brief."
    assert first_dynamic_before(hooks, "careful payroll")


def test_repeated_static_string_is_static_text(tmp_path: Path) -> None:
    layout = only(
        tmp_path,
        OPENAI
        + """
from datetime import datetime
POLICY = "Cite the help centre. " * 50

def ask(q, names):
    system = f"Now: {datetime.now()}\\n" + POLICY + 2 * "Be brief. " + names * 3
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": q}])
""",
    )
    system = [s for s in layout.segments if s.section is Section.SYSTEM]
    static_text = "".join(s.text for s in system if s.static)
    assert "Cite the help centre. " * 50 in static_text and "Be brief. Be brief. " in static_text
    assert dyn(layout)[0] == ("timestamp", "request")
    assert first_dynamic_before(layout, "Cite the help centre.")
    # a dynamic operand stays dynamic, marked as repeated content
    names = [s for s in system if not s.static and s.text == "names"]
    assert names and names[0].repeated


def test_project_index_parses_a_changed_module_again(tmp_path: Path) -> None:
    """A module rewritten on disk (by ``--fix`` between rounds) is not served from the index."""
    prompts = tmp_path / "prompts.py"
    prompts.write_text('SYSTEM = "first"\n')
    project = ProjectContext(tmp_path, Settings())
    first = project.load(prompts)
    assert first is not None and "SYSTEM" in first.assigns
    assert project.load(prompts) is first  # unchanged: the same parse
    prompts.write_text('SYSTEM = "second, longer"\nOTHER = 1\n')
    second = project.load(prompts)
    assert second is not None and second is not first and "OTHER" in second.assigns


def test_dynamic_branch_is_kept_when_the_other_branch_is_static(tmp_path: Path) -> None:
    """``if/else`` assigning the prompt two ways: the dynamic way is reported, as conditional."""
    layout = only(
        tmp_path,
        OPENAI
        + f"""
from datetime import datetime

def ask(q, detailed):
    if detailed:
        system = f"Now: {{datetime.now()}}\\n{RULES}"
    else:
        system = "{RULES}"
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {{"role": "system", "content": system}}, {{"role": "user", "content": q}}])
""",
    )
    stamp = next(s for s in layout.segments if not s.static and s.kind is DynamicKind.TIMESTAMP)
    assert stamp.conditional
    assert first_dynamic_before(layout, "careful payroll assistant")
