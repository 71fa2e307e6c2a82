"""Prompt templates kept in files, linked to the Python that loads and fills them (issue 10).

Each case is a small fresh project run through the real CLI (``check --output-format json``): a
template file with a placeholder near its top and a long static tail, and a module that reads the
file one way, fills it one way and sends it. A per-request fill gives a finding on the
placeholder's line in the template file, with the fill site and the sink in its chain; a fill from
a constant, a placeholder at the end, or text that only looks like a placeholder gives none.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "\n".join(
    f"Rule {i}: answer carefully, cite every source you used, and keep the tone friendly and precise."
    for i in range(40)
)

SEND = (
    'client.chat.completions.create(model="gpt-4o", messages=['
    '{"role": "system", "content": system}, {"role": "user", "content": question}])'
)


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def _findings(root: Path) -> list[dict]:
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "."], cwd=root)
    assert code in (0, 1), out
    return [f for f in json.loads(out) if not f["code"].startswith("PFX0")]


def _lines_in(findings: list[dict], filename: str) -> list[int]:
    return sorted(f["location"]["row"] for f in findings if f["filename"] == filename)


def _module(body: str, imports: str = "") -> str:
    head = "import datetime\nfrom pathlib import Path\nfrom openai import OpenAI\n" + imports
    head += "\nclient = OpenAI()\nHERE = Path(__file__).parent\n"
    return head + textwrap.dedent(body)


# (template file name, its text, the module that loads and fills it); the expected line is in LINE
LINKED = {
    "open-read-format": (
        "prompts/system.txt",
        "You are a support assistant.\nToday is {today}.\n" + RULES,
        f"""
        def answer(question):
            text = open(HERE / "prompts" / "system.txt").read()
            system = text.format(today=datetime.datetime.now().isoformat())
            return {SEND}
        """,
    ),
    "read-text-replace-chain": (
        "prompts/system.md",
        "You are a support assistant.\n\n{{ now }}\n\nMode: {{ mode }}\n" + RULES,
        f"""
        def answer(question):
            template = (HERE / "prompts" / "system.md").read_text()
            system = template.replace("{{{{ mode }}}}", "short").replace(
                "{{{{ now }}}}", datetime.datetime.now().strftime("%H:%M:%S")
            )
            return {SEND}
        """,
    ),
    "helper-loader-module-constant": (
        "prompts/research/step.txt",
        "You research one question.\nStarted at: {started}\n" + RULES,
        f"""
        import os

        _DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prompts", "research")

        def _load(name):
            with open(os.path.join(_DIR, name), "r") as f:
                return f.read()

        STEP = _load("step.txt")

        def answer(question):
            system = STEP.replace("{{started}}", str(datetime.datetime.now()))
            return {SEND}
        """,
    ),
    "format-kwargs-from-a-dict": (
        "prompts/system.txt",
        "You are a support assistant.\nSession opened: {opened}\n" + RULES,
        f"""
        def answer(question):
            values = {{"opened": datetime.datetime.now().isoformat()}}
            system = (HERE / "prompts" / "system.txt").read_text().format(**values)
            return {SEND}
        """,
    ),
    "format-map": (
        "prompts/system.prompt",
        "You are a support assistant.\nNow: {now}\n" + RULES,
        f"""
        def answer(question):
            text = (HERE / "prompts" / "system.prompt").read_text()
            system = text.format_map({{"now": datetime.datetime.now().isoformat()}})
            return {SEND}
        """,
    ),
    "yaml-nested-key": (
        "prompts/agents.yaml",
        "agents:\n  support:\n    system: |\n      You are a support assistant.\n      Today is {today}.\n"
        + textwrap.indent(RULES, "      ")
        + "\n",
        f"""
        import yaml

        def answer(question):
            with open(HERE / "prompts" / "agents.yaml") as f:
                data = yaml.safe_load(f)
            system = data["agents"]["support"]["system"].format(today=datetime.datetime.now().isoformat())
            return {SEND}
        """,
    ),
    "toml-table-key": (
        "prompts/review.toml",
        '[other]\nsystem = "x"\n\n[review]\nsystem = """\nYou review code.\nToday is {today}.\n'
        + RULES
        + '\n"""\n',
        f"""
        import tomllib

        def answer(question):
            with open(HERE / "prompts" / "review.toml", "rb") as f:
                cfg = tomllib.load(f)
            system = cfg["review"]["system"].format(today=datetime.datetime.now().isoformat())
            return {SEND}
        """,
    ),
    "importlib-resources": (
        "mypkg/prompts/system.md",
        "You are a media assistant.\n\n{{ datetime }}\n" + RULES,
        f"""
        from importlib.resources import files

        def load():
            return files("mypkg").joinpath("prompts/system.md").read_text()

        def fill(template):
            return template.replace("{{{{ datetime }}}}", datetime.datetime.now().strftime("%H:%M:%S"))

        def answer(question):
            system = fill(load())
            return {SEND}
        """,
    ),
    "importlib-resources-read-text": (
        "mypkg/prompts/system.md",
        "You are a media assistant.\n\n{{ datetime }}\n" + RULES,
        f"""
        from importlib import resources

        def answer(question):
            template = resources.read_text("mypkg.prompts", "system.md")
            system = template.replace("{{{{ datetime }}}}", datetime.datetime.now().strftime("%H:%M:%S"))
            return {SEND}
        """,
    ),
    "jinja-get-template-render": (
        "templates/system.j2",
        "You are a support assistant.\nThe time is {{ current_time }}.\n" + RULES,
        f"""
        import jinja2

        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")))

        def answer(question):
            system = env.get_template("system.j2").render(current_time=datetime.datetime.now())
            return {SEND}
        """,
    ),
    "jinja-template-held-in-a-name": (
        "templates/system.j2",
        "You are a support assistant.\nThe time is {{ current_time }}.\n" + RULES,
        f"""
        import jinja2

        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")))

        def answer(question):
            template = env.get_template("system.j2")
            system = template.render(current_time=datetime.datetime.now())
            return {SEND}
        """,
    ),
    "jinja-template-from-text": (
        "templates/system.jinja",
        "You are a support assistant.\nThe time is {{ current_time }}.\n" + RULES,
        f"""
        from jinja2 import Template

        def answer(question):
            text = (HERE / "templates" / "system.jinja").read_text()
            system = Template(text).render(current_time=datetime.datetime.now())
            return {SEND}
        """,
    ),
    "jinja-name-built-at-run-time": (
        "agents/researcher.md",
        "---\nNOW: {{ CURRENT_TIME }}\n---\n" + RULES,
        f"""
        import os
        from jinja2 import Environment, FileSystemLoader

        env = Environment(loader=FileSystemLoader(os.path.join(os.path.dirname(__file__), "agents")))

        def answer(prompt_name, question):
            values = {{"CURRENT_TIME": datetime.datetime.now().strftime("%H:%M:%S")}}
            system = env.get_template(f"{{prompt_name}}.md").render(**values)
            return {SEND}
        """,
    ),
}


