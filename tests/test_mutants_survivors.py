"""Analysis behaviour that the survivors of the seed-1 mutation sample would change (issue 16).

Each test analyses a small fresh project in process (``analyze`` of :mod:`tests.test_python_analysis`)
and asserts the prompt layout it reads: the text, role, kind and place of each segment. The
docstring of each test names the change it catches, checked by applying that mutant by hand.
"""

from __future__ import annotations

from pathlib import Path

from prefixlint.model.layout import DynamicKind, Layout
from tests.test_analysis_mutants import RULES as PARAGRAPH
from tests.test_analysis_mutants import check
from tests.test_payload_align import LONG, aligned
from tests.test_python_analysis import analyze
from tests.test_template_render_callers import RULES as RENDER_RULES
from tests.test_template_render_callers import _project as render_project
from tests.test_template_render_callers import _template_findings as template_findings

RULES = "You are a careful payroll assistant. Answer briefly, cite the help centre, never guess numbers."
OPENAI = "from openai import OpenAI\nclient = OpenAI()\n"


SYSTEM = '{"role": "system", "content": RULES}'
USER = '{"role": "user", "content": q}'


def send(messages: str) -> str:
    return f'client.chat.completions.create(model="gpt-4.1", messages={messages})'


def system_then(q: str, system: str) -> str:
    """A chat call that sends ``system`` and then the user's ``q``."""
    return send(f'[{{"role": "system", "content": {system}}}, {{"role": "user", "content": {q}}}]')


def layouts(tmp_path: Path, code: str, files: dict[str, str] | None = None) -> list[Layout]:
    result = analyze(tmp_path, code, files=files)
    assert not result.errors, result.errors
    return [lay for lay in result.layouts if "(name)" not in lay.sink_name]


def texts(layout: Layout) -> list[tuple[str | None, bool, str]]:
    """(role, static, text) of each segment."""
    return [(s.role, s.static, s.text) for s in layout.segments]


def test_lower_of_a_literal_is_the_lowered_text(tmp_path: Path) -> None:
    """``"PAYROLL DESK.".lower()`` is the text ``payroll desk.``.
    Catches: ``lower`` dropped from the methods applied to static text (``evaluate._apply_method``)."""
    code = OPENAI + f"RULES = {RULES!r}\n\n\ndef ask(q):\n"
    lowered = '"PAYROLL DESK. ".lower() + RULES'
    code += f"    return {system_then('q', lowered)}\n"
    (lay,) = layouts(tmp_path, code)
    assert texts(lay)[0] == ("system", True, "payroll desk. ")


def test_an_attribute_of_an_imported_module_is_its_constant(tmp_path: Path) -> None:
    """``import settings`` then ``settings.PROMPT``: the constant's text, placed in ``settings.py``.
    Catches: the module read from the wrong item of the import's resolution (an internal error)."""
    code = "import settings\n" + OPENAI + "\n\ndef ask(q):\n"
    code += f"    return {system_then('q', 'settings.PROMPT')}\n"
    (lay,) = layouts(tmp_path, code, {"settings.py": f"PROMPT = {RULES!r}\n"})
    first = lay.segments[0]
    assert (first.static, first.text) == (True, RULES)
    assert first.location is not None and Path(first.location.path).name == "settings.py"


def test_a_role_keyword_of_a_message_class_sets_the_role(tmp_path: Path) -> None:
    """``ChatMessage(role="system", content=...)`` is a system message (the class's default is user).
    Catches: the ``role`` keyword of a message constructor ignored (``messages.py``)."""
    code = (
        "from llama_index.core.llms import ChatMessage\n\n\ndef ask(llm, q):\n"
        f"    return llm.chat([ChatMessage(role='system', content={RULES!r}), ChatMessage(q)])\n"
    )
    (lay,) = layouts(tmp_path, code)
    assert texts(lay) == [("system", True, RULES), ("user", False, "q")]


def test_a_parameter_named_like_a_module_message_is_not_that_message(tmp_path: Path) -> None:
    """A module-level message dict ``GREETING`` and a function whose parameter is also ``GREETING``:
    in the function the name is the caller's value (history), not the module's constant message.
    Catches: the local-name check of ``_module_message`` dropped (the module's dict read instead)."""
    code = (
        OPENAI
        + f"RULES = {RULES!r}\n"
        + 'GREETING = {"role": "assistant", "content": "Hello! How can I help?"}\n\n\n'
        "def ask(q, GREETING):\n"
        f"    return {send('[' + SYSTEM + ', GREETING, ' + USER + ']')}\n"
    )
    (lay,) = layouts(tmp_path, code)
    assert [(r, s) for r, s, _ in texts(lay)] == [("system", True), ("history", False), ("user", False)]
    assert lay.segments[1].kind is DynamicKind.HISTORY


