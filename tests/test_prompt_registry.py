"""Templates kept in YAML prompt files, loaded into a prompt store, and filled by name with a dict of
inputs somewhere else (issue 10).

Each case is a small fresh project run through the real CLI: ``prompts/*.yaml`` holds named
templates; ``store.py`` loads every file into a dict and fills one with ``.format(**inputs)``; a
service asks for a template by name. A per-request input ahead of a long static body is reported on
the placeholder's line in the YAML file; a constant input, a placeholder at the end, or a call that
does not say which template it fills gives none.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "\n".join(
    f"      {i}. Read every source twice, quote it exactly, and say which part of the question it answers."
    for i in range(30)
)

PROMPTS = f"""research:
  template: |
      You research one question. The date is {{date}}.
{RULES}
  input_types:
    date: str

extract:
  template: |
      Summary of the document:
      {{summary}}
{RULES}
      Chunk: {{chunk}}

answer:
  template: |
      You answer from the context below.
{RULES}
      Question: {{question}}
"""

STORE = """
import pathlib
import yaml


class PromptStore:
    def __init__(self, folder):
        self.templates = {}
        for path in pathlib.Path(folder).glob("*.yaml"):
            for name, entry in yaml.safe_load(path.read_text()).items():
                self.templates[name] = entry["template"]

    def get(self, name, inputs=None):
        return self.templates[name].format(**(inputs or {}))
"""


def _project(tmp_path: Path, service: str) -> Path:
    files = {"prompts/agents.yaml": PROMPTS, "store.py": STORE, "service.py": textwrap.dedent(service)}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def _rows(root: Path) -> list[int]:
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "."], cwd=root)
    assert code in (0, 1), out
    return sorted({f["location"]["row"] for f in json.loads(out) if f["filename"] == "prompts/agents.yaml"})


def _line_of(marker: str) -> int:
    return next(i for i, ln in enumerate(PROMPTS.splitlines(), 1) if marker in ln)


def test_template_named_by_a_literal(tmp_path: Path):
    root = _project(
        tmp_path,
        """
        from datetime import datetime

        def research_prompt(store):
            return store.get("research", inputs={"date": datetime.now().strftime("%Y-%m-%d %H:%M")})
        """,
    )
    assert _rows(root) == [_line_of("{date}")]


def test_template_named_by_a_local_set_in_one_branch(tmp_path: Path):
    root = _project(
        tmp_path,
        """
        from datetime import datetime

        def agent_prompt(store, mode, settings):
            stamp = datetime.now().isoformat()
            if mode == "chat":
                name = settings.chat_prompt
            else:
                name = "research"
                return store.get(name, inputs={"date": stamp})
            return store.get(name)
        """,
    )
    assert _rows(root) == [_line_of("{date}")]


def test_template_known_by_its_inputs_alone(tmp_path: Path):
    # the name comes from settings; the inputs are exactly one template's placeholders
    root = _project(
        tmp_path,
        """
        from datetime import datetime

        def extract(store, settings, chunk):
            inputs = {"summary": datetime.now().isoformat(), "chunk": chunk}
            return store.get(settings.extract_prompt, inputs)
        """,
    )
    assert _rows(root) == [_line_of("{summary}")]


def test_no_finding_where_nothing_is_lost(tmp_path: Path):
    root = _project(
        tmp_path,
        """
        from datetime import datetime

        TODAY = "a fixed day"

        def constant_input(store):
            return store.get("research", inputs={"date": TODAY})

        def value_at_the_end(store, question):
            return store.get("answer", inputs={"question": question})

        def one_key_and_no_name(store, settings):
            return store.get(settings.research_prompt, {"date": datetime.now().isoformat()})

        def another_templates_name(store):
            return store.get("answer", inputs={"date": datetime.now().isoformat()})
        """,
    )
    assert _rows(root) == []


def test_named_templates_skip_shell_and_workflow_variables(tmp_path: Path):
    from prefixlint.analysis.templates.named import named_templates

    (tmp_path / "compose.yaml").write_text(
        "services:\n  app:\n    command: |\n      run --port ${PORT}\n      --env ${{ github.ref }}\n",
        encoding="utf-8",
    )
    (tmp_path / "prompts.yaml").write_text(PROMPTS, encoding="utf-8")
    found = {t.name: t for t in named_templates(str(tmp_path.resolve()))}
    assert sorted(found) == ["answer", "extract", "research"]
    assert found["extract"].placeholders == {"summary", "chunk"}
    # the text is placed where it starts in the file (the line after ``template: |``)
    assert found["research"].body.line + 1 == _line_of("{date}")


def test_folded_block_is_reported_on_the_placeholders_own_line(tmp_path: Path):
    folded = (
        "summarise:\n  template: >\n    # Context\n\n    Summary: {summary} (for {chunk})\n" + RULES + "\n"
    )
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "agents.yaml").write_text(folded, encoding="utf-8")
    (tmp_path / "store.py").write_text(STORE, encoding="utf-8")
    (tmp_path / "service.py").write_text(
        "from datetime import datetime\n\n\ndef summarise(prompts, chunk):\n"
        '    return prompts.get("summarise", {"summary": datetime.now().isoformat(), "chunk": chunk})\n',
        encoding="utf-8",
    )
    assert _rows(tmp_path) == [5]