# the line of the per-request placeholder in each template file
LINE = {
    "open-read-format": 2,
    "read-text-replace-chain": 3,
    "helper-loader-module-constant": 2,
    "format-kwargs-from-a-dict": 2,
    "format-map": 2,
    "yaml-nested-key": 5,
    "toml-table-key": 7,
    "importlib-resources": 3,
    "importlib-resources-read-text": 3,
    "jinja-get-template-render": 2,
    "jinja-template-held-in-a-name": 2,
    "jinja-template-from-text": 2,
    "jinja-name-built-at-run-time": 2,
}


@pytest.mark.parametrize("case", sorted(LINKED))
def test_per_request_fill_is_reported_on_the_template_line(tmp_path: Path, case: str):
    name, text, body = LINKED[case]
    module = _module(body)
    root = _project(tmp_path, {name: text, "app.py": module})
    if case.startswith("importlib-resources"):
        (root / "mypkg" / "__init__.py").write_text("")
        (root / "mypkg" / "prompts" / "__init__.py").write_text("")
    findings = _findings(root)
    assert _lines_in(findings, name) == [LINE[case]], findings
    (finding,) = [f for f in findings if f["filename"] == name]
    placeholder_line = text.splitlines()[LINE[case] - 1]
    assert placeholder_line[finding["location"]["column"] - 1] == "{"  # the column is the placeholder's
    chain_rows = {c["location"]["row"] for c in finding["chain"] if c["filename"] == "app.py"}
    module_lines = module.splitlines()
    sink = next(i for i, ln in enumerate(module_lines, 1) if "completions.create" in ln)
    assert sink in chain_rows  # the send is in the chain
    assert any(r < sink for r in chain_rows)  # and so is where the file is filled


def test_jinja_include_counts_as_static_text_that_follows(tmp_path: Path):
    root = _project(
        tmp_path,
        {
            "prompts/task.prompt": "{% if short %}\nBe brief.\n{% endif %}\nThe time: {{ now }}\n"
            '{% include "partials/rules.prompt" %}\n',
            "prompts/partials/rules.prompt": RULES + "\n",
            "app.py": _module(
                f"""
                import jinja2

                env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "prompts")))

                def answer(question):
                    system = env.get_template("task.prompt").render(now=datetime.datetime.now(), short=True)
                    return {SEND}
                """
            ),
        },
    )
    assert _lines_in(_findings(root), "prompts/task.prompt") == [4]