def test_a_parameter_named_like_a_function_is_not_that_prompt_callable(tmp_path: Path) -> None:
    """``prompt=instructions`` where ``instructions`` is a parameter of the caller, and the module
    also defines a function ``instructions`` returning a dated prompt: the prompt is the caller's
    argument (unknown), so the module function's timestamp is not reported.
    Catches: a parameter not taken as local in ``prompt_callables._is_local`` (``or`` -> ``and``)."""
    code = (
        "from datetime import datetime\nfrom langgraph.prebuilt import create_react_agent\n\n\n"
        "def instructions(state):\n"
        f'    return "Time: " + datetime.now().isoformat() + {RULES!r}\n\n\n'
        "def node(state, model, instructions):\n"
        "    agent = create_react_agent(model, tools=[], prompt=instructions)\n"
        "    return agent.invoke(state)\n"
    )
    found = layouts(tmp_path, code)
    assert not [s for lay in found for s in lay.segments if s.kind is DynamicKind.TIMESTAMP]
    assert not [s for lay in found for s in lay.segments if RULES in s.text]


def test_an_object_sends_the_prompt_its_own_constructor_was_given(tmp_path: Path) -> None:
    """Two ``Bot`` objects, one made with a dated prompt and one with plain text, each asked through
    a sending method that reads ``self.system``: the plain one's request holds no timestamp.
    Catches: the constructor's bindings of the object dropped when its sending method is followed
    (``sendpaths``: ``self_binds or {}`` -> ``and {}``), so every object gets every prompt."""
    code = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "class Bot:\n"
        "    def __init__(self, system):\n"
        "        self.system = system\n\n"
        "    def ask(self, q):\n"
        f"        return {system_then('q', 'self.system')}\n\n\n"
        "def dated(q):\n"
        '    bot = Bot(f"Now {datetime.now():%H:%M}. " + RULES)\n'
        "    return bot.ask(q)\n\n\n"
        "def plain(q):\n"
        '    bot = Bot("Plain. " + RULES)\n'
        "    return bot.ask(q)\n"
    )
    found = layouts(tmp_path, code)
    plain_line = len(code[: code.rfind("    return bot.ask(q)")].splitlines()) + 1
    (plain,) = [lay for lay in found if lay.segments[-1].location.line == plain_line]  # type: ignore[union-attr]
    assert texts(plain)[:2] == [("system", True, "Plain. "), ("system", True, RULES)]
    assert any(s.kind is DynamicKind.TIMESTAMP for lay in found for s in lay.segments)


def test_a_field_of_a_dataclass_four_bases_up_is_known(tmp_path: Path) -> None:
    """``E(a=user.name, ...)`` where ``a`` is declared four dataclasses up (E -> D -> C -> B -> A):
    ``ctx.a`` is the user's name, found where it is passed.
    Catches: the base-class depth counted from 1 (``records._fields``), which loses ``A``'s fields."""
    classes = "".join(
        f"@dataclass\nclass {name}{'(' + base + ')' if base else ''}:\n    {name.lower()}: str\n\n\n"
        for name, base in (("A", ""), ("B", "A"), ("C", "B"), ("D", "C"), ("E", "D"))
    )
    code = (
        "from dataclasses import dataclass\n"
        + OPENAI
        + f"RULES = {RULES!r}\n\n\n"
        + classes
        + "def ask(q, user):\n"
        '    ctx = E(a=user.name, b="x", c="y", d="z", e="w")\n'
        f"    return {system_then('q', 'ctx.a + RULES')}\n"
    )
    (lay,) = layouts(tmp_path, code)
    first = lay.segments[0]
    assert (first.static, first.kind, first.text) == (False, DynamicKind.USER_IDENTITY, "user.name")


def test_a_backslash_before_a_placeholder_of_an_f_string_stays_text(tmp_path: Path) -> None:
    """``f"Folder C:\\{user.name} ..."``: the literal part ``Folder C:\\`` cannot be read as a
    string on its own (its backslash escapes the closing quote), so it is kept as written.
    Catches: ``decode_literal`` returning nothing for a part it cannot decode (an internal error)."""
    code = OPENAI + f"RULES = {RULES!r}\n\n\ndef ask(q, user):\n"
    code += '    system = f"Folder C:\\{user.name} " + RULES\n'
    code += f"    return {system_then('q', 'system')}\n"
    (lay,) = layouts(tmp_path, code)
    assert texts(lay)[:2] == [("system", True, "Folder C:\\"), ("system", False, "user.name")]


