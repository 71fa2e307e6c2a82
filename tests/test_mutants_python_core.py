"""Python-analysis behaviour that a surviving mutant of ``analysis/python`` would change (issue 16).

Each test writes a small project and runs the real ``prefixlint check`` on it (see
:mod:`tests.test_analysis_mutants` for the helpers). The docstring of each test names the change to
the analysis it catches, checked by running that mutant through ``bench/mutation.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_analysis_mutants import OPENAI, RULES, check, codes, send

NOW = 'f"Now {datetime.now():%H:%M}.\\n"'
# A chat call that sends the module-level message list ``messages`` and then the user's question.
SEND_LIST = (
    'client.chat.completions.create(model="gpt-4.1", '
    'messages={messages} + [{{"role": "user", "content": q}}])'
)


def test_functions_defined_inside_the_caller(tmp_path: Path) -> None:
    """``def build()`` in the caller's body, calling its sibling ``def header()``: the timestamp the
    inner helper returns is found where it is computed.
    Catches: inner functions not recorded (``collect.py``), or the enclosing function not searched."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q):\n"
        "    def header():\n"
        f"        return {NOW}\n\n"
        "    def build():\n"
        "        return header() + RULES\n\n"
        "    system = build()\n"
        f"    return {send('system')}\n"
    )
    assert codes(check(tmp_path, {"app.py": app})) == [("PFX101", "app.py", 10)]


def test_a_time_method_of_a_value_of_another_kind_keeps_its_kind(tmp_path: Path) -> None:
    """``signup_day().strftime("%Y")`` of a configured user-identity source is still a user's
    value (PFX104), not a yearly timestamp.
    Catches: a time method re-labelling a value of a known kind that is no timestamp."""
    source = '{pattern = "accounts.signup_day", kind = "user_identity"}'
    config = f"[tool.prefixlint]\ndynamic-sources = [{source}]\n"
    app = (
        "import accounts\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q):\n"
        "    system = f\"Member since {accounts.signup_day().strftime('%Y')}\\n\" + RULES\n"
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app, "pyproject.toml": config})
    assert codes(found) == [("PFX104", "app.py", 9)]
    assert found[0]["value"]["kind"] == "user_identity"


