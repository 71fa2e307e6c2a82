"""Analysis behaviour that a plausible change to the analyzer would alter (issue 16).

Each test writes a small project under ``tmp_path`` and runs the real ``prefixlint check`` on it, so
it asserts findings a user sees, not the analyzer's internals. The docstring of each test names the
change to the analysis it catches (checked by applying that change by hand).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.cli_support import invoke

RULES = (
    "You are a careful payroll assistant. Answer briefly, cite the help centre, never guess numbers. "
    "Refuse questions about other employees and say which policy applies to each answer you give. "
    "Payroll cut-off is three business days before the pay date, and corrections after it go to the "
    "next run. New employees need a legal name, an address, a tax id, a bank account and a start date. "
    "Escalate a missed payroll, a bank rejection or a tax notice to a person, and reply in the user's "
    "language. "
)  # about a paragraph (over 100 tokens): a value ahead of it is worth reporting
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
    """Findings of ``prefixlint check`` (JSON) on a fresh project made of ``files``, in one process
    (so that one project index serves every file, as in an editor or a small project)."""
    write(root, files)
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", *args, "."], root)
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
    # ``current_date`` names a date: per request it is day-granular (PFX111)
    assert found == [("PFX201", "app.py", 6), ("PFX111", "app.py", 14)]


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
    # the second is a date (%Y-%m-%d): day-granular, PFX111
    assert codes(found) == [("PFX101", "app.py", 11), ("PFX111", "app.py", 16)]
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


# --- imports inside a subpackage ----------------------------------------------------------------

PROMPTS_MODULE = (
    "from datetime import datetime\n\n"
    f"RULES = {RULES!r}\n"
    'TEMPLATE = "Today is {today}.\\n" + RULES\n\n\n'
    "def system_prompt():\n"
    '    return f"Now {datetime.now():%H:%M}.\\n" + RULES\n'
)
# How app/agent_{n}.py reaches app/prompts_{n}.py: (import, the template, the helper).
IMPORT_STYLES = [
    ("from .prompts_{n} import TEMPLATE, system_prompt", "TEMPLATE", "system_prompt()"),
    ("from app.prompts_{n} import TEMPLATE, system_prompt", "TEMPLATE", "system_prompt()"),
    ("from app import prompts_{n}", "prompts_{n}.TEMPLATE", "prompts_{n}.system_prompt()"),
    ("from . import prompts_{n} as p", "p.TEMPLATE", "p.system_prompt()"),
    ("import app.prompts_{n} as p", "p.TEMPLATE", "p.system_prompt()"),
    ("from prompts_{n} import TEMPLATE, system_prompt", "TEMPLATE", "system_prompt()"),  # a script folder
]


@pytest.mark.parametrize("root", ["", "backend/"], ids=["at the root", "under a source folder"])
def test_imports_inside_a_subpackage(tmp_path: Path, root: str) -> None:
    """``app/agent_N.py`` imports ``app/prompts_N.py`` (a package at the project root, or under
    ``backend/``), one import style per N: the template filled per request and the helper's
    timestamp are both found in each prompts module.
    Catches: the import resolver losing the importer's folder, a package above it, the relative
    level, a submodule named in ``from pkg import mod``, or which package a relative import is from."""
    files = {f"{root}app/__init__.py": ""}
    expected = []
    for n, style in enumerate(IMPORT_STYLES):
        imports, template, helper = (part.format(n=n) for part in style)
        files[f"{root}app/prompts_{n}.py"] = PROMPTS_MODULE
        files[f"{root}app/agent_{n}.py"] = (
            "from datetime import date\n" + imports + "\n" + OPENAI + "\n\n"
            "def ask(q):\n"
            f"    system = {template}.format(today=date.today())\n"
            f"    return {send('system')}\n\n\n"
            "def ask_now(q):\n"
            f"    return {send(helper)}\n"
        )
        # ``date.today()`` fills the template with a date (PFX111); the helper's timestamp is PFX101
        expected += [("PFX111", f"{root}app/prompts_{n}.py", 4), ("PFX101", f"{root}app/prompts_{n}.py", 8)]
    # a second package whose modules have the same names: its own prompts_0.py, not app's
    files[f"{root}admin/__init__.py"] = ""
    files[f"{root}admin/prompts_0.py"] = PROMPTS_MODULE
    files[f"{root}admin/agent_0.py"] = files[f"{root}app/agent_0.py"]
    expected = [
        ("PFX111", f"{root}admin/prompts_0.py", 4),
        ("PFX101", f"{root}admin/prompts_0.py", 8),
        *expected,
    ]
    assert codes(check(tmp_path, files)) == expected


# --- dataclass fields ---------------------------------------------------------------------------


def test_dataclass_fields_by_their_values_not_their_names(tmp_path: Path) -> None:
    """A field with a neutral name and ``default_factory=datetime.now`` is a timestamp (from the
    factory) and one with ``field(default=datetime.now()...)`` a value fixed at class definition;
    fields with a static default are static even when their names sound per-request.
    Catches: the factory's call not classified (only the name guessed), or a static default
    (plain or ``field(default=...)``) guessed from its name."""
    app = (
        "from dataclasses import dataclass, field\n"
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "@dataclass\n"
        "class Ctx:\n"
        "    stamp: datetime = field(default_factory=datetime.now)\n"
        '    request_id: str = "batch"\n'
        '    current_date: str = field(default="the review period")\n'
        "    booted: str = field(default=datetime.now().isoformat())\n\n\n"
        "def ask(ctx: Ctx, q):\n"
        '    system = f"Batch {ctx.request_id} for {ctx.current_date}, up since {ctx.booted}.\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        "def ask_stamped(ctx: Ctx, q):\n"
        '    system = f"Opened {ctx.stamp:%H:%M}.\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    # the factory runs per instance; a ``field(default=...)`` once, when the class is defined
    assert codes(found) == [("PFX101", "app.py", 11), ("PFX201", "app.py", 14)]
    assert found[0]["confidence"] == 1.0


# --- the catalog of dynamic calls ---------------------------------------------------------------


def test_catalog_classifies_calls_with_full_confidence(tmp_path: Path) -> None:
    """Calls named in ``catalog.toml`` are classified from it, with confidence 1.0: a dotted call
    (``datetime.now``), one reached through an alias (``from uuid import uuid4 as new_key``), a
    module alias (``import time as clock``) and a glob (``*.similarity_search``). The name-based
    guess alone would give ``now`` a lower confidence and say nothing about the others.
    Catches: the catalog's exact, suffix or glob match, or the alias expansion, dropped."""
    values = [
        "datetime.now()",
        "new_key()",
        "clock.monotonic()",
        "store.similarity_search(q)",
        "timeutil.datetime.now()",
        "current_date",
    ]
    # one prompt per value (a prompt's values of one cause would make one finding)
    asks = "".join(
        f"def ask_{i}(q, store, current_date):\n"
        f'    system = f"Value {{{v}}}.\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        for i, v in enumerate(values)
    )
    app = (
        "import time as clock\n"
        "from datetime import datetime\n"
        "from uuid import uuid4 as new_key\n"
        "from app import timeutil\n" + OPENAI + f"RULES = {RULES!r}\n\n\n" + asks
    )
    found = check(tmp_path, {"app.py": app})
    assert [(f["code"], f["location"]["row"], f["confidence"]) for f in found[:5]] == [
        ("PFX101", 12, 1.0),
        ("PFX102", 17, 1.0),
        ("PFX101", 22, 1.0),
        ("PFX105", 27, 1.0),
        ("PFX101", 32, 1.0),  # ``datetime.now`` re-exported by a module of the project
    ]
    # a parameter classified by its name only is a guess: reported (a date: PFX111), and less certain
    (guess,) = found[5:]
    assert (guess["code"], guess["location"]["row"]) == ("PFX111", 37) and guess["confidence"] < 1.0