def test_the_render_call_is_in_the_chain_of_a_value_computed_before_it(tmp_path: Path) -> None:
    """A template file bound through an in-house render helper; the caller computes the time on one
    line and passes it on the next: the finding in the template names the render call's line too.
    Catches: the render call left out of the value's chain (``template_callers._binding``)."""
    root = render_project(
        tmp_path,
        "You write summaries.\nMarker: {{ marker }}\n" + RENDER_RULES,
        """
        import datetime
        from app.convo import Conversation

        def summarize(doc):
            stamp = datetime.datetime.now().strftime("%H:%M:%S")
            return Conversation().template("summarize", marker=stamp)
        """,
    )
    (found,) = template_findings(root)
    assert (found["filename"], found["location"]["row"]) == ("prompts/writer/summarize.prompt", 2)
    steps = [(s["filename"], s["location"]["row"], s["location"]["column"]) for s in found["chain"]]
    call = "    return Conversation()"
    assert ("app/writer.py", 7, len(call) - len("Conversation()") + 1) in steps  # the render call


def test_a_python_file_read_as_text_is_static_text_at_the_read(tmp_path: Path) -> None:
    """``Path("tools.py").read_text()`` puts the file's code in the prompt: static text, placed at
    the read call (a Python file is no prompt file to report lines in).
    Catches: ``file_text`` returning nothing for a Python file (the read becomes an unknown value)."""
    tools = "def add(a, b):\n    return a + b\n"
    code = OPENAI + f"RULES = {RULES!r}\n\n\ndef ask(q):\n"
    code += '    system = RULES + " Code: " + Path("tools.py").read_text()\n'
    code += f"    return {system_then('q', 'system')}\n"
    (lay,) = layouts(tmp_path, "from pathlib import Path\n" + code, {"tools.py": tools})
    last = lay.segments[-2]
    assert (last.role, last.static, last.text) == ("system", True, tools)
    assert last.location is not None and Path(last.location.path).name == "app.py"


def test_a_path_joined_to_an_unknown_folder_is_an_unknown_read(tmp_path: Path) -> None:
    """``open(base_dir() + "/prompt.md").read()`` with ``base_dir`` from outside the project: the
    file cannot be told, so its text is one unknown value (and the analysis does not fail).
    Catches: the unknown left side of ``+`` in a path not checked (``None / "prompt.md"`` fails)."""
    code = "from company.paths import base_dir\n" + OPENAI + f"RULES = {RULES!r}\n\n\ndef ask(q):\n"
    code += '    system = open(base_dir() + "/prompt.md").read() + RULES\n'
    code += f"    return {system_then('q', 'system')}\n"
    (lay,) = layouts(tmp_path, code)
    first = lay.segments[0]
    assert (first.static, first.kind, first.text) == (
        False,
        DynamicKind.UNKNOWN,
        'open(base_dir() + "/prompt.md").read()',
    )


def test_a_helper_returning_a_file_and_more_is_not_that_file_s_template(tmp_path: Path) -> None:
    """``load()`` returns a prompt file's text plus a sentence: ``load().format(...)`` is not the file
    alone, so the sentence stays in the prompt after the file's text.
    Catches: a helper's value of several pieces taken as the file it starts with
    (``len(segs) != 1 or ...`` -> ``and``), which drops the sentence."""
    code = (
        "from datetime import datetime\nfrom pathlib import Path\n" + OPENAI + "\n\ndef load():\n"
        '    return Path("prompt.md").read_text() + "Always answer in English."\n\n\n'
        "def ask(q):\n"
        "    system = load().format(now=datetime.now())\n"
        f"    return {system_then('q', 'system')}\n"
    )
    (lay,) = layouts(tmp_path, code, {"prompt.md": "Time: {now}\n" + RULES + "\n"})
    assert "Always answer in English." in "".join(s.text for s in lay.segments)