@pytest.mark.parametrize(
    "tools",
    [
        'TOOLS = frozenset(["lookup", "escalate", "refund"])\n',
        'TOOLS = set(("lookup", "escalate", "refund"))\n',
        'NAMES = ["lookup", "escalate", "refund"]\nALLOWED = NAMES\nTOOLS = frozenset(ALLOWED)\n',
    ],
    ids=["frozenset of a list", "set of a tuple", "through two names"],
)
def test_a_set_made_from_string_literals_is_sorted_safely(tmp_path: Path, tools: str) -> None:
    """A set built by ``frozenset([...])``/``set((...))`` of string literals, iterated into the
    prompt: ``sorted(TOOLS)`` is a safe fix (strings compare); ``set(ids)`` of a parameter's items
    gets the same fix, unsafe (its items may not compare).
    Catches: the argument of ``set``/``frozenset`` read at the wrong index (a crash), or the depth
    limit of names followed hit one name early."""
    app = (
        OPENAI + f"RULES = {RULES!r}\n" + tools + "\n\n"
        "def ask(q):\n"
        '    system = "Tools: " + ", ".join(TOOLS) + "\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        "def ask_ids(q, ids):\n"
        '    system = "Ids: " + ", ".join(set(ids)) + "\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert [f["code"] for f in found] == ["PFX402", "PFX402"]
    fixes = [(f["fix"]["applicability"], [e["content"] for e in f["fix"]["edits"]]) for f in found]
    assert fixes == [("safe", ["sorted(TOOLS)"]), ("unsafe", ["sorted(set(ids))"])]


def test_a_text_method_of_a_constant_is_the_method_applied(tmp_path: Path) -> None:
    """``RULES.strip()`` is the rules' text, stripped: the timestamp ahead of it costs the rules'
    tokens (not the few tokens of the source text ``RULES.strip()``).
    Catches: the pass-through methods and the other known methods of static text swapped."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q):\n"
        f"    system = {NOW} + RULES.strip()\n"
        f"    return {send('system')}\n"
    )
    (finding,) = check(tmp_path, {"app.py": app})
    assert finding["code"] == "PFX101"
    assert finding["impact"]["tokens_lost"] > 100


def test_a_table_of_an_imported_module_read_through_the_module(tmp_path: Path) -> None:
    """``prompts.TABLE["qa"]`` after ``import prompts``: the template is the table item, and the
    timestamp filled into it is reported at its placeholder in ``prompts.py``.
    Catches: the module-attribute form of a table read refused for an imported module."""
    files = {
        "prompts.py": f"RULES = {RULES!r}\nTABLE = {{}}\nTABLE['qa'] = 'Now {{now}}.\\n' + RULES\n",
        "app.py": "from datetime import datetime\n\nimport prompts\n" + OPENAI + "\n\n"
        "def ask(q):\n"
        "    system = prompts.TABLE['qa'].format(now=f'{datetime.now():%H:%M}')\n"
        f"    return {send('system')}\n",
    }
    assert codes(check(tmp_path, files)) == [("PFX101", "prompts.py", 3)]


@pytest.mark.parametrize("annotation", ["PageHelper | None", "Optional[PageHelper]", "PageHelper"])
def test_a_method_of_a_helper_held_in_a_typed_field(tmp_path: Path, annotation: str) -> None:
    """``self.helper.next_prompt()`` where ``helper: PageHelper | None`` is a class field: the
    method of the annotated class runs with its own ``self`` (its ``self.rules``). The module also
    sets an item of a call's result at module level (``registry()["qa"] = ...``), which is no table.
    Catches: an ``X | None`` annotation or a subscript of a call read as something else (a crash),
    or the helper's method run with the wrong class as ``self``."""
    files = {
        "helper.py": "from datetime import datetime\n" + f"RULES = {RULES!r}\n\n\n"
        "class PageHelper:\n"
        "    def __init__(self):\n"
        "        self.rules = RULES\n\n"
        "    def next_prompt(self):\n"
        "        return f'Now {datetime.now():%H:%M}.\\n' + self.rules\n",
        "app.py": "from typing import Optional\n\nfrom helper import PageHelper\n" + OPENAI + "\n\n"
        "def registry():\n    return {}\n\n\n"
        "registry()['qa'] = 'unused'\n\n\n"
        f"class Agent:\n    helper: {annotation} = None\n\n"
        "    def think(self, q):\n"
        "        system = self.helper.next_prompt()\n"
        f"        return {send('system')}\n",
    }
    assert codes(check(tmp_path, files)) == [("PFX101", "helper.py", 10)]


def test_a_call_through_a_factory_without_a_return_annotation(tmp_path: Path) -> None:
    """``load().helper.build()``: ``load`` is a project function with no return annotation, so the
    class of what it returns is not known; the timestamp after it is still reported.
    Catches: a function without a return annotation (or no function at all) taken as one with it."""
    app = (
        "from datetime import datetime\n\nimport vendor\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def load():\n    return object()\n\n\n"
        "def ask(q):\n"
        f"    system = load().helper.build() + vendor.make().helper.build() + {NOW} + RULES\n"
        f"    return {send('system')}\n"
    )
    assert codes(check(tmp_path, {"app.py": app})) == [("PFX101", "app.py", 15)]


def test_a_line_of_a_triple_quoted_template_is_moved_to_its_end(tmp_path: Path) -> None:
    """A triple-quoted template whose first line holds ``{now}``: the fix moves that line, with its
    real line break, to the end of the template.
    Catches: a triple-quoted string taken as a one-line one (no fix: it looks for ``\\n``)."""
    body = "Now: {now}\n" + RULES + "\nBe brief."
    app = (
        "from datetime import datetime\n" + OPENAI + f'TEMPLATE = """{body}"""\n\n\n'
        "def ask(q):\n"
        "    system = TEMPLATE.format(now=f'{datetime.now():%H:%M}')\n"
        f"    return {send('system')}\n"
    )
    (finding,) = check(tmp_path, {"app.py": app})
    assert (finding["code"], finding["fix"]["purpose"]) == ("PFX101", "move-to-end")
    (edit,) = finding["fix"]["edits"]
    assert edit["content"] == RULES + "\nBe brief.\nNow: {now}"


def test_content_names_of_a_module_level_message_list(tmp_path: Path) -> None:
    """Module-level message lists whose ``content`` is a name: a list of content blocks defined in
    the module (its timestamp, computed once, is PFX201) and a text imported from another module
    (static: no finding).
    Catches: a content name looked up among the module's constants when it is not one (a crash)."""
    files = {
        "texts.py": f"RULES = {RULES!r}\n",
        "app.py": "from datetime import datetime\n\nfrom texts import RULES\n" + OPENAI + "\n"
        'BLOCKS = [{"type": "text", "text": f"Started {datetime.now():%H:%M}.\\n" + RULES}]\n'
        'BASE = [{"role": "system", "content": BLOCKS}]\n'
        'OTHER = [{"role": "system", "content": RULES}]\n\n\n'
        "def ask(q):\n"
        f"    return {SEND_LIST.format(messages='BASE')}\n\n\n"
        "def ask_other(q):\n"
        f"    return {SEND_LIST.format(messages='OTHER')}\n",
    }
    assert codes(check(tmp_path, files)) == [("PFX201", "app.py", 8)]


def test_the_numbers_of_a_range_are_static(tmp_path: Path) -> None:
    """``f"Source {i}: ..." for i in range(len(docs))``: the numbers a range gives are no
    per-request value, so the numbered lines ahead of the rules are no finding (the documents
    themselves are not in this text).
    Catches: a ``range(...)`` read as a value of its arguments' kind."""
    app = (
        OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q, retriever):\n"
        "    docs = retriever.invoke(q)\n"
        '    steps = "".join(f"Source {i}: cite it by its number.\\n" for i in range(len(docs)))\n'
        "    system = steps + RULES\n"
        f"    return {send('system')}\n"
    )
    assert check(tmp_path, {"app.py": app}) == []


