"""Files searched for callers or ``self.x`` reads are parsed only when their text can hold one (issue 10,
speed): the text checks find every form of call and read, and a file that changes is read again."""

from __future__ import annotations

from pathlib import Path

import pytest
from project_support import analyze_app

from prefixlint.analysis.python import ProjectContext
from prefixlint.analysis.python.project import call_pattern, class_pattern, self_attribute_pattern
from prefixlint.model.settings import Settings

RULES = " ".join(f"Rule {i}: answer payroll questions only, cite the form, never guess." for i in range(30))


@pytest.mark.parametrize(
    "text",
    [
        "build(x)",
        "obj.build (x)",
        "self.build(\n  x)",
        "build[0](x)",
        "(build)(x)",
        "f(\n    build  # the helper\n    (x))",
        "build \\\n(x)",
        "@build(x)\ndef f(): ...",
    ],
)
def test_call_pattern_finds_every_form_of_call(text: str) -> None:
    assert call_pattern("build").search(text)


@pytest.mark.parametrize("text", ["build = 1", "from x import build", "build.other(x)", "alias = build"])
def test_call_pattern_rejects_a_mention_without_a_call(text: str) -> None:
    assert not call_pattern("build").search(text)


@pytest.mark.parametrize("text", ["self.history", "self . history", "(self).history", "self.\\\n    history"])
def test_self_attribute_pattern_finds_every_form_of_read(text: str) -> None:
    assert self_attribute_pattern("history").search(text)


@pytest.mark.parametrize("text", ["history", "other.history", "self.hist", "self_history"])
def test_self_attribute_pattern_rejects_other_names(text: str) -> None:
    assert not self_attribute_pattern("history").search(text)


def test_a_file_that_gains_a_call_is_parsed_then(tmp_path: Path) -> None:
    caller = tmp_path / "caller.py"
    caller.write_text("from app import build\nALIAS = build\n")
    project = ProjectContext(tmp_path, Settings())
    assert project.load_if(caller, call_pattern("build")) is None
    caller.write_text("from app import build\nALIAS = build('x')\n")
    got = project.load_if(caller, call_pattern("build"))
    assert got is not None and got.calls


def test_a_parameter_is_read_from_a_caller_whose_call_spans_lines(tmp_path: Path) -> None:
    """The caller that passes the value calls across lines with a comment; a second file only mentions
    the helper and is not parsed."""
    files = {
        "app.py": f"""
            from openai import OpenAI

            client = OpenAI()

            def answer(stamp, question):
                system = stamp + {RULES!r}
                return client.chat.completions.create(
                    model="gpt-4o", messages=[{{"role": "system", "content": system}}]
                )
        """,
        "jobs.py": """
            import datetime
            from app import answer

            def run(question):
                return (
                    answer  # the helper
                    (str(datetime.datetime.now()), question)
                )
        """,
        "registry.py": "from app import answer\nHANDLERS = {'answer': answer}\n",
    }
    result, parsed = analyze_app(tmp_path, files)
    (layout,) = result.layouts
    first = next(s for s in layout.segments if not s.static)
    assert first.timing.value == "request"
    assert any(loc.path.endswith("jobs.py") for loc in first.chain)
    assert "jobs.py" in parsed and "registry.py" not in parsed


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("class Agent(Base):", True),
        ("class \\\n    Agent:", True),
        ("class AgentX:", False),
        ("Agent = make()", False),
    ],
)
def test_class_pattern_finds_a_definition_only(text: str, found: bool) -> None:
    assert bool(class_pattern("Agent").search(text)) is found
