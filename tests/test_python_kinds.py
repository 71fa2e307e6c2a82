"""What kind, timing, granularity and cardinality the Python analyzer gives a value (issue 10).

Each case is a small fresh project run through the real analyzer (libcst), or through the CLI.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from cli_support import invoke, needs_analyzer

from prefixlint.analysis.python import ProjectContext, analyze_python
from prefixlint.analysis.python.timegrain import strftime_granularity
from prefixlint.model.layout import Cardinality, DynamicKind, Granularity, Segment, Timing
from prefixlint.model.settings import Settings

RULES = (
    "You are the booking assistant of a small ferry company. Answer in two sentences, quote the "
    "timetable page, never promise refunds, and hand over to a person when a passenger is upset."
)
HEAD = "from openai import OpenAI\nclient = OpenAI()\n"
SEND = (
    "    return client.chat.completions.create(model='gpt-4.1', messages=[\n"
    "        {'role': 'system', 'content': system}, {'role': 'user', 'content': question}])\n"
)

METHOD_SEND = textwrap.indent(SEND, "    ")


def system_values(tmp_path: Path, code: str, files: dict[str, str] | None = None) -> list[Segment]:
    """Dynamic pieces of the system prompt that ``code`` (a module with one sink) sends."""
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    text = HEAD + textwrap.dedent(code)
    path = tmp_path / "app.py"
    path.write_text(text)
    settings = Settings()
    result = analyze_python(str(path), text, settings, ProjectContext(tmp_path, settings))
    assert not result.errors, result.errors
    layouts = [lay for lay in result.layouts if "(name)" not in lay.sink_name]
    assert len(layouts) == 1, [lay.sink_name for lay in layouts]
    return [s for s in layouts[0].segments if not s.static and not s.is_last_user_message]


def value(
    tmp_path: Path, expr: str, *, before: str = "", module: str = "", params: str = "question"
) -> Segment:
    """The one dynamic piece of ``f"{expr}\\n" + RULES`` built in ``ask(params)``."""
    body = textwrap.indent(textwrap.dedent(before), "    ")
    code = f"{textwrap.dedent(module)}\nRULES = {RULES!r}\n\ndef ask({params}):\n{body}"
    code += f'    system = f"{{{expr}}}\\n" + RULES\n' + SEND
    values = system_values(tmp_path, code)
    assert len(values) == 1, values
    return values[0]


# 1. taint propagation -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "expr",
    [
        "int(time.time())",
        "str(datetime.now())",
        "round(time.time(), 1)",
        "datetime.now().isoformat()",
        "datetime.now().strftime('%H:%M:%S')",
        "str(time.time())[:8]",
        "datetime.now().isoformat().upper()",
        "' | '.join(['Local time', datetime.now().isoformat()])",
        "', '.join(str(t) for t in [time.time(), time.time()])",
        "'%s' % datetime.now()",
        "'{}'.format(datetime.now())",
        "json.dumps({'at': time.time()})",
        "render_clock(time.time())",
    ],
)
def test_a_value_computed_from_a_timestamp_is_a_per_request_timestamp(tmp_path: Path, expr: str) -> None:
    seg = value(tmp_path, expr, module="import json, time\nfrom datetime import datetime\n")
    assert (seg.kind, seg.timing) == (DynamicKind.TIMESTAMP, Timing.REQUEST)


def test_conversions_and_str_methods_keep_the_kind_of_the_value(tmp_path: Path) -> None:
    seg = value(tmp_path, "question.strip().upper()[:200]")
    assert (seg.kind, seg.timing) == (DynamicKind.USER_INPUT, Timing.REQUEST)
    seg = value(
        tmp_path, "', '.join(sorted(name.title() for name in user_names))", params="question, user_names"
    )
    assert seg.kind is DynamicKind.USER_IDENTITY and seg.timing is Timing.REQUEST


def test_an_unknown_call_passes_a_per_request_argument_through(tmp_path: Path) -> None:
    seg = value(tmp_path, "summarize(docs)", before="docs = store.similarity_search(question)\n")
    assert (seg.kind, seg.timing) == (DynamicKind.RETRIEVED_CONTEXT, Timing.REQUEST)
    assert seg.label == "summarize(docs)"
    # computed from the user's question by code not in view: per request, no longer the user's turn
    seg = value(tmp_path, "classify(question)")
    assert (seg.kind, seg.timing) == (DynamicKind.UNKNOWN, Timing.REQUEST)


def test_a_call_with_static_arguments_is_folded_or_of_unknown_timing(tmp_path: Path) -> None:
    values = system_values(
        tmp_path,
        f"RULES = {RULES!r}\n\ndef ask(question):\n"
        "    system = f\"Limit {int('40')} words, {round(2.5)} tries.\\n\" + RULES\n" + SEND,
    )
    assert values == []
    seg = value(tmp_path, "lookup_banner('ferries')")
    assert (seg.kind, seg.timing) == (DynamicKind.UNKNOWN, Timing.UNKNOWN)


# 2. retrieval recognised by API -----------------------------------------------------------------------
RETRIEVAL = [
    ("docs = vectorstore.as_retriever(k=4).invoke(question)", "question"),
    ("retriever = store.as_retriever()\n    docs = await retriever.ainvoke(question)", "question"),
    ("docs = retriever.invoke(question)", "question, retriever: BaseRetriever"),
    ("docs = self_query.get_relevant_documents(question)", "question"),
    ("docs = db.max_marginal_relevance_search(question, k=3)", "question"),
    ("docs = index.as_query_engine().query(question)", "question"),
    ("docs = chroma.get_or_create_collection('kb').query(query_texts=[question])", "question"),
    ("docs = qdrant_client.search(collection_name='kb', query_vector=vec)", "question, vec"),
    ("docs = kb_collection.query.near_text(query=question, limit=3)", "question"),
]


@pytest.mark.parametrize(("before", "params"), RETRIEVAL)
def test_retrieval_is_recognised_by_the_api_called(tmp_path: Path, before: str, params: str) -> None:
    code = (
        f"RULES = {RULES!r}\n\nasync def ask({params}):\n    {before}\n"
        '    system = f"Context:\\n{docs}\\n" + RULES\n' + SEND
    )
    (seg,) = system_values(tmp_path, code)
    assert (seg.kind, seg.timing) == (DynamicKind.RETRIEVED_CONTEXT, Timing.REQUEST)
    assert seg.cardinality is Cardinality.PER_REQUEST


def test_a_retriever_built_in_init_is_known_by_how_it_was_made(tmp_path: Path) -> None:
    code = f"""