def test_a_static_message_item_is_its_text_not_a_history(tmp_path: Path) -> None:
    """A module-level text constant as an item of the message list: its few tokens are the prefix
    ahead of the timestamp, not a conversation history of unknown length.
    Catches: a static name or attribute in a message list read as the conversation history."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n"
        'GREETING = "Hello, I have a payroll question."\n\n\n'
        "def ask(q):\n"
        "    return client.chat.completions.create(\n"
        '        model="gpt-4.1",\n'
        f'        messages=[GREETING, {{"role": "user", "content": {NOW} + RULES + q}}],\n'
        "    )\n"
    )
    (finding,) = check(tmp_path, {"app.py": app})
    assert finding["code"] == "PFX101"
    assert finding["impact"]["prefix_tokens"] < 50
    assert not finding["impact"]["history_priced"]


def test_a_message_dict_defined_at_module_level(tmp_path: Path) -> None:
    """``SYSTEM = {"role": "system", "content": RULES}`` at module level (here, or imported from
    another module), sent as an item of the message list: its content is the rules, so they are the
    prefix ahead of the timestamp in the user's message. A module-level message whose text holds a
    timestamp is computed once per process (PFX201).
    Catches: a message dict held in a module constant read as the source text of its name."""
    files = {
        "texts.py": f"RULES = {RULES!r}\n" + 'DESK = {"role": "system", "content": RULES}\n',
        "app.py": "from datetime import datetime\n\nfrom texts import DESK, RULES\n" + OPENAI + "\n"
        'SYSTEM = {"role": "system", "content": RULES}\n'
        'STARTED = {"role": "system", "content": f"Started {datetime.now():%H:%M}.\\n" + RULES}\n\n\n'
        "def ask(q):\n"
        "    return client.chat.completions.create(\n"
        '        model="gpt-4.1",\n'
        f'        messages=[SYSTEM, {{"role": "user", "content": {NOW} + RULES + q}}],\n'
        "    )\n\n\n"
        "def ask_desk(q):\n"
        "    return client.chat.completions.create(\n"
        '        model="gpt-4.1",\n'
        f'        messages=[DESK, {{"role": "user", "content": {NOW} + RULES + q}}],\n'
        "    )\n\n\n"
        "def ask_started(q):\n"
        f"    return {SEND_LIST.format(messages='[STARTED]')}\n",
    }
    found = check(tmp_path, files)
    assert codes(found) == [("PFX201", "app.py", 9), ("PFX101", "app.py", 15), ("PFX101", "app.py", 22)]
    assert [f["impact"]["prefix_tokens"] > len(RULES) // 6 for f in found[1:]] == [True, True]


# The message list a caller passes to its class's sending method, positionally or by keyword.
PASSED = '[{"role": "system", "content": ' + NOW + ' + RULES}, {"role": "user", "content": q}]'


@pytest.mark.parametrize("passed", [PASSED, "messages=" + PASSED], ids=["positional", "keyword"])
def test_a_method_that_sends_the_messages_it_is_passed(tmp_path: Path, passed: str) -> None:
    """``self._send([...])``: a method of the class sends the list its caller passes as its first
    argument after ``self`` (or by keyword); the timestamp in that list is found in the caller.
    Catches: more than ``self`` skipped when arguments are matched to a method's parameters, or a
    keyword argument not matched."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "class Desk:\n"
        "    def _send(self, messages, temperature=0):\n"
        "        return client.chat.completions.create(\n"
        '            model="gpt-4.1", messages=messages, temperature=temperature\n'
        "        )\n\n"
        "    def ask(self, q):\n"
        f"        return self._send({passed})\n"
    )
    assert codes(check(tmp_path, {"app.py": app})) == [("PFX101", "app.py", 15)]


