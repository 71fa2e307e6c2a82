"""What a one-file check (as pre-commit runs it) leaves out, and that leaving it out changes nothing.

Each test checks what is loaded or parsed against the findings that must still appear (no timing
assertions): Jinja2 and PyYAML are imported only for a Jinja template or front matter, and import
lookups answer from one listing per folder as the file tests they replace did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import REPO

from prefixlint.analysis.python.project import ProjectContext
from prefixlint.lint.checker import check_source, forget_projects
from prefixlint.model.settings import Settings

FORMAT_PROMPT = """from datetime import datetime

from openai import OpenAI

client = OpenAI()
SYSTEM = "Today is {today}. You answer questions on the manual.\\n" + "Follow the style guide. " * 60


def ask(question: str) -> str:
    prompt = SYSTEM.format(today=datetime.now().isoformat())
    reply = client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "system", "content": prompt}, {"role": "user", "content": question}],
    )
    return reply.choices[0].message.content
"""

_PROBE = (
    "import json, sys\n"
    "from prefixlint.lint.checker import check_source\n"
    "from prefixlint.model.settings import Settings\n"
    "res = check_source(sys.argv[1], None, Settings(root='.'))\n"
    "mods = ('jinja2', 'yaml', 'prefixlint.analysis.templates.render')\n"
    "print(json.dumps({'codes': sorted(f.code for f in res.findings),"
    " 'loaded': sorted(m for m in mods if m in sys.modules)}))\n"
)


def _probe(tmp_path: Path, name: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=240,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_format_template_in_python_is_rendered_without_jinja2_or_yaml(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(FORMAT_PROMPT)
    got = _probe(tmp_path, "app.py")
    assert got["codes"] == ["PFX101"]
    # the template renderer ran (the finding comes from it), without the Jinja and YAML readers
    assert got["loaded"] == ["prefixlint.analysis.templates.render"]


def test_a_jinja_template_and_front_matter_still_load_their_readers(tmp_path: Path) -> None:
    (tmp_path / "system.j2").write_text("{% if user %}Hello {{ user }}{% endif %}\n" + "Static rules. " * 80)
    (tmp_path / "ask.prompty").write_text(
        "---\nname: ask\nmodel:\n  api: chat\n---\nsystem:\nToday is {{today}}.\n" + "Static rules. " * 80
    )
    got = _probe(tmp_path, "system.j2")
    assert "jinja2" in got["loaded"]
    got = _probe(tmp_path, "ask.prompty")
    assert "yaml" in got["loaded"]


# --- helpers in other modules ---------------------------------------------------------------------

APP = """from datetime import datetime

from helpers.llm import ask_model
from helpers.text import record


def answer(question: str) -> str:
    record(question)
    prompt = f"Now: {datetime.now()}\\n" + "You are a careful assistant for the manual. " * 60
    return ask_model([{"role": "system", "content": prompt}, {"role": "user", "content": question}])
"""

HELPERS = {
    "__init__.py": "",
    "llm.py": (
        "from helpers.client import send\n\n\ndef ask_model(messages: list) -> str:\n"
        "    return send(messages)\n"
    ),
    "client.py": (
        "from openai import OpenAI\n\nclient = OpenAI()\n\n\ndef send(messages: list) -> str:\n"
        '    return client.chat.completions.create(model="gpt-4o", messages=messages)\n'
    ),
    "text.py": (
        "from helpers.words import squash\n\nSEEN: list = []\n\n\ndef record(text: str) -> None:\n"
        "    SEEN.append(squash(text))\n"
    ),
    "words.py": 'def squash(text: str) -> str:\n    return " ".join(text.split())\n',
}

SENDING_WORDS = """from datetime import datetime

from openai import OpenAI

client = OpenAI()


def squash(text: str) -> str:
    system = f"Today: {datetime.now()}\\n" + "Summarise the note in one line. " * 60
    messages = [{"role": "system", "content": system}, {"role": "user", "content": text}]
    return client.chat.completions.create(model="gpt-4o", messages=messages)
"""


def _project(root: Path, words: str | None = None) -> None:
    (root / "helpers").mkdir()
    (root / "app.py").write_text(APP)
    for name, text in HELPERS.items():
        (root / "helpers" / name).write_text(words if name == "words.py" and words else text)


def _check_app(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, int]]:
    """Findings of ``app.py``: code, file name, line."""
    monkeypatch.chdir(root)
    forget_projects()
    try:
        result = check_source("app.py", None, Settings(root=str(root)))
    finally:
        forget_projects()
    return sorted((f.code, Path(f.location.path).name, f.location.line) for f in result.findings)


def test_a_prompt_sent_through_helpers_of_other_modules_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path)
    # sent through ask_model() and send(), two helpers in two other modules: reported here
    assert _check_app(tmp_path, monkeypatch) == [("PFX101", "app.py", 9)]
    (tmp_path / "helpers" / "words.py").write_text(SENDING_WORDS)
    # record() sends nothing itself, but squash(), which it imports, sends a prompt
    assert _check_app(tmp_path, monkeypatch) == [("PFX101", "app.py", 9), ("PFX101", "words.py", 9)]


def _reference_module_file(ctx: ProjectContext, importer: str, module: str, level: int) -> Path | None:
    """The lookup as it was written with a ``Path.is_file`` test per candidate."""
    parts = [p for p in module.split(".") if p]
    here = Path(importer).resolve().parent
    bases: list[Path] = []
    if level > 0:
        base = here
        for _ in range(level - 1):
            base = base.parent
        bases.append(base)
    else:
        bases.extend([ctx.root, here])
        for parent in here.parents:
            bases.append(parent)
            if parent == ctx.root or len(bases) > 8:
                break
        if (ctx.root / "src").is_dir():
            bases.append(ctx.root / "src")
    for base in bases:
        target = base.joinpath(*parts) if parts else base
        for cand in (target.with_suffix(".py") if parts else None, target / "__init__.py"):
            if cand is not None and cand.is_file():
                return cand
    return None


def test_module_file_answers_as_a_file_test_per_candidate(tmp_path: Path) -> None:
    files = [
        "app/__init__.py",
        "app/core/__init__.py",
        "app/core/llm.py",
        "app/core/prompts/__init__.py",
        "app/core/prompts/system.py",
        "app/util.py",
        "src/lib/__init__.py",
        "src/lib/text.py",
        "tools.py",
        "tools/__init__.py",  # a module and a package of one name: the module comes first
        "odd/thing.py/__init__.py",  # a folder named like a module file is no module file
    ]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    ctx = ProjectContext(tmp_path, Settings(root=str(tmp_path)))
    importers = [str(tmp_path / "app/core/llm.py"), str(tmp_path / "app/core/prompts/system.py")]
    questions = [
        ("app.core.llm", 0),
        ("core.llm", 0),
        ("prompts.system", 0),
        ("lib.text", 0),
        ("lib", 0),
        ("tools", 0),
        ("odd.thing", 0),
        ("missing", 0),
        ("", 1),
        ("prompts", 1),
        ("util", 2),
        ("core.llm", 3),
        ("llm", 2),
    ]
    checked = 0
    for importer in importers:
        for module, level in questions:
            want = _reference_module_file(ctx, importer, module, level)
            got = ctx.module_file(importer, module, level)
            assert (got and got.resolve()) == (want and want.resolve()), (importer, module, level)
            checked += want is not None
    assert checked >= 10  # most questions find a file
    assert ctx.module_file(importers[0], "tools", 0) == tmp_path / "tools.py"