NOT_REPORTED = {
    # the placeholder is last: only punctuation follows it
    "placeholder-last": (
        "prompts/system.txt",
        RULES + "\nToday is {today}.\n",
        "open(HERE / 'prompts' / 'system.txt').read().format(today=datetime.datetime.now().isoformat())",
    ),
    # filled from a module constant, the same for every request
    "filled-from-constant": (
        "prompts/system.txt",
        "You are {name}.\n" + RULES,
        "open(HERE / 'prompts' / 'system.txt').read().format(name=ASSISTANT_NAME)",
    ),
    # ``{ { X } }`` with spaces is literal text for Jinja
    "spaced-braces-in-jinja": (
        "templates/system.md",
        "---\nNOW: { { CURRENT_TIME } }\n---\n" + RULES,
        "env.get_template('system.md').render(CURRENT_TIME=datetime.datetime.now())",
    ),
    # single braces are literal text in a Jinja template
    "single-braces-in-jinja": (
        "templates/system.j2",
        "Steps left: {remaining_steps}\n" + RULES,
        "env.get_template('system.j2').render(remaining_steps=datetime.datetime.now())",
    ),
    # ``{{`` is an escaped brace in a str.format template
    "escaped-braces-in-format": (
        "prompts/system.txt",
        "Reply as JSON like {{today}}.\n" + RULES + "\nDate: {today}\n",
        "open(HERE / 'prompts' / 'system.txt').read().format(today=datetime.datetime.now().isoformat())",
    ),
}


@pytest.mark.parametrize("case", sorted(NOT_REPORTED))
def test_no_finding_where_nothing_is_lost(tmp_path: Path, case: str):
    name, text, fill = NOT_REPORTED[case]
    body = f"""
    import jinja2

    ASSISTANT_NAME = "Ada"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")))

    def answer(question):
        system = {fill}
        return {SEND}
    """
    root = _project(tmp_path, {name: text, "app.py": _module(body)})
    assert _lines_in(_findings(root), name) == []


def test_template_file_as_final_user_message_after_history(tmp_path: Path):
    root = _project(
        tmp_path,
        {
            # the turn's own static text after the value is short: it is where per-request values go
            "prompts/turn.txt": "Question asked at {now}:\nAnswer in one short paragraph.\n",
            "app.py": _module(
                """
                SYSTEM = "You are a support assistant. " + "Always cite the sources you used. " * 200

                def answer(history):
                    turn = (HERE / "prompts" / "turn.txt").read_text().format(now=datetime.datetime.now())
                    last = {"role": "user", "content": turn}
                    messages = [{"role": "system", "content": SYSTEM}, *history, last]
                    return client.chat.completions.create(model="gpt-4o", messages=messages)
                """
            ),
        },
    )
    assert _lines_in(_findings(root), "prompts/turn.txt") == []


def test_unparsable_pyproject_in_a_cookiecutter_folder_does_not_stop_the_run(tmp_path: Path):
    name, text, body = LINKED["open-read-format"]
    root = _project(
        tmp_path,
        {
            name: text,
            "app.py": _module(body),
            "{{cookiecutter.project_slug}}/pyproject.toml": (
                '[project]\nname = "{{ cookiecutter.project_slug }}"\nversion = {{ cookiecutter.version }}\n'
            ),
        },
    )
    code, out, err = invoke(["check", "--no-cache", "--output-format", "json", "."], cwd=root)
    assert code in (0, 1), (out, err)  # 2 would be the run stopping on the bad file
    assert _lines_in(json.loads(out), name) == [2]
    assert "pyproject.toml" in err  # a warning names it


def test_prompt_file_with_jinja_statements_is_rendered_as_jinja(tmp_path: Path):
    """A ``.prompt`` file linted on its own: its ``{% include %}`` is the static text that is lost."""
    root = _project(
        tmp_path,
        {
            "prompts/task.prompt": "{% if short %}\nBe brief.\n{% endif %}\nRequest id: {{ request_id }}\n"
            '{% include "partials/rules.prompt" %}\n',
            "prompts/partials/rules.prompt": RULES + "\n",
        },
    )
    (finding,) = [f for f in _findings(root) if f["filename"] == "prompts/task.prompt"]
    assert finding["location"]["row"] == 4
    assert finding["impact"]["tokens_lost"] > 500  # the included rules, not just the text around them