def test_a_langchain_template_format_chooses_its_placeholders(tmp_path: Path) -> None:
    """``from_template(..., template_format="jinja2")``: ``{{ today }}`` is a placeholder (a date,
    PFX111); with the default format it is an escaped brace, plain text (no finding).
    Catches: the ``template_format`` argument not read (a crash, or the default style used)."""
    app = (
        "from langchain_core.prompts import ChatPromptTemplate, SystemMessagePromptTemplate\n"
        f"RULES = {RULES!r}\n"
        "PROMPT = ChatPromptTemplate.from_messages([\n"
        '    SystemMessagePromptTemplate.from_template("Today is {{ today }}.\\n" + RULES, '
        'template_format="jinja2"),\n'
        '    ("human", "{question}"),\n'
        "])\n"
        "PLAIN = ChatPromptTemplate.from_messages([\n"
        '    SystemMessagePromptTemplate.from_template("Use {{ braces }}.\\n" + RULES),\n'
        '    ("human", "{question}"),\n'
        "])\n"
    )
    assert codes(check(tmp_path, {"app.py": app})) == [("PFX111", "app.py", 4)]


def test_the_project_index_skips_tool_folders_and_stops_at_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's Python files: hidden and tool folders (``node_modules``, ``.venv``) are not
    searched, other files are not Python, and at the file limit the list stops (a list, cut short).
    Catches: the cut-short list lost at the limit (a crash on a very large repository)."""
    from prefixlint.analysis.python import project

    for name in ("a.py", "b.py", "pkg/c.py", "node_modules/d.py", ".venv/e.py", "notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    assert sorted(p.name for p in project._python_files(tmp_path)) == ["a.py", "b.py", "c.py"]
    monkeypatch.setattr(project, "MAX_INDEXED_FILES", 2)
    assert len(project._python_files(tmp_path)) == 2


def test_a_parameter_is_not_the_module_template_of_the_same_name(tmp_path: Path) -> None:
    """``def ask(q, template)`` where the module also defines ``template``: the parameter holds
    whatever the caller passes (no caller in view), not the module's template, so the timestamp
    filled into it is no finding at the module's placeholder.
    Catches: a parameter's name looked up among the module's constants."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n"
        'template = "Now {now}.\\n" + RULES\n\n\n'
        "def ask(q, template):\n"
        "    system = template.format(now=f'{datetime.now():%H:%M}')\n"
        f"    return {send('system')}\n"
    )
    assert check(tmp_path, {"app.py": app}) == []


