"""A block appended under ``if flag:`` is not part of the prompt when the call leaves ``flag`` false
(issue 10: a user prompt was priced with a ~200-token block that only a keyword no caller passes
adds, so the retrieved values ahead of its section labels were reported).

Each case is a small fresh project linted in a fresh process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import needs_analyzer, project_findings, write_project

PROMPTS = """
RULES_BLOCK = (
    "Grading rules for the reviewer:\\n"
    "1. Quote the exact passage that supports each claim, with its page number.\\n"
    "2. Prefer primary sources over summaries, and say when only a summary was found.\\n"
    "3. Never invent a citation; when nothing supports a claim, say that nothing does.\\n"
    "4. Keep the answer under two hundred words, in plain language, without tables.\\n"
    "5. When passages disagree, give both readings and say which one is more recent.\\n"
    "6. End with one line that lists the pages used, in ascending order, separated by commas.\\n"
    "7. Do not repeat the question, do not greet the reader, and do not apologise.\\n"
)


def build_user_prompt(question, passages, *, strict=False):
    parts = [f"Passages:\\n{passages}", f"Question:\\n{question}"]
    if strict:
        parts.append(RULES_BLOCK)
    return "\\n\\n".join(parts)
"""

APP = """
from openai import OpenAI

from prompts import build_user_prompt

client = OpenAI()
SYSTEM = "You answer questions about the archive."


def answer(question, store):
    found = store.similarity_search(question)
    user = build_user_prompt(question, found{extra})
    return client.chat.completions.create(
        model="gpt-4.1",
        messages=[{{"role": "system", "content": SYSTEM}}, {{"role": "user", "content": user}}],
    )
"""


@needs_analyzer
@pytest.mark.parametrize(
    ("extra", "expected"), [("", []), (", strict=False", []), (", strict=True", ["PFX105"])]
)
def test_a_block_under_a_flag_the_call_leaves_false_is_not_in_the_prompt(
    tmp_path: Path, extra: str, expected: list[str]
) -> None:
    write_project(tmp_path, {"prompts.py": PROMPTS, "app.py": APP.format(extra=extra)})
    found = project_findings(tmp_path)
    assert sorted({f["code"] for f in found if f["code"] != "PFX109"}) == expected


@needs_analyzer
def test_each_call_is_judged_by_the_flag_it_passes(tmp_path: Path) -> None:
    other = APP.format(extra=", strict=True").replace("def answer(", "def answer_strictly(")
    write_project(tmp_path, {"prompts.py": PROMPTS, "app.py": APP.format(extra=""), "strict.py": other})
    found = project_findings(tmp_path)
    assert {f["filename"] for f in found if f["code"] == "PFX105"} == {"strict.py"}