def test_run_time_template_name_links_every_matching_file(tmp_path: Path):
    """``get_template(f"{name}.md")``: each matching file is its own prompt; other files are not."""
    header = "---\nNOW: {{ CURRENT_TIME }}\n---\n"
    root = _project(
        tmp_path,
        {
            "agents/researcher.md": header + RULES,
            "agents/coder.md": header + "You write code.\n" + RULES,
            "agents/planner.md": "---\nNOW: { { CURRENT_TIME } }\n---\n" + RULES,
            "agents/notes.txt": header + RULES,
            "app.py": _module(
                f"""
                import os
                from jinja2 import Environment, FileSystemLoader

                env = Environment(loader=FileSystemLoader(os.path.join(os.path.dirname(__file__), "agents")))

                def answer(prompt_name, question):
                    values = {{"CURRENT_TIME": datetime.datetime.now().strftime("%H:%M:%S")}}
                    system = env.get_template(f"{{prompt_name}}.md").render(**values)
                    return {SEND}
                """
            ),
        },
    )
    findings = _findings(root)
    assert _lines_in(findings, "agents/researcher.md") == [2]
    assert _lines_in(findings, "agents/coder.md") == [2]
    assert _lines_in(findings, "agents/planner.md") == []
    assert _lines_in(findings, "agents/notes.txt") == []


INCLUDE = '{% include "partials/ask.prompt" %}\n'


def test_a_value_in_an_included_template_is_reported_at_the_include(tmp_path: Path):
    """Two prompts include the same partial with a per-request value: each finding sits at its own
    prompt's include line (the line to move), not twice at the partial's line."""
    root = _project(
        tmp_path,
        {
            "prompts/review.prompt": "Review the change.\n" + INCLUDE + RULES + "\n",
            "prompts/plan.prompt": "Plan the work.\n\n" + INCLUDE + RULES + "\n",
            "prompts/partials/ask.prompt": "The user asks:\n{{ question }}\n",
        },
    )
    found = _findings(root)
    assert _lines_in(found, "prompts/review.prompt") == [2]
    assert _lines_in(found, "prompts/plan.prompt") == [3]
    review = next(f for f in found if f["filename"] == "prompts/review.prompt")
    assert review["chain"][-1]["filename"] == "prompts/partials/ask.prompt"  # where the value is written


@pytest.mark.parametrize("statement", ["", "{% if question %}Answer it.{% endif %}\n"])
def test_an_attribute_naming_the_project_or_configuration_is_fixed_for_the_run(
    tmp_path: Path, statement: str
):
    """``state.project.name``, ``state.specification.text`` and ``config.tone`` are one value for the run
    (no finding), while another attribute of the same object (``state.current_task``) keeps the
    object's nature (memory, per request), in a plain ``.prompt`` file and in a Jinja one alike."""
    root = _project(
        tmp_path,
        {
            "prompts/step.prompt": statement
            + "You work on {{ state.project.name }} in a {{ config.tone }} tone.\n"
            + "Specification:\n{{ state.specification.text }}\n"
            + RULES
            + "\nCurrent task:\n{{ state.current_task }}\n"
            + RULES
            + "\n",
        },
    )
    found = _findings(root)
    offset = statement.count("\n")
    assert _lines_in(found, "prompts/step.prompt") == [offset + 45]
    (finding,) = found
    assert finding["value"]["kind"] == "memory" and not finding.get("also")


def test_a_run_time_template_name_links_at_most_the_choice_limit(tmp_path: Path):
    """``get_template(f"{name}.md")`` with more matching files than the analyzer rebuilds a prompt
    for: the first ``MAX_TEMPLATE_CHOICES`` files each get their finding, the rest are not analysed,
    and the run does not fail."""
    from prefixlint.analysis.python.templating import MAX_TEMPLATE_CHOICES

    header = "---\nNOW: {{ CURRENT_TIME }}\n---\n"
    files = {f"agents/agent{i:02d}.md": header + RULES for i in range(MAX_TEMPLATE_CHOICES + 3)}
    files["app.py"] = _module(
        f"""
        import os
        from jinja2 import Environment, FileSystemLoader

        env = Environment(loader=FileSystemLoader(os.path.join(os.path.dirname(__file__), "agents")))

        def answer(prompt_name, question):
            values = {{"CURRENT_TIME": datetime.datetime.now().strftime("%H:%M:%S")}}
            system = env.get_template(f"{{prompt_name}}.md").render(**values)
            return {SEND}
        """
    )
    code, out, _ = invoke(
        ["check", "--no-cache", "--output-format", "json", "."], cwd=_project(tmp_path, files)
    )
    assert code == 1
    found = json.loads(out)
    assert not [f for f in found if f["code"].startswith("PFX0")]  # no crash, no internal error
    reported = {f["filename"] for f in found if f["location"]["row"] == 2}
    assert len(reported) == MAX_TEMPLATE_CHOICES and all(name.startswith("agents/agent") for name in reported)
