"""Which render calls bind a template file's placeholders (``template_callers.py``): the string that
names the file must end with its stem, its name or a trailing part of its path, and name no other
file. Each test runs the real ``prefixlint check`` once on a small fresh project with several
template files, one caller each (issue 16: broad behaviour coverage for mutation testing).
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

    ENV = jinja2.Environment(loader=jinja2.FileSystemLoader("prompts"))


    def render(name, **values):
        return ENV.get_template(name).render(**values)
    """
)
CALL = (
    "\n\ndef {fn}(doc):\n    return render({name!r}, marker=datetime.datetime.now().strftime('%H:%M:%S'))\n"
)


def test_render_calls_that_name_the_file(tmp_path: Path) -> None:
    """A per-request time passed as ``marker`` is reported in the template the call names: by its
    stem, its file name, or a trailing part of its path; not where the name has another suffix, a
    ``..``, another folder, or matches two files."""
    templates = {
        "stem": "stem",
        "fullname": "fullname.prompt",
        "tail": "tail/tail",  # prompts/tail/tail.prompt
        "suffix": "suffix.txt",
        "dotdot": "../dotdot",
        "folder": "elsewhere/folder",
        "twice": "twice",  # prompts/twice.prompt and prompts/tail/twice.prompt
    }
    files = {"app/__init__.py": "", "app/render.py": HELPER}
    caller = "import datetime\n\nfrom app.render import render\n"
    for i, (stem, name) in enumerate(templates.items()):
        folder = "prompts/tail/" if stem == "tail" else "prompts/"
        files[f"{folder}{stem}.prompt"] = "You write summaries.\n" * i + "Marker: {{ marker }}\n" + RULES
        caller += CALL.format(fn=f"ask_{stem}", name=name)
    files["prompts/tail/twice.prompt"] = "Twice: {{ marker }}\n" + RULES
    files["app/callers.py"] = caller
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], tmp_path)
    assert code in (0, 1), err
    got = sorted(
        (f["filename"], f["location"]["row"], f["value"]["kind"])
        for f in json.loads(out)
        if f["filename"].endswith(".prompt")
    )
    assert got == [
        ("prompts/fullname.prompt", 2, "timestamp"),
        ("prompts/stem.prompt", 1, "timestamp"),
        ("prompts/tail/tail.prompt", 3, "timestamp"),
    ]