def test_a_constant_fill_of_a_prompt_file_keeps_the_later_marker_in_place(tmp_path: Path) -> None:
    """A module-level ``read_text().replace("<COMPANY>", "Acme Payroll Services")``, then in the
    function ``.replace("<NOW>", time)``: the timestamp is placed at ``<NOW>``'s own column in the
    file (21), not where it falls in the filled text (33).
    Catches: text from a prompt file folded into one piece by a constant fill
    (``fills._in_text_file`` negated), which moves every later marker."""
    code = (
        "from datetime import datetime\nfrom pathlib import Path\n"
        + OPENAI
        + 'BASE = (Path(__file__).parent / "prompt.txt").read_text()'
        + '.replace("<COMPANY>", "Acme Payroll Services")\n\n\n'
        "def ask(q):\n"
        '    system = BASE.replace("<NOW>", datetime.now().isoformat())\n'
        f"    return {system_then('q', 'system')}\n"
    )
    (lay,) = layouts(tmp_path, code, {"prompt.txt": "Desk <COMPANY>, time <NOW>.\n" + RULES + "\n"})
    (stamp,) = [s for s in lay.segments if s.kind is DynamicKind.TIMESTAMP]
    assert stamp.location is not None
    assert (Path(stamp.location.path).name, stamp.location.line, stamp.location.col) == ("prompt.txt", 1, 21)
    assert "".join(s.text for s in lay.segments if s.static).startswith("Desk Acme Payroll Services, time ")


def test_a_filled_template_kept_in_an_unused_name_is_still_a_fill(tmp_path: Path) -> None:
    """``prompt = STEP.format(page=seen)`` with ``seen`` holding the time, and ``prompt`` not used
    after: the fill is still read (the timestamp ahead of the guide), with no analysis error.
    Catches: an assignment whose name is never used given no fate (``uses._assigned`` returning
    nothing), which fails the analysis of the file."""
    guide = "\n".join(
        f"Step {i}: read the page, pick one link, and say why it helps the task." for i in range(12)
    )
    helper = (
        "from datetime import datetime\n\nfrom crawl.prompts import STEP\n\n\n"
        "class PageHelper:\n"
        "    def __init__(self, browser):\n"
        "        self.browser = browser\n\n"
        "    def next_prompt(self):\n"
        '        seen = f"{datetime.now():%H:%M:%S}: {self.browser.url}"\n'
        "        prompt = STEP.format(page=seen)\n"
        "        return None\n"
    )
    prompts = f'STEP = """Where you are:\n{{page}}\n\n{guide}\n"""\n'
    files = {"crawl/__init__.py": "", "crawl/prompts.py": prompts}
    result = analyze(tmp_path, helper, files=files, main="crawl/helper.py")
    assert not result.errors, result.errors
    (lay,) = result.layouts
    assert [(s.static, s.kind) for s in lay.segments] == [
        (True, None),
        (False, DynamicKind.TIMESTAMP),
        (True, None),
    ]


def test_a_package_at_the_project_root_is_found_from_a_subfolder(tmp_path: Path) -> None:
    """``resources.files("prompts").joinpath("system.md").read_text()`` in ``app/agent.py``, with
    the ``prompts`` package at the project root: the prompt is that file's text.
    Catches: the project root left out of the folders a package name is looked up in."""
    code = (
        "from importlib import resources\n" + OPENAI + "\n\ndef ask(q):\n"
        '    system = resources.files("prompts").joinpath("system.md").read_text()\n'
        f"    return {system_then('q', 'system')}\n"
    )
    text = "Be kind.\n" + RULES + "\n"
    files = {"prompts/__init__.py": "", "prompts/system.md": text, "app/__init__.py": ""}
    result = analyze(tmp_path, code, files=files, main="app/agent.py")
    assert not result.errors, result.errors
    (lay,) = result.layouts
    first = lay.segments[0]
    assert (first.static, first.text) == (True, text)
    assert first.location is not None and Path(first.location.path).name == "system.md"


# --- template files, through the CLI ------------------------------------------------------------


def test_a_prompt_named_placeholder_ahead_of_the_rules_is_not_reported(tmp_path: Path) -> None:
    """``{{ system_prompt }}`` opening a template file: a value named as a prompt is most likely
    fixed text put in by the program, so it is kept at a confidence too low to report; a
    placeholder named as a user's identity is still reported.
    Catches: the low confidence of a prompt-named placeholder raised (``bindings``: 0.2 -> 1.2)."""
    body = "\n" + PARAGRAPH * 3
    files = {"prompts/agent.j2": "{{ system_prompt }}" + body, "prompts/user.j2": "{{ user_name }}" + body}
    found = check(tmp_path, files)
    assert [(f["code"], f["filename"]) for f in found] == [("PFX104", "prompts/user.j2")]


def test_a_placeholder_after_a_translated_block_is_located_at_its_braces(tmp_path: Path) -> None:
    """A ``{% trans %}`` block holds two ``{{ }}`` that the parser folds into one expression; the
    timestamp on the next line is still placed at its own ``{{`` (column 6), not at the line start.
    Catches: the search for a placeholder's source span stepping over two spans at a time."""
    template = "{% trans %}Hello {{ user }} from {{ team }}.{% endtrans %}\nNow: {{ current_time }}\n"
    found = check(tmp_path, {"prompts/agent.j2": template + PARAGRAPH * 3})
    stamp = [f for f in found if f["code"] == "PFX101"]
    assert [(f["location"]["row"], f["location"]["column"]) for f in stamp] == [(2, 6)]