# --- Jinja files: the loader's folder, and includes whose names are not unique -------------------

JINJA_APP = (
    "from datetime import datetime\n\n"
    "from jinja2 import Environment, FileSystemLoader\n" + OPENAI + "\n"
    'env = Environment(loader=FileSystemLoader("prompts"))\n\n\n'
    "def ask(q):\n"
    '    system = env.get_template("system.j2").render(stamp=datetime.now())\n'
    f"    return {send('system')}\n"
)


def test_loader_folder_wins_over_a_template_of_the_same_name_elsewhere(tmp_path: Path) -> None:
    """``FileSystemLoader("prompts")`` and ``get_template("system.j2")``: the template is
    prompts/system.j2 even though templates/system.j2 (a folder the analyzer also looks in) and
    archive/system.j2 exist; nested includes resolve from the loader's folder too, not to the
    first file of the same name in the project. Only the real chain holds the bound timestamp
    (``stamp`` says nothing by its name, so no other file is reported on its own).
    Catches: the loader's folders ignored, searched after the defaults, or an include looked up
    by file name alone (the first match in the project)."""
    static = f"Static header.\n{RULES}\n"
    files = {
        "app.py": JINJA_APP,
        "prompts/system.j2": '{% include "partials/header.j2" %}\n' + RULES + "\n",
        "prompts/partials/header.j2": 'Desk notes.\n{% include "partials/stamp.j2" %}\n',
        "prompts/partials/stamp.j2": "Opened {{ stamp }}.\n",
        "templates/system.j2": static,
        "archive/system.j2": static,
        "archive/partials/stamp.j2": "Opened at the start of the day.\n",
        "archive/partials/header.j2": "Desk notes.\n",
    }
    found = check(tmp_path, files)
    # reported at the include of the rendered template (the line to move)
    assert codes(found) == [("PFX101", "prompts/system.j2", 1)]
    chain = steps(found[0])
    assert ("app.py", 12) in chain  # rendered by app.py, through both includes, to the value
    assert [step for step in chain if step[0].startswith("prompts/")] == [
        ("prompts/partials/header.j2", 2),
        ("prompts/partials/stamp.j2", 1),
    ]


# --- json.dumps: a finding ahead of the cached prefix, none in the new user turn -----------------


