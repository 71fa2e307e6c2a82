"""A helper's arguments are evaluated only when the helper reads them (issue 10, speed): an argument
the returned text never uses follows no call and parses no module, and one it uses is evaluated as
before, in the caller's environment."""

from __future__ import annotations

import sys
from pathlib import Path

from project_support import analyze_app

from prefixlint.analysis.python import ProjectContext, analyze_python
from prefixlint.model.settings import Settings

RULES = " ".join(f"Rule {i}: answer payroll questions only, cite the form, never guess." for i in range(30))

APP = """
    import datetime
    from openai import OpenAI
    from helpers import build
    from tokens import TOKENIZER

    client = OpenAI()

    def run(question):
        return client.chat.completions.create(
            model="gpt-4o",
            messages=[
                {{"role": "system", "content": build({stamp}, tokenizer=TOKENIZER)}},
                {{"role": "user", "content": question}},
            ],
        )
"""


def _analyse(tmp_path: Path, helper_body: str, stamp: str) -> tuple[list, list[str], set[str]]:
    files = {
        "app.py": APP.format(stamp=stamp),
        "helpers.py": f"RULES = {RULES!r}\n\ndef build(stamp, tokenizer):\n    return {helper_body}\n",
        "tokens.py": "TOKENIZER = 'cl100k'\n",
    }
    result, parsed = analyze_app(tmp_path, files)
    return result.layouts, parsed, {Path(d).name for d in result.dependencies}


def test_an_argument_the_helper_never_reads_is_not_evaluated(tmp_path: Path) -> None:
    layouts, parsed, deps = _analyse(tmp_path, "stamp + RULES", "str(datetime.datetime.now())")
    (layout,) = layouts
    first = layout.segments[0]
    assert not first.static and first.timing.value == "request"  # the stamp, read in the caller
    assert "helpers.py" in parsed
    assert "tokens.py" not in parsed and "tokens.py" not in deps


def test_an_argument_the_helper_reads_is_evaluated_where_the_call_is(tmp_path: Path) -> None:
    layouts, parsed, deps = _analyse(tmp_path, "tokenizer + stamp + RULES", '"fixed "')
    (layout,) = layouts
    assert "tokens.py" in parsed and "tokens.py" in deps
    # the constant read from tokens.py, where the call is, ahead of the static stamp and rules
    assert "".join(s.text for s in layout.segments).startswith("cl100kfixed Rule 0:")


def test_a_constructor_argument_no_method_reads_is_not_evaluated(tmp_path: Path) -> None:
    files = {
        "app.py": """
            import datetime
            from openai import OpenAI
            from helpers import Builder
            from tokens import TOKENIZER

            client = OpenAI()
            builder = Builder(TOKENIZER)

            def run(question):
                return client.chat.completions.create(
                    model="gpt-4o",
                    messages=[
                        {"role": "system", "content": builder.build(str(datetime.datetime.now()))},
                        {"role": "user", "content": question},
                    ],
                )
        """,
        "helpers.py": f"""
            RULES = {RULES!r}

            class Builder:
                def __init__(self, tokenizer):
                    self.tokenizer = tokenizer

                def build(self, stamp):
                    return stamp + RULES
        """,
        "tokens.py": "TOKENIZER = 'cl100k'\n",
    }
    result, parsed = analyze_app(tmp_path, files)
    (layout,) = result.layouts
    assert layout.segments[0].timing.value == "request"  # the stamp, through the method
    assert "helpers.py" in parsed and "tokens.py" not in parsed


def _stack_depth() -> int:
    frame, n = sys._getframe(), 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


def test_a_value_passed_down_a_chain_of_helpers_does_not_nest_the_stack(tmp_path: Path) -> None:
    """Eleven helpers, each passing ``(((a + '0') + '1') ...)`` on: each argument is worked out one
    call at a time, as when arguments were evaluated before the call, not as one expression nested
    through every helper (which needed three times the stack, and hit the recursion limit first)."""

    def nest(name: str) -> str:
        for j in range(8):
            name = f"({name} + '{j}')"
        return name

    lines = ["import datetime", "from openai import OpenAI", "client = OpenAI()", f"RULES = {RULES!r}"]
    for i in range(11):
        body = f"f{i + 1}({nest('a')}, {nest('b')})" if i < 10 else "a + b + RULES"
        lines.append(f"def f{i}(a, b):\n    return {body}")
    lines.append(
        "def run(q):\n    return client.chat.completions.create(model='gpt-4o', messages=["
        "{'role': 'system', 'content': f0(str(datetime.datetime.now()), 'x')},"
        " {'role': 'user', 'content': q}])"
    )
    app = tmp_path / "app.py"
    app.write_text("\n\n".join(lines) + "\n")
    settings = Settings()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_stack_depth() + 200)
    try:
        result = analyze_python(str(app), app.read_text(), settings, ProjectContext(tmp_path, settings))
    finally:
        sys.setrecursionlimit(limit)
    assert not result.errors
    (layout,) = result.layouts
    assert layout.segments[0].timing.value == "request"


def test_a_classmethod_helper_binds_its_arguments_after_cls(tmp_path: Path) -> None:
    """``Prompts.system("Acme", stamp)`` binds ``company`` and ``stamp``, not ``cls``: the static company
    name and rules lead, and the per-request stamp comes last."""
    files = {
        "app.py": """
            import datetime
            from openai import OpenAI
            from helpers import Prompts

            client = OpenAI()

            def run(question):
                return client.chat.completions.create(
                    model="gpt-4o",
                    messages=[
                        {"role": "system", "content": Prompts.system("Acme. ", str(datetime.datetime.now()))},
                        {"role": "user", "content": question},
                    ],
                )
        """,
        "helpers.py": f"""
            RULES = {RULES!r}

            class Prompts:
                @classmethod
                def system(cls, company, stamp):
                    return company + RULES + stamp
        """,
    }
    result, _ = analyze_app(tmp_path, files)
    (layout,) = result.layouts
    stamp = next(i for i, s in enumerate(layout.segments) if not s.static)
    assert "".join(s.text for s in layout.segments[:stamp]).startswith("Acme. Rule 0:")
    assert layout.segments[stamp].timing.value == "request"