RULES = {RULES!r}

class Helper:
    def __init__(self, store):
        self.kb = store.as_retriever()

    def ask(self, question):
        docs = self.kb.invoke(question)
        system = f"Use these notes: {{docs}}\\n" + RULES
{METHOD_SEND}"""
    (seg,) = system_values(tmp_path, code)
    assert seg.kind is DynamicKind.RETRIEVED_CONTEXT


@pytest.mark.parametrize(
    "before",
    [
        "docs = chain.invoke({'question': question})",
        "docs = llm.invoke(question)",
        "docs = re.search('[0-9]+', question)",
    ],
)
def test_invoke_on_a_chain_or_a_model_and_re_search_are_not_retrieval(tmp_path: Path, before: str) -> None:
    code = (
        f"import re\nRULES = {RULES!r}\n\ndef ask(question, chain, llm):\n    {before}\n"
        '    system = f"Notes:\\n{docs}\\n" + RULES\n' + SEND
    )
    (seg,) = system_values(tmp_path, code)
    assert seg.kind is not DynamicKind.RETRIEVED_CONTEXT


# 3. unknown is not per request; start-up values are process values -----------------------------------
def test_an_attribute_of_unknown_origin_is_of_unknown_timing(tmp_path: Path) -> None:
    code = f"""
RULES = {RULES!r}

class Agent:
    def configure(self, n):
        self.max_iterations = n

    def ask(self, question):
        system = f"Stop after {{self.max_iterations}} steps.\\n" + RULES
{METHOD_SEND}"""
    (seg,) = system_values(tmp_path, code)
    assert seg.timing is Timing.UNKNOWN and not seg.per_request


@pytest.mark.parametrize(
    ("module", "expr", "params"),
    [
        ("", "config.max_iterations", "question, config"),
        ("", "cfg.llm.persona", "question, cfg: AgentConfig"),
        ("from app_settings import get_settings\n", "get_settings().bot_name", "question"),
        ("import os\n", "os.environ['BOT_NAME']", "question"),
        ("import os\n", "os.getenv('BOT_NAME', 'Ferry')", "question"),
        ("import os\nBOT = os.environ.get('BOT_NAME', 'Ferry').title()\n", "BOT", "question"),
    ],
)
def test_values_fixed_at_start_up_are_process_values(
    tmp_path: Path, module: str, expr: str, params: str
) -> None:
    seg = value(tmp_path, expr, module=module, params=params)
    assert seg.timing is Timing.PROCESS and seg.cardinality is Cardinality.FEW


def test_an_attribute_set_from_config_in_init_is_a_process_value(tmp_path: Path) -> None:
    code = f"""
RULES = {RULES!r}