def test_json_dumps_in_the_last_user_message_is_not_reported(tmp_path: Path) -> None:
    """``json.dumps(profile)`` in the new user turn changes nothing cached; the same call in the
    system prompt is PFX401.
    Catches: PFX401 ignoring where the value sits, or the last user message not marked as such."""
    app = (
        "import json\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q, profile: dict):\n"
        "    return client.chat.completions.create(\n"
        '        model="gpt-4.1",\n'
        "        messages=[\n"
        '            {"role": "system", "content": RULES},\n'
        '            {"role": "user", "content": f"{q}\\nProfile: {json.dumps(profile)}"},\n'
        "        ],\n"
        "    )\n\n\n"
        "def ask_profiled(q, profile: dict):\n"
        '    system = "Profile: " + json.dumps(profile) + "\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    # (``profile`` is also a user's identity by its name: PFX104 there, and not in the user turn)
    assert codes(found) == [("PFX104", "app.py", 19), ("PFX401", "app.py", 19)]


# --- severity at exactly the thresholds ---------------------------------------------------------

# Long enough (about 1,100 tokens) that the prompt reaches the provider's 1,024-token minimum: a
# prompt that never can is informational whatever the thresholds say.
THRESHOLD_APP = (
    "import os\nfrom datetime import datetime\n" + OPENAI + f"RULES = {RULES * 32!r}\n"
    'STARTED = f"Started {datetime.now():%H:%M}.\\n" + RULES\n\n\n'
    "def ask(q):\n"
    '    system = f"Now {datetime.now():%H:%M}.\\n" + RULES\n'
    f"    return {send('system')}\n\n\n"
    "def ask_started(q):\n"
    f"    return {send('STARTED')}\n"
)


def severities(root: Path, high: int, medium: int, min_impact: int = 0) -> dict[str, str]:
    config = f"[tool.prefixlint]\nmin-impact-tokens = {min_impact}\n"
    config += f"[tool.prefixlint.thresholds]\nhigh = {high}\nmedium = {medium}\n"
    found = check(root, {"app.py": THRESHOLD_APP, "pyproject.toml": config})
    return {f["code"]: f["severity"] for f in found}


def test_severity_at_exactly_each_threshold(tmp_path: Path) -> None:
    """A finding that loses exactly ``medium`` or ``high`` tokens takes that severity; one token
    short, the one below. PFX101 (a timestamp to the minute) reaches high; PFX201 stops at its
    ceiling, low. Below ``min-impact-tokens`` a finding is informational.
    Catches: ``>=`` read as ``>`` at either threshold or at ``min-impact-tokens``, or a rule's
    ceiling ignored."""
    (lost,) = {f["impact"]["tokens_lost"] for f in check(tmp_path, {"app.py": THRESHOLD_APP})}
    big = lost * 10
    cases = [
        ((big, lost), {"PFX101": "medium", "PFX201": "low"}),
        ((big, lost + 1), {"PFX101": "low", "PFX201": "low"}),
        ((lost, 2), {"PFX101": "high", "PFX201": "low"}),  # high for PFX201 too, held at its ceiling
        ((lost + 1, 2), {"PFX101": "medium", "PFX201": "low"}),
        # ``min-impact-tokens``: exactly the tokens at stake still counts; one more is informational
        ((lost, 2, lost), {"PFX101": "high", "PFX201": "low"}),
        ((lost, 2, lost + 1), {"PFX101": "info", "PFX201": "info"}),
    ]
    for thresholds, expected in cases:
        assert severities(tmp_path, *thresholds) == expected, thresholds


# --- names: the project's own, and words too common to say anything alone -------------------------