FIXED_CALL = 'prompter.system("default")'


def test_a_method_binds_its_arguments_after_self(tmp_path: Path) -> None:
    """``prompter.system(stamp)`` binds ``stamp`` to the method's first parameter after ``self``: the
    call that passes a constant sends a static prompt, the one that passes the time does not.
    Catches: ``self`` not skipped when a method's arguments are bound (``evaluate.call_function``),
    which left ``stamp`` to its callers, the costliest of which is the time."""
    app = (
        "import time\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "class Prompter:\n"
        "    def system(self, stamp):\n"
        '        return f"Session {stamp}.\\n" + RULES\n\n\n'
        "prompter = Prompter()\n\n\n"
        "def ask(q):\n"
        f"    return {send('prompter.system(time.time())')}\n\n\n"
        "def ask_fixed(q):\n"
        f"    return {send(FIXED_CALL)}\n"
    )
    assert codes(check(tmp_path, {"app.py": app})) == [("PFX101", "app.py", 17)]


@pytest.mark.parametrize(
    ("source", "name"),
    [('"Config"', "Config"), ('" Config "', "Config"), ('"dict[str, Config]"', ""), ("Config", "Config")],
)
def test_the_class_a_string_annotation_names(source: str, name: str) -> None:
    """A quoted annotation names its class; a quoted expression names none (an empty string).
    Catches: ``class_annotation`` returning None for a quoted annotation (``collect.py``)."""
    import libcst as cst

    from prefixlint.analysis.python.collect import class_annotation

    assert class_annotation(cst.parse_expression(source)) == name


def test_the_repr_of_a_module_function_prints_a_memory_address(tmp_path: Path) -> None:
    """``f"{lookup!r}"`` of a function defined in the module prints ``<function lookup at 0x...>``,
    which differs between processes: PFX403 at that placeholder.
    Catches: module functions (and module-level classes) not seen as address reprs (``evaluate.py``)."""
    app = (
        OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def lookup(name):\n"
        "    return name\n\n\n"
        "def ask(q):\n"
        '    system = f"Tool: {lookup!r}.\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    assert codes(check(tmp_path, {"app.py": app})) == [("PFX403", "app.py", 12)]


def test_a_field_whose_default_is_none_is_set_later_and_named_by_its_name(tmp_path: Path) -> None:
    """``current_time: str | None = field(default=None)`` is a placeholder the instance fills later:
    what its name says (a timestamp), not the text ``None``.
    Catches: a ``field(default=None)`` read as its default's text (``evaluate._field``)."""
    app = (
        "from dataclasses import dataclass, field\n\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "@dataclass\n"
        "class Turn:\n"
        "    current_time: str | None = field(default=None)\n"
        '    topic: str = field(default="payroll")\n\n\n'
        "def ask(q, turn: Turn):\n"
        '    system = f"Topic: {turn.topic}. Now: {turn.current_time}.\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX101", "app.py", 11)]  # reported where the field is declared
    assert "current_time" in found[0]["message"]
