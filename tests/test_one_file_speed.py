"""What a one-file check (as pre-commit runs it) leaves out, and that leaving it out changes nothing.

Each test checks what is loaded or parsed against the findings that must still appear (no timing
assertions): Jinja2 and PyYAML are imported only for a Jinja template or front matter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_support import REPO

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
