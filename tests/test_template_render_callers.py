"""Template files bound through the project's render calls (issue 10).

An in-house helper takes a template's name and the values as keyword arguments
(``convo.template("summarize", doc_name=...)``) and renders the file through a loader the analyzer
cannot follow. The template file, linted on its own, takes each placeholder's value from those
keyword arguments instead of guessing from its name. Each case is a small fresh project run through
the real CLI.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "\n".join(
    f"Rule {i}: summarize the document faithfully, cite each section you used, and keep it short."
    for i in range(40)
)

HELPER = textwrap.dedent(
    """
    import jinja2

    class Conversation:
        role = "writer"

        def __init__(self):
            self.env = jinja2.Environment(loader=jinja2.FileSystemLoader("prompts"))
            self.messages = []

        def template(self, name, **values):
            text = self.env.get_template(f"{self.role}/{name}.prompt").render(**values)
            self.messages.append({"role": "user", "content": text})
            return self
    """
)


def _project(tmp_path: Path, template: str, caller: str, extra: dict[str, str] | None = None) -> Path:
    files = {
        "prompts/writer/summarize.prompt": template,
        "app/convo.py": HELPER,
        "app/writer.py": textwrap.dedent(caller),
        **(extra or {}),
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def _template_findings(root: Path) -> list[dict]:
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "."], cwd=root)
    assert code in (0, 1), out
    return [f for f in json.loads(out) if f["filename"].endswith(".prompt")]


def test_a_keyword_value_from_the_render_call_classifies_the_placeholder(tmp_path: Path) -> None:
    """``{{ marker }}`` says nothing by its name; the caller passes the time of day."""
    root = _project(
        tmp_path,
        "You write summaries.\nMarker: {{ marker }}\n" + RULES,
        """
        import datetime
        from app.convo import Conversation

        def summarize(doc):
            return Conversation().template("summarize", marker=datetime.datetime.now().strftime("%H:%M:%S"))
        """,
    )
    found = _template_findings(root)
    assert [(f["filename"], f["location"]["row"]) for f in found] == [("prompts/writer/summarize.prompt", 2)]
    assert found[0]["value"]["kind"] == "timestamp"
    assert any(step["filename"] == "app/writer.py" for step in found[0]["chain"])


def test_a_constant_from_the_render_call_beats_a_dynamic_looking_name(tmp_path: Path) -> None:
    """``{{ current_time }}`` looks per request, but the only render call passes a constant."""
    template = "You write summaries.\nThe time is {{ current_time }}.\n" + RULES
    caller = """
        from app.convo import Conversation

        def summarize(doc):
            return Conversation().template("summarize", current_time="(not shown)")
        """
    assert _template_findings(_project(tmp_path, template, caller)) == []
    # without the render call, the name alone is reported
    (tmp_path / "app/writer.py").write_text("", encoding="utf-8")
    assert [f["location"]["row"] for f in _template_findings(tmp_path)] == [2]


def test_a_name_that_names_two_template_files_links_neither(tmp_path: Path) -> None:
    """``"summarize"`` could be ``writer/summarize.prompt`` or ``editor/summarize.prompt``: no link."""
    root = _project(
        tmp_path,
        "You write summaries.\nThe time is {{ current_time }}.\n" + RULES,
        """
        from app.convo import Conversation

        def summarize(doc):
            return Conversation().template("summarize", current_time="(not shown)")
        """,
        extra={"prompts/editor/summarize.prompt": "You edit summaries.\n" + RULES},
    )
    assert [f["location"]["row"] for f in _template_findings(root)] == [2]


def test_a_caller_value_of_unknown_nature_leaves_a_known_name_its_kind(tmp_path: Path) -> None:
    """``self.pending`` says nothing (it would be PFX120): ``{{ question }}`` stays user input."""
    root = _project(
        tmp_path,
        "You write summaries.\nAsked: {{ question }}\n" + RULES,
        """
        from app.convo import Conversation

        class Writer:
            def summarize(self):
                return Conversation().template("summarize", question=self.pending)
        """,
    )
    assert [(f["code"], f["location"]["row"]) for f in _template_findings(root)] == [("PFX109", 2)]
