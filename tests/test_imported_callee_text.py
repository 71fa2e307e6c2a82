"""A call of an imported name is followed into its module only when that module's text has the
``def`` the call could reach (issue 10, speed): a callable made by assignment, or a method of an
imported constant, parses nothing; a helper that sends is still followed, and the files tested stay
dependencies."""

from __future__ import annotations

from pathlib import Path

import pytest
from project_support import analyze_app

from prefixlint.analysis.python.project import def_pattern

RULES = " ".join(f"Rule {i}: answer payroll questions only, cite the form, never guess." for i in range(30))


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("def lookup(x):", True),
        ("async def lookup(x):", True),
        ("    def \\\n  lookup(self):", True),
        ("def lookups(x):", False),
        ("lookup = make()", False),
        ("x.lookup(1)", False),
    ],
)
def test_def_pattern_finds_a_definition_only(text: str, found: bool) -> None:
    assert bool(def_pattern("lookup").search(text)) is found


def test_only_modules_that_may_define_the_callee_are_parsed(tmp_path: Path) -> None:
    files = {
        "app.py": """
            import datetime
            from limits import LIMITS
            from recorder import make_recorder
            from sender import ask

            def run(question):
                make_recorder()
                LIMITS.get("daily")
                return ask(str(datetime.datetime.now()), question)
        """,
        "sender.py": f"""
            from openai import OpenAI

            client = OpenAI()

            def ask(stamp, question):
                return client.chat.completions.create(
                    model="gpt-4o",
                    messages=[
                        {{"role": "system", "content": stamp + {RULES!r}}},
                        {{"role": "user", "content": question}},
                    ],
                )
        """,
        "recorder.py": "import functools\n\nmake_recorder = functools.partial(dict, items=[])\n",
        "limits.py": "LIMITS = {'daily': 10}\n",
    }
    result, parsed = analyze_app(tmp_path, files)
    (layout,) = result.layouts
    assert layout.segments[0].timing.value == "request"  # the stamp, followed into sender.py
    assert "sender.py" in parsed
    assert "recorder.py" not in parsed and "limits.py" not in parsed
    deps = {Path(d).name for d in result.dependencies}
    assert {"sender.py", "recorder.py", "limits.py"} <= deps