def test_a_path_held_in_a_local_variable_is_read(tmp_path: Path) -> None:
    """``path = Path(__file__).parent / "prompt.md"`` then ``path.read_text()`` in a function: the
    prompt is the file's text, placed in the file.
    Catches: the local variable's value read from the wrong assignment (an internal error)."""
    code = (
        "from pathlib import Path\n" + OPENAI + "\n\ndef ask(q):\n"
        '    path = Path(__file__).parent / "prompt.md"\n'
        "    system = path.read_text()\n"
        f"    return {system_then('q', 'system')}\n"
    )
    text = "Be kind.\n" + RULES + "\n"
    (lay,) = layouts(tmp_path, code, {"prompt.md": text})
    first = lay.segments[0]
    assert (first.static, first.text) == (True, text)
    assert first.location is not None and Path(first.location.path).name == "prompt.md"


def test_markers_filled_over_two_statements_are_one_template_fill(tmp_path: Path) -> None:
    """A prompt file's ``<COMPANY>`` filled with a constant on one line and its ``<NOW>`` with the
    time on the next (``system = system.replace(...)``): the timestamp is the file's ``<NOW>`` on
    its line 2, and its chain runs through both ``replace`` lines.
    Catches: the earlier assignment of the variable not followed (``kind == "assign"`` flipped), so
    the first fill is lost from the chain and the value is named by the code, not the marker."""
    code = (
        "from datetime import datetime\nfrom pathlib import Path\n"
        + OPENAI
        + 'TEXT = (Path(__file__).parent / "prompt.txt").read_text()\n\n\n'
        "def ask(q):\n"
        '    system = TEXT.replace("<COMPANY>", "Acme Payroll Services")\n'
        '    system = system.replace("<NOW>", datetime.now().isoformat())\n'
        f"    return {system_then('q', 'system')}\n"
    )
    (lay,) = layouts(tmp_path, code, {"prompt.txt": "Desk <COMPANY>.\nTime <NOW>.\n" + RULES + "\n"})
    (stamp,) = [s for s in lay.segments if s.kind is DynamicKind.TIMESTAMP]
    assert stamp.text == "<NOW>"
    assert stamp.location is not None and (Path(stamp.location.path).name, stamp.location.line) == (
        "prompt.txt",
        2,
    )
    first_fill = (
        code.splitlines().index('    system = TEXT.replace("<COMPANY>", "Acme Payroll Services")') + 1
    )
    assert ("app.py", first_fill) in [(Path(c.path).name, c.line) for c in stamp.chain]


# --- payload alignment --------------------------------------------------------------------------


def test_a_message_whose_role_alone_varies_points_at_its_first_word() -> None:
    """Two requests that differ only in the role of one message (user, then assistant): the varying
    span is the role marker, which has no text; it is shown at the first word of that message.
    Catches: an empty character range kept as it is for a span with no text (``c2 > c1 or text`` ->
    ``and``), so the span's value and place are empty."""

    def body(role: str) -> dict:
        return {
            "model": "gpt-4.1",
            "messages": [
                {"role": "system", "content": LONG},
                {"role": role, "content": "Hello there friend"},
                {"role": "user", "content": "Question?"},
            ],
        }

    (span,) = aligned([body("user"), body("assistant")]).spans
    assert span.values == ["Hello", "Hello"]
    assert (span.char_start, span.char_end) == (0, len("Hello"))


def test_a_path_resolved_with_arguments_is_read_from_its_object(tmp_path: Path) -> None:
    """``(folder / "prompt.md").resolve(strict=True).read_text()``: the path is the object the
    method is called on, not its argument (``True``); the unbound ``Path.resolve(p)`` reads ``p``."""
    text = "Be kind.\n" + RULES + "\n"
    for read in (
        '(Path(__file__).parent / "prompt.md").resolve(strict=True).read_text()',
        'Path.resolve(Path(__file__).parent / "prompt.md").read_text()',
        '(Path(__file__).parent / "prompt.md").absolute().read_text()',
    ):
        code = "from pathlib import Path\n" + OPENAI + f"\n\ndef ask(q):\n    system = {read}\n"
        code += f"    return {system_then('q', 'system')}\n"
        (lay,) = layouts(tmp_path, code, {"prompt.md": text})
        first = lay.segments[0]
        assert (first.static, first.text) == (True, text), read
        assert first.location is not None and Path(first.location.path).name == "prompt.md"