class Agent:
    def __init__(self, config):
        self.max_iterations = config.max_iterations

    def ask(self, question):
        system = f"Stop after {{self.max_iterations}} steps.\\n" + RULES
{METHOD_SEND}"""
    (seg,) = system_values(tmp_path, code)
    assert seg.timing is Timing.PROCESS


def test_evidence_of_per_request_origin_stays_per_request(tmp_path: Path) -> None:
    for expr, kind in [
        ("uuid.uuid4()", DynamicKind.IDENTIFIER),
        ("random.choice(TIPS)", DynamicKind.RANDOM),
        ("datetime.now()", DynamicKind.TIMESTAMP),
    ]:
        seg = value(
            tmp_path, expr, module="import random, uuid\nfrom datetime import datetime\nTIPS = ['a', 'b']\n"
        )
        assert (seg.kind, seg.timing) == (kind, Timing.REQUEST)
        assert seg.cardinality is Cardinality.PER_REQUEST


# 4. time granularity -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expr", "grain"),
    [
        ("date.today()", Granularity.DAY),
        ("datetime.now().date()", Granularity.DAY),
        ("datetime.now().strftime('%Y-%m-%d')", Granularity.DAY),
        ("datetime.now().strftime('%B %d, %Y')", Granularity.DAY),
        ("datetime.now().strftime('%Y-%m-%d %H:%M:%S')", Granularity.SECOND),
        ("datetime.now().strftime('%H:%M')", Granularity.MINUTE),
        ("datetime.now().isoformat()", Granularity.SUB_SECOND),
        ("time.time()", Granularity.SUB_SECOND),
        ("datetime.now()", Granularity.SUB_SECOND),
        ("datetime.now():%Y-%m-%d", Granularity.DAY),
        ("datetime.now():%A %H:%M", Granularity.MINUTE),
        ("datetime.now().isoformat(timespec='minutes')", Granularity.MINUTE),
        ("datetime.now().replace(microsecond=0)", Granularity.SECOND),
        ("datetime.now().isoformat()[:10]", Granularity.DAY),
        ("int(time.time())", Granularity.SECOND),
        ("time.strftime('%Y-%m')", Granularity.MONTH),
        ("date.today().strftime('%Y-%m-%d %H:%M')", Granularity.DAY),
        ("datetime.now().year", Granularity.YEAR),
    ],
)
def test_time_granularity_is_read_from_the_call_and_the_format(
    tmp_path: Path, expr: str, grain: Granularity
) -> None:
    seg = value(tmp_path, expr, module="import time\nfrom datetime import date, datetime\n")
    assert seg.kind is DynamicKind.TIMESTAMP
    assert seg.granularity is grain
    assert seg.cardinality is (Cardinality.PER_REQUEST if grain.sub_day else Cardinality.FEW)


def test_granularity_survives_a_local_variable_and_a_helper(tmp_path: Path) -> None:
    seg = value(
        tmp_path,
        "today_line()",
        module="from datetime import datetime\n\ndef today_line():\n"
        "    stamp = datetime.now()\n    return 'Today: ' + stamp.strftime('%d %B %Y')\n",
    )
    assert (seg.kind, seg.granularity) == (DynamicKind.TIMESTAMP, Granularity.DAY)


@pytest.mark.parametrize(
    ("fmt", "grain"),
    [
        ("%Y-%m-%d", Granularity.DAY),
        ("%B %d, %Y", Granularity.DAY),
        ("%H:%M:%S", Granularity.SECOND),
        ("%H:%M", Granularity.MINUTE),
        ("%Y-%m-%dT%H:%M:%S.%f", Granularity.SUB_SECOND),
        ("%-d %b", Granularity.DAY),
        ("%Y", Granularity.YEAR),
        ("100%% sure", None),
    ],
)
def test_strftime_granularity(fmt: str, grain: Granularity | None) -> None:
    assert strftime_granularity(fmt) is grain


# 5. cardinality ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "expr", "card"),
    [
        ("question, verbose: bool", "verbose", Cardinality.FEW),
        ("question, tone: Literal['formal', 'casual']", "tone", Cardinality.FEW),
        ("question, tier: Tier", "tier", Cardinality.FEW),
        ("question, locale", "locale", Cardinality.FEW),
        ("question, is_member", "is_member", Cardinality.FEW),
        ("question, user_id", "user_id", Cardinality.PER_USER),
        ("question, user", "user.email", Cardinality.PER_USER),
        ("question, customer_name", "customer_name", Cardinality.PER_USER),
        ("question, session_id", "session_id", Cardinality.PER_SESSION),
        ("question, thread_id", "thread_id", Cardinality.PER_SESSION),
        ("question, request_id", "request_id", Cardinality.PER_REQUEST),
        ("question, harbour", "harbour", None),
    ],
)
def test_cardinality_is_read_from_names_and_annotations(
    tmp_path: Path, params: str, expr: str, card: Cardinality | None
) -> None:
    module = (
        "from enum import Enum\nfrom typing import Literal\n\nclass Tier(Enum):\n    FREE = 1\n    PRO = 2\n"
    )
    seg = value(tmp_path, expr, module=module, params=params)
    assert seg.cardinality is card


def test_a_persona_is_one_of_a_few_texts_not_a_user_identity(tmp_path: Path) -> None:
    """A persona is the assistant's character: fixed per deployment or picked from a few (an editor's
    perspective, a support voice). Read as the user's identity, a persona parameter with no caller in
    view was reported as PFX104, "changes per request", which its name does not tell."""
    seg = value(tmp_path, "persona", params="question, persona")
    assert seg.kind is not DynamicKind.USER_IDENTITY
    assert seg.cardinality is Cardinality.FEW
    assert value(tmp_path, "user_name", params="question, user_name").kind is DynamicKind.USER_IDENTITY


def test_a_comparison_of_a_per_request_value_takes_two_values(tmp_path: Path) -> None:
    seg = value(tmp_path, "len(question) > 200")
    assert seg.timing is Timing.REQUEST and seg.cardinality is Cardinality.FEW


# through the CLI ----------------------------------------------------------------------------------------
@needs_analyzer
def test_cli_reports_a_converted_timestamp_and_not_a_config_value(tmp_path: Path) -> None:
    long_rules = (RULES + " ") * 60  # past the provider's minimum cacheable length
    source = (
        HEAD + f"import time\nRULES = {long_rules!r}\n\n"
        "def ask(question):\n"
        '    system = f"Clock: {int(time.time())}\\n" + RULES\n' + SEND + "\n\n"
        "def ask_configured(question, config):\n"
        '    system = f"Reply within {config.max_words} words.\\n" + RULES\n' + SEND
    )
    (tmp_path / "bot.py").write_text(source)
    lines = source.splitlines()
    clock = next(n for n, line in enumerate(lines, 1) if "Clock:" in line)
    configured = next(n for n, line in enumerate(lines, 1) if "max_words" in line)
    code, out, _ = invoke(["check", "--output-format", "json", "."], tmp_path)
    assert code == 1
    found = {(f["location"]["row"], f["code"]) for f in json.loads(out)}
    assert (clock, "PFX101") in found, found
    # the config value is a process value, never reported as computed per request
    assert not any(row == configured and c.startswith("PFX10") for row, c in found), found


def test_granularity_survives_a_template_filled_in_another_module(tmp_path: Path) -> None:
    (tmp_path / "prompts.py").write_text(f'SYSTEM = """Today is {{today}}.\n{RULES}"""\n')
    code = (
        "from datetime import datetime\nfrom prompts import SYSTEM\n\n"
        "def ask(question):\n"
        "    system = SYSTEM.format(today=datetime.now().strftime('%A %d %B %Y'))\n" + SEND
    )
    (seg,) = system_values(tmp_path, code)
    assert (seg.kind, seg.timing, seg.granularity) == (DynamicKind.TIMESTAMP, Timing.REQUEST, Granularity.DAY)
    assert seg.location is not None and seg.location.path.endswith("prompts.py")


def test_a_template_placeholder_known_only_by_name_gets_what_its_name_tells() -> None:
    from prefixlint.analysis.templates import render_segments

    result = render_segments(
        "Date: {current_date}\nUser: {user_id}\nTurn: {request_id}\n", style="format", path="p.txt"
    )
    date, user, request = [s for s in result.segments if s.dynamic]
    assert (date.granularity, date.cardinality) == (Granularity.DAY, Cardinality.FEW)
    assert user.cardinality is Cardinality.PER_USER and user.granularity is None
    assert request.cardinality is Cardinality.PER_REQUEST


def test_a_lookup_in_an_object_made_at_start_up_is_of_unknown_timing(tmp_path: Path) -> None:
    seg = value(tmp_path, "store.get('banner')", module="from kv import connect\nstore = connect()\n")
    assert (seg.kind, seg.timing) == (DynamicKind.UNKNOWN, Timing.UNKNOWN)


def test_a_list_attribute_filled_by_the_class_holds_what_it_is_given(tmp_path: Path) -> None:
    code = f"""
RULES = {RULES!r}

class Agent:
    def __init__(self):
        self.notes = []

    def observe(self, tool_result):
        self.notes.append(f"Observed: {{tool_result}}")

    def ask(self, question):
        system = "\\n".join(self.notes) + "\\n" + RULES
{METHOD_SEND}"""
    (seg,) = system_values(tmp_path, code)
    assert (seg.kind, seg.timing, seg.repeated) == (DynamicKind.TOOL_OUTPUT, Timing.REQUEST, True)


def test_what_a_person_types_is_user_input(tmp_path: Path) -> None:
    seg = value(tmp_path, "input('Topic: ')")
    assert (seg.kind, seg.timing) == (DynamicKind.USER_INPUT, Timing.REQUEST)
