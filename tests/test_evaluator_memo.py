"""The evaluator's per-file memo (issue 10, speed): each expression is evaluated once per environment,
and reusing an answer gives the layouts a fresh evaluation gives."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from prefixlint.analysis.python import ProjectContext, analyze_python
from prefixlint.analysis.python.evaluate import Evaluator
from prefixlint.analysis.python.memo import TextMemo
from prefixlint.model.settings import Settings

RULES = " ".join(f"Rule {i}: answer payroll questions only, cite the form, never guess." for i in range(30))
SEND = 'client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}])'


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))


def _analyze(root: Path, main: str) -> list[tuple]:
    """Every layout of ``main``: its sink and, per segment, what a finding reads from it."""
    settings = Settings()
    path = root / main
    result = analyze_python(str(path), path.read_text(), settings, ProjectContext(root, settings))
    assert not result.errors, result.errors
    return [
        (
            lay.sink_name,
            tuple(
                (s.static, s.text, s.kind, s.timing, s.location, s.chain, s.conditional, s.repeated)
                for s in lay.segments
            ),
        )
        for lay in result.layouts
    ]


def _without_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TextMemo, "get", lambda self, key: None)


def _chain(levels: int) -> str:
    """Helpers that each use their helper's result three times: 3**levels evaluations without a memo."""
    out = ["from openai import OpenAI", "from datetime import datetime", "client = OpenAI()", ""]
    out += ["def step0(q):", "    a = str(q)", "    return a + a + a", ""]
    for i in range(1, levels):
        out += [f"def step{i}(q):", f"    b = step{i - 1}(q)", "    return b + b + b", ""]
    out += [
        "def ask(question):",
        f"    system = f'{{datetime.now()}} {{step{levels - 1}(question)}}' + {RULES!r}",
        f"    return {SEND}",
    ]
    return "\n".join(out) + "\n"


def test_each_expression_is_evaluated_once_per_environment(tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path, {"app.py": _chain(7)})
    calls = {"n": 0}
    real = Evaluator._t_Call

    def counting(self, node, env):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return real(self, node, env)

    monkeypatch.setattr(Evaluator, "_t_Call", counting)
    layouts = _analyze(tmp_path, "app.py")
    assert calls["n"] < 60  # about 3**7 = 2,187 calls of step0's ``str(q)`` alone without the memo
    monkeypatch.undo()
    _without_memo(monkeypatch)
    assert layouts == _analyze(tmp_path, "app.py")


def test_reused_answers_give_the_layouts_of_a_fresh_evaluation(tmp_path: Path, monkeypatch) -> None:
    """Run-time template names (choices recorded, then replayed), a cycle of constants and a cycle
    of callers (stand-ins read while in progress): the same layouts with and without the memo."""
    header = "---\nNOW: {{ CURRENT_TIME }}\n---\n"
    _write(
        tmp_path,
        {
            "agents/researcher.md": header + RULES,
            "agents/coder.md": header + "You write code.\n" + RULES,
            "agents/planner.md": header + "You plan.\n" + RULES,
            "consts.py": f"""
                from app import SUFFIX
                PREFIX_PROMPT = "Answer as " + SUFFIX + {RULES!r}
            """,
            "app.py": f"""
                import datetime, os
                from jinja2 import Environment, FileSystemLoader
                from openai import OpenAI

                client = OpenAI()
                env = Environment(loader=FileSystemLoader(os.path.join(os.path.dirname(__file__), "agents")))
                SUFFIX = "x"

                def answer(prompt_name, question):
                    values = {{"CURRENT_TIME": datetime.datetime.now().strftime("%H:%M:%S")}}
                    system = env.get_template(f"{{prompt_name}}.md").render(**values)
                    prompt = system + question
                    first = {SEND}
                    return first or {SEND}  # a retry: the same prompt at a second sink

                def relay(name, question, hops):
                    system_prompt = name + {RULES!r}
                    if hops:
                        return relay(name, question, hops - 1)
                    system = question + system_prompt
                    return {SEND}

                def start(question):
                    relay(str(datetime.datetime.now()), question, 3)
            """,
        },
    )
    with_memo = _analyze(tmp_path, "app.py")
    assert len({sink for sink, _ in with_memo}) < len(with_memo)  # one layout per template file
    _without_memo(monkeypatch)
    assert with_memo == _analyze(tmp_path, "app.py")


def test_an_answer_that_read_a_stand_in_is_not_kept() -> None:
    memo = TextMemo()
    mark = memo.mark()
    memo.unsettled()  # a summary still being computed was read
    memo.put(("a",), None, [], mark)
    assert memo.get(("a",)) is None
    mark = memo.mark()
    memo.choices.append("choice")
    memo.put(("b",), None, [], mark)
    assert memo.get(("b",)) == ([], ["choice"])


def test_nothing_remembered_outlives_one_file_analysis(tmp_path: Path) -> None:
    """A helper module changed on disk between two analyses (an editor, ``--fix``): the second
    analysis, with the same project index, sees the new text."""
    _write(
        tmp_path,
        {
            "helpers.py": "def header(q):\n    return 'Support desk. ' + q\n",
            "app.py": f"""
                from openai import OpenAI
                from helpers import header

                client = OpenAI()

                def ask(question):
                    system = header("x") + {RULES!r}
                    return {SEND}
            """,
        },
    )
    settings = Settings()
    project = ProjectContext(tmp_path, settings)
    app = tmp_path / "app.py"

    def dynamic_labels() -> list[str]:
        result = analyze_python(str(app), app.read_text(), settings, project)
        return [s.text for lay in result.layouts for s in lay.segments if not s.static]

    assert dynamic_labels() == []
    (tmp_path / "helpers.py").write_text(
        "import datetime\n\ndef header(q):\n    return str(datetime.datetime.now()) + q\n"
    )
    assert dynamic_labels() != []