def test_names_from_config_and_weak_words(tmp_path: Path) -> None:
    """A name the project declares (``dynamic-sources`` with ``match = "name"``) is classified; a
    longer name is classified by a telling word in it (``report_timestamp``) but not by a common
    one alone (``date_format`` stays a value of unknown kind).
    Catches: the config's name patterns dropped, or the weak-word test inverted."""
    config = (
        '[tool.prefixlint]\ndynamic-sources = [{pattern = "stamp", kind = "timestamp", match = "name"}]\n'
    )
    app = (
        OPENAI + f"RULES = {RULES * 32!r}\n\n\n"  # the prompt can reach the 1,024-token minimum
        "def ask(q, stamp, report_timestamp, date_format):\n"
        '    system = f"Opened {stamp}.\\n" + RULES\n'
        '    system += f"Report {report_timestamp}.\\n" + RULES\n'
        '    system += f"Dates as {date_format}.\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app, "pyproject.toml": config})
    # both timestamps are one finding (one per cause); a parameter with no caller whose name says
    # nothing is of unknown nature (PFX120, shown since a large static text follows), not a date
    assert codes(found) == [("PFX101", "app.py", 8), ("PFX120", "app.py", 10)]
    assert [(a["location"]["row"], a["kind"]) for a in found[0]["also"]] == [(9, "timestamp")]


# --- helpers with several arguments, methods reading fields, pass-through methods ----------------


def test_helper_arguments_methods_and_string_methods(tmp_path: Path) -> None:
    """Each positional argument binds its own parameter; a method reads a dataclass field through
    ``self``; ``(... ).strip()`` keeps what its text holds.
    Catches: positional arguments all bound to the first parameter, ``self.<field>`` not read from
    the class, or a pass-through string method losing its receiver."""
    app = (
        "from dataclasses import dataclass, field\n"
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def build(title, moment):\n"
        '    return f"{title}: {moment}.\\n" + RULES\n\n\n'
        "@dataclass\n"
        "class Desk:\n"
        "    opened: datetime = field(default_factory=datetime.now)\n\n"
        "    def ask(self, q):\n"
        '        system = f"Opened {self.opened:%H:%M}.\\n" + RULES\n'
        f"        return {send('system')}\n\n\n"
        "def ask(q):\n"
        '    system = build("Payroll desk", datetime.now())\n'
        f"    return {send('system')}\n\n\n"
        "def ask_stripped(q):\n"
        '    system = (f"  Now {datetime.now():%H:%M}.\\n" + RULES).strip()\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX101", "app.py", 15), ("PFX101", "app.py", 23), ("PFX101", "app.py", 28)]


# --- template text read from a file, or dedented --------------------------------------------------


def test_template_from_a_prompt_file_and_a_dedented_constant(tmp_path: Path) -> None:
    """``Path(__file__).parent / "prompts" / "system.txt"`` read and formatted per request puts the
    finding in the prompt file; ``textwrap.dedent(TEMPLATE).format(...)`` keeps the placeholder.
    Catches: the ``read_text()`` template not found, or ``dedent`` not seen through."""
    app = (
        "import textwrap\nfrom datetime import date\nfrom pathlib import Path\n" + OPENAI + "\n"
        'TEMPLATE = """\n    Today is {today}.\n    """ + ' + f"{RULES!r}\n\n\n"
        "def ask(q):\n"
        '    text = (Path(__file__).parent / "prompts" / "system.txt").read_text()\n'
        "    system = text.format(today=date.today())\n"
        f"    return {send('system')}\n\n\n"
        "def ask_dedented(q):\n"
        "    system = textwrap.dedent(TEMPLATE).format(today=date.today())\n"
        f"    return {send('system')}\n"
    )
    files = {"app.py": app, "prompts/system.txt": f"Today is {{today}}.\n{RULES}\n"}
    found = codes(check(tmp_path, files))
    # ``date.today()`` is a date: PFX111
    assert found == [("PFX111", "app.py", 9), ("PFX111", "prompts/system.txt", 1)]


# --- message lists: a module constant, LangChain message objects, a set in the prompt -------------


def test_module_message_list_langchain_messages_and_a_set_in_the_prompt(tmp_path: Path) -> None:
    """A message list defined at module level (its timestamp is computed once: PFX201), LangChain
    ``SystemMessage(...)`` with its text as the first positional argument (PFX101), and a set
    iterated into the system prompt (PFX402, fixed by ``sorted(...)``).
    Catches: a module-level message list read as conversation history, the first positional argument
    of a message constructor not read as its content, or the ``sorted`` fix of set iteration dropped."""
    app = (
        "from datetime import datetime\n\n"
        "from langchain_core.messages import HumanMessage, SystemMessage\n"
        "from langchain_openai import ChatOpenAI\n" + OPENAI + 'llm = ChatOpenAI(model="gpt-4.1")\n'
        f"RULES = {RULES!r}\n"
        'TOOLS = {"lookup", "escalate", "refund"}\n'
        'BASE = [{"role": "system", "content": f"Started {datetime.now():%H:%M}.\\n" + RULES}]\n\n\n'
        "def ask(q):\n"
        '    return client.chat.completions.create(model="gpt-4.1", messages=BASE + '
        '[{"role": "user", "content": q}])\n\n\n'
        "def ask_chain(q):\n"
        '    system = SystemMessage(f"Now {datetime.now():%H:%M}.\\n" + RULES)\n'
        "    return llm.invoke([system, HumanMessage(q)])\n\n\n"
        "def ask_tools(q):\n"
        '    system = "Tools:\\n" + "\\n".join(f"- {t}" for t in TOOLS) + "\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX201", "app.py", 11), ("PFX101", "app.py", 19), ("PFX402", "app.py", 24)]
    (edit,) = found[2]["fix"]["edits"]
    assert edit["content"] == "sorted(TOOLS)"


def test_a_prompt_built_under_a_prompt_name_and_sent_nowhere_in_view(tmp_path: Path) -> None:
    """A local variable named like a prompt (``system_prompt``) that holds a timestamp ahead of the
    rules is reported by its name even though no send is in view; the same text under another name
    (``note``) is not.
    Catches: the prompt-name test on local variables inverted or dropped."""
    app = (
        "from datetime import datetime\n\n" + f"RULES = {RULES * 4!r}\n\n\n"
        "def build(log):\n"
        '    system_prompt = f"Now {datetime.now():%H:%M}.\\n" + RULES\n'
        '    note = f"Now {datetime.now():%H:%M}.\\n" + RULES\n'
        "    log(note)\n"
        "    return system_prompt\n"
    )
    assert codes(check(tmp_path, {"app.py": app})) == [("PFX101", "app.py", 7)]


def test_a_helper_with_an_early_bare_return(tmp_path: Path) -> None:
    """A helper that returns early with a bare ``return`` and otherwise returns a dated prompt: the
    prompt is the one value it returns (a bare return gives nothing to send), not an alternative.
    Catches: a bare ``return`` collected as one of the helper's return values."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def system_text(q):\n"
        "    if not q:\n"
        "        return\n"
        '    return f"Now {datetime.now():%H:%M}.\\n" + RULES\n\n\n'
        "def ask(q):\n"
        f"    return {send('system_text(q)')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX101", "app.py", 11)]
    assert "(conditionally)" not in found[0]["message"]


def test_prompt_tables_in_the_same_module_and_imported(tmp_path: Path) -> None:
    """``PROMPTS["qa"]`` of a module-level table, read in its own module and in another one, filled
    per request with ``.format``: each finding sits on the placeholder's line in the table.
    Catches: a table's items not recorded or not found (same module, or imported), or an item read
    not taken as a template source."""
    table = (
        f"RULES = {RULES!r}\n"
        "PROMPTS = {}\n"
        'PROMPTS["qa"] = "Context: {context}.\\n" + RULES\n'
        'LOCAL = {"now": "Now: {now}.\\n" + RULES}\n'
    )
    app = (
        "from datetime import datetime\n" + OPENAI + table + "\n\n"
        "def ask(q):\n"
        '    system = LOCAL["now"].format(now=datetime.now())\n'
        f"    return {send('system')}\n"
    )
    rag = (
        "from prompts import PROMPTS\n" + OPENAI + "\n\n"
        "def answer(q, store):\n"
        '    template = PROMPTS["qa"]\n'
        "    system = template.format(context=store.similarity_search(q))\n"
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app, "prompts.py": table, "rag.py": rag})
    assert codes(found) == [("PFX101", "app.py", 8), ("PFX105", "prompts.py", 3)]


def test_percent_formatting_and_a_conditional_expression(tmp_path: Path) -> None:
    """``TEMPLATE % value`` and ``TEMPLATE % {"name": value}`` put the value at its ``%s``; a dated
    text chosen by ``x if cond else ""`` is reported as conditional.
    Catches: a ``%`` template not rendered (the value no longer at its placeholder), or the dynamic
    branch of a conditional expression lost."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n"
        'TEMPLATE = "Desk notes. Now: %s.\\n" + RULES\n'
        'NAMED = "Desk notes. Now: %(now)s.\\n" + RULES\n\n\n'
        "def ask(q):\n"
        "    system = TEMPLATE % datetime.now()\n"
        f"    return {send('system')}\n\n\n"
        "def ask_named(q):\n"
        '    system = NAMED % {"now": datetime.now()}\n'
        f"    return {send('system')}\n\n\n"
        "def ask_urgent(q, urgent):\n"
        '    system = (f"Now {datetime.now():%H:%M}.\\n" if urgent else "") + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    where = [(f["code"], f["location"]["row"], f["location"]["column"]) for f in found]
    # the first two on their templates' ``%s`` (column of the ``%``), the third in the f-string
    assert where == [("PFX101", 6, 30), ("PFX101", 7, 27), ("PFX101", 21, 22)]
    assert [("(conditionally)" in f["message"]) for f in found] == [False, False, True]


def test_a_template_read_from_a_yaml_file_by_its_keys(tmp_path: Path) -> None:
    """``yaml.safe_load(f)["agents"]["support"]`` filled per request: the finding is on the
    placeholder's line in the YAML file.
    Catches: a subscript of loaded data not followed to the file's key."""
    config = "agents:\n  support: |\n    Today is {today}.\n" + textwrap.indent(RULES, "    ") + "\n"
    app = (
        "from datetime import datetime\nfrom pathlib import Path\n\nimport yaml\n" + OPENAI + "\n\n"
        "def ask(q):\n"
        '    with open(Path(__file__).parent / "agents.yaml") as f:\n'
        "        data = yaml.safe_load(f)\n"
        '    system = data["agents"]["support"].format(today=datetime.now())\n'
        f"    return {send('system')}\n"
    )
    found = codes(check(tmp_path, {"app.py": app, "agents.yaml": config}))
    assert found == [("PFX101", "agents.yaml", 3)]


def test_a_timestamp_coarsened_by_replace(tmp_path: Path) -> None:
    """``now.replace(minute=0, second=0, microsecond=0)`` changes once an hour (PFX101, low cost);
    zeroing the hour too makes a date (PFX111).
    Catches: ``replace(<field>=0)`` not read as coarsening the value."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q):\n"
        '    system = f"Hour {datetime.now().replace(minute=0, second=0, microsecond=0)}.\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        "def ask_daily(q):\n"
        "    day = datetime.now().replace(hour=0, minute=0, second=0, microsecond=0)\n"
        '    system = f"Day {day}.\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX101", "app.py", 9), ("PFX111", "app.py", 14)]
    assert "(to the hour)" in found[0]["message"] and "(a date)" in found[1]["message"]


def test_a_cached_result_follows_a_helper_in_another_module(tmp_path: Path) -> None:
    """``app.py`` sends what ``helpers.system_text()`` returns. With the result cache on, a change
    to ``helpers.py`` alone (a timestamp added) still shows up: app.py's result depends on it.
    Catches: a helper's module not recorded as a dependency of the file that calls it."""
    helpers = (
        f"from datetime import datetime\n\nRULES = {RULES!r}\n\n\ndef system_text():\n    return RULES\n"
    )
    app = (
        "from helpers import system_text\n" + OPENAI + "\n\n"
        f"def ask(q):\n    return {send('system_text()')}\n"
    )
    write(tmp_path, {"app.py": app, "helpers.py": helpers})
    args = ["check", "-j", "1", "--output-format", "json", "."]
    code, out, err = invoke(args, tmp_path)
    assert (code, json.loads(out)) == (0, []), err
    dated = helpers.replace("return RULES", 'return f"Now {datetime.now():%H:%M}.\\n" + RULES')
    (tmp_path / "helpers.py").write_text(dated)
    code, out, err = invoke(args, tmp_path)
    assert code == 1, err
    assert codes(json.loads(out)) == [("PFX101", "helpers.py", 7)]


def test_time_strftime_by_its_format_and_a_config_parameter(tmp_path: Path) -> None:
    """``time.strftime("%Y-%m-%d")`` is a date (PFX111) and ``time.strftime("%H:%M")`` a timestamp to
    the minute (PFX101), by the format; a parameter named ``config`` is fixed at start-up, so a value
    read from it is a process value, the same in every process (no PFX201), not an unknown one (no
    PFX120, though the prompt behind it reaches the minimum).
    Catches: the format of a ``strftime`` call not read, or a config parameter's timing lost."""
    app = (
        "import time\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q):\n"
        "    system = f\"Day {time.strftime('%Y-%m-%d')}.\\n\" + RULES\n"
        f"    return {send('system')}\n\n\n"
        "def ask_now(q):\n"
        "    system = f\"Now {time.strftime('%H:%M')}.\\n\" + RULES\n"
        f"    return {send('system')}\n\n\n"
        "def ask_mode(q, config):\n"
        '    system = f"Mode {config.mode}.\\n" + RULES * 32\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX111", "app.py", 9), ("PFX101", "app.py", 14)]
    assert "(to the minute)" in found[1]["message"]


def test_derived_values_and_a_history_each_class_fills(tmp_path: Path) -> None:
    """``int(time.time())`` is to the second; ``topic.title()`` of an unknown parameter stays of
    unknown nature (PFX120: the static text behind it is large), not a timestamp; a list attribute
    that one class fills with timestamps says nothing about another class's list of the same name
    (that one grows with what its own class appends: memory, PFX107).
    Catches: ``int()`` of a sub-second time not re-grained, a string method taken for a time method,
    or appends of another class counted."""
    app = (
        "import time\nfrom datetime import datetime\n" + OPENAI + f"RULES = {RULES * 32!r}\n\n\n"
        "def ask(q):\n"
        '    system = f"Epoch {int(time.time())}.\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        "def ask_topic(q, topic):\n"
        '    system = f"Topic {topic.title()}.\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        "class Log:\n"
        "    def __init__(self):\n"
        "        self.notes = []\n\n"
        "    def mark(self):\n"
        "        self.notes.append(str(datetime.now()))\n\n\n"
        "class Desk:\n"
        "    def __init__(self):\n"
        "        self.notes = []\n\n"
        "    def add(self):\n"
        '        self.notes.append("Be brief.")\n\n'
        "    def ask(self, q):\n"
        '        system = "\\n".join(self.notes) + RULES\n'
        f"        return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    # Desk's list grows with each call: memory (PFX107), and it holds no timestamp
    assert codes(found) == [("PFX101", "app.py", 10), ("PFX120", "app.py", 15), ("PFX107", "app.py", 32)]
    assert "(to the second)" in found[0]["message"]


def test_time_through_a_module_alias_a_field_and_a_list_a_method_fills(tmp_path: Path) -> None:
    """``clock.ctime()`` (``import time as clock``) is priced as ``time.ctime`` (to the second);
    ``datetime.now().year`` changes once a year (PFX111); a list attribute with a neutral name that
    a method appends timestamps to holds timestamps.
    Catches: an import alias not expanded for the time catalog, a time field not re-grained, or
    ``self.<list>.append(...)`` in a method not seen."""
    app = (
        "import time as clock\nfrom datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q):\n"
        '    system = f"Now {clock.ctime()}.\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        "def ask_year(q):\n"
        '    system = f"Year {datetime.now().year}.\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        "class Desk:\n"
        "    def __init__(self):\n"
        "        self.lines = []\n\n"
        "    def mark(self):\n"
        "        self.lines.append(datetime.now().isoformat())\n\n"
        "    def ask(self, q):\n"
        '        system = "\\n".join(self.lines) + RULES\n'
        f"        return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX101", "app.py", 10), ("PFX111", "app.py", 15), ("PFX101", "app.py", 24)]
    assert "(to the second)" in found[0]["message"] and "(a year)" in found[1]["message"]


def test_a_loop_variable_holds_what_its_loop_iterates(tmp_path: Path) -> None:
    """``for hit in store.similarity_search(q): system += f"{hit}"``: the loop variable (a neutral
    name) holds retrieved context, ahead of the rules (PFX105).
    Catches: a ``for`` target not recorded as taking the values of what the loop iterates."""
    app = (
        OPENAI + f"RULES = {RULES!r}\n\n\n"
        "def ask(q, store):\n"
        '    system = "Notes:\\n"\n'
        "    for hit in store.similarity_search(q):\n"
        '        system += f"- {hit}\\n"\n'
        "    system += RULES\n"
        f"    return {send('system')}\n"
    )
    assert codes(check(tmp_path, {"app.py": app})) == [("PFX105", "app.py", 9)]


def test_prompt_file_paths_built_several_ways(tmp_path: Path) -> None:
    """A prompt file opened by a path built with ``str(...) + "/prompts/..."``, ``open(str(path))``
    and ``os.path.join(folder, "prompts", name)``, then filled per request: each finding is on the
    placeholder's line of the file it reads.
    Catches: the left part of ``+``, the argument of ``str(...)`` or a part of ``os.path.join`` not
    evaluated as a path."""
    app = (
        "import os\nfrom datetime import datetime\nfrom pathlib import Path\n" + OPENAI + "\n"
        "HERE = os.path.dirname(os.path.abspath(__file__))\n\n\n"
        "def ask(q):\n"
        '    with open(str(Path(__file__).parent) + "/prompts/a.txt") as f:\n'
        "        system = f.read().format(now=datetime.now())\n"
        f"    return {send('system')}\n\n\n"
        "def ask_b(q):\n"
        '    with open(str(Path(__file__).parent / "prompts" / "b.txt")) as f:\n'
        "        system = f.read().format(now=datetime.now())\n"
        f"    return {send('system')}\n\n\n"
        "def ask_c(q):\n"
        '    with open(os.path.join(HERE, "prompts", "c.txt")) as f:\n'
        "        system = f.read().format(now=datetime.now())\n"
        f"    return {send('system')}\n"
    )
    files = {"app.py": app}
    for name in "abc":
        files[f"prompts/{name}.txt"] = f"Desk {name}.\nNow: {{now}}.\n{RULES}\n"
    found = codes(check(tmp_path, files))
    assert found == [("PFX101", f"prompts/{n}.txt", 2) for n in "abc"]


def test_a_method_of_a_parameter_is_not_the_method_of_a_module_instance(tmp_path: Path) -> None:
    """``stamper = Clock()`` at module level, and ``def build(stamper): ... stamper.stamp()``: inside
    ``build`` the name is the caller's value (a ``Fixed``), not the module's ``Clock``, so only the
    function that reads the module's instance itself has a timestamp (PFX101 at ``Clock.stamp``).
    Catches: an instance looked up for a name bound by the caller (or not for an unbound one)."""
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        "class Clock:\n    def stamp(self):\n        return datetime.now().isoformat()\n\n\n"
        'class Fixed:\n    def stamp(self):\n        return "v1"\n\n\n'
        "stamper = Clock()\n\n\n"
        'def build(stamper):\n    return f"Version {stamper.stamp()}.\\n" + RULES\n\n\n'
        f"def ask(q):\n    system = build(Fixed())\n    return {send('system')}\n\n\n"
        'def ask_now(q):\n    system = f"Version {stamper.stamp()}.\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX101", "app.py", 10)]
    assert steps(found[0])[0] == ("app.py", 31)


def test_a_lambda_or_ellipsis_in_prompt_text_is_its_source_text(tmp_path: Path) -> None:
    """``f"... {(lambda hit: hit.score)} ... {...}"`` after a timestamp: both are text, not values of
    unknown nature, so they count in the static tokens the timestamp makes uncacheable, as the same
    words written out do (within two tokens: the text is cut into segments at other places, and the
    lambda, which prints a memory address, stands as its source with its braces; after the timestamp
    its PFX403 is not reported).
    Catches: a lambda or ``...`` taken as an unknown value (its tokens no longer counted as lost)."""
    now = 'f"Now: {datetime.now()}.\\n" + RULES + '
    app = (
        "from datetime import datetime\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        f'def ask(q):\n    system = {now}f"Sort with {{(lambda hit: hit.score)}} and skip {{...}}."\n'
        f"    return {send('system')}\n\n\n"
        f'def ask_text(q):\n    system = {now}"Sort with (lambda hit: hit.score) and skip ...."\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app})
    assert codes(found) == [("PFX101", "app.py", 9), ("PFX101", "app.py", 14)]
    lost = [f["impact"]["tokens_lost"] for f in found]
    assert lost[0] >= 100 and abs(lost[0] - lost[1]) <= 2  # the same words, cut at other places


def test_a_text_method_of_a_value_of_unknown_kind_keeps_its_kind(tmp_path: Path) -> None:
    """A configured per-request source of unknown kind, then ``.upper()`` or ``.split(";")``: the
    value is still of unknown kind (PFX109), not a timestamp.
    Catches: a method that is not a time method (``isoformat``, ``strftime``...) taken as one for a
    value of unknown kind."""
    config = '[tool.prefixlint]\ndynamic-sources = [{pattern = "plans.current_note", kind = "unknown"}]\n'
    app = (
        "import plans\n" + OPENAI + f"RULES = {RULES!r}\n\n\n"
        'def ask(q):\n    system = f"Plan: {plans.current_note().upper()}\\n" + RULES\n'
        f"    return {send('system')}\n\n\n"
        "def ask_parts(q):\n    system = f\"Plan: {plans.current_note().split(';')}\\n\" + RULES\n"
        f"    return {send('system')}\n"
    )
    found = codes(check(tmp_path, {"app.py": app, "pyproject.toml": config}))
    assert found == [("PFX109", "app.py", 9), ("PFX109", "app.py", 14)]


LOADER = (
    "from datetime import datetime\n\nfrom jinja2 import Environment, FileSystemLoader\n" + OPENAI + "\n"
    'env = Environment(loader=FileSystemLoader("templates"))\n'
)


def test_a_file_template_rendered_at_import_time_is_a_process_value(tmp_path: Path) -> None:
    """``SYSTEM = env.get_template("system.j2").render()`` at module level: the date the template
    reads is fixed once per process (PFX201 on the template's line), not per request (PFX111).
    Catches: a ``get_template(...).render()`` not taken as rendering where it stands."""
    app = (
        LOADER
        + 'SYSTEM = env.get_template("system.j2").render()\n\n\n'
        + f"def ask(q):\n    return {send('SYSTEM')}\n"
    )
    files = {"app.py": app, "templates/system.j2": "Today is {{ current_date }}.\n" + RULES + "\n"}
    assert codes(check(tmp_path, files)) == [("PFX201", "templates/system.j2", 1)]


@pytest.mark.parametrize(
    "make", ['env.get_template("system.j2")', "Environment().from_string(TEXT)"], ids=["file", "string"]
)
def test_a_template_object_held_in_a_local_name(tmp_path: Path, make: str) -> None:
    """``tpl = env.get_template(...)`` or ``tpl = Environment().from_string(TEXT)``, then
    ``tpl.render(now=datetime.now())``: the value bound is the caller's ``datetime.now()``, and the
    chain runs from it through the render to the call.
    Catches: a name holding a template object not followed to the call that made it."""
    text = "Now: {{ now }}.\n" + RULES
    app = (
        LOADER + f"TEXT = {text!r}\n\n\n"
        f"def ask(q):\n    tpl = {make}\n    system = tpl.render(now=datetime.now())\n"
        f"    return {send('system')}\n"
    )
    files = {"app.py": app}
    if "get_template" in make:
        files["templates/system.j2"] = text + "\n"
    found = check(tmp_path, files)
    assert codes(found) == (
        [("PFX101", "templates/system.j2", 1)] if files.keys() - {"app.py"} else [("PFX101", "app.py", 9)]
    )
    assert "`datetime.now()`" in found[0]["message"]
    assert ("app.py", 14) in steps(found[0])  # the line of ``datetime.now()``


@pytest.mark.parametrize("quote", ['"', "'"], ids=["basic", "literal"])
def test_a_template_read_from_a_toml_file_by_its_keys(tmp_path: Path, quote: str) -> None:
    """``tomllib.load(f)["agents"]["support"]`` filled per request, the value a quoted TOML string:
    the finding is at the placeholder's own line and column (the opening quote is not text).
    Catches: the opening quote of a quoted TOML value counted as the value's first character."""
    rules = RULES.replace("'", "")  # a TOML literal string cannot hold its own quote
    config = f"[agents]\nsupport = {quote}Today is {{today}}. {rules}{quote}\n"
    app = (
        "import tomllib\nfrom datetime import datetime\nfrom pathlib import Path\n" + OPENAI + "\n\n"
        "def ask(q):\n"
        '    with open(Path(__file__).parent / "agents.toml", "rb") as f:\n'
        "        data = tomllib.load(f)\n"
        '    system = data["agents"]["support"].format(today=datetime.now())\n'
        f"    return {send('system')}\n"
    )
    found = check(tmp_path, {"app.py": app, "agents.toml": config})
    assert codes(found) == [("PFX101", "agents.toml", 2)]
    assert found[0]["location"]["column"] == len('support = "Today is ') + 1  # 1-based


def test_a_method_of_an_instance_of_an_imported_class(tmp_path: Path) -> None:
    """``from clocks import Clock``, ``clock = Clock()`` at module level, then ``clock.stamp()`` in
    the prompt: the method of the imported class is followed to its ``datetime.now()`` (PFX101 in
    ``clocks.py``).
    Catches: the class of an instance not looked up in the module it is imported from."""
    clocks = (
        "from datetime import datetime\n\n\n"
        "class Clock:\n    def stamp(self):\n        return datetime.now().isoformat()\n"
    )
    app = (
        "from clocks import Clock\n" + OPENAI + f"RULES = {RULES!r}\n"
        "clock = Clock()\n\n\n"
        'def ask(q):\n    system = f"Now {clock.stamp()}.\\n" + RULES\n'
        f"    return {send('system')}\n"
    )
    assert codes(check(tmp_path, {"app.py": app, "clocks.py": clocks})) == [("PFX101", "clocks.py", 6)]
