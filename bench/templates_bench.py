"""Template analysis speed: render a project of Jinja templates with includes and macros.

Run: ``.venv/bin/python bench/templates_bench.py [renders]``. Prints milliseconds per render, cold
(first parse) and warm (parsed templates cached per process).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prefixlint.analysis.templates import clear_caches, render_segments

RULES = "\n".join(f"{i}. Follow rule {i} about payroll, tax forms and pay schedules." for i in range(60))
FILES = {
    "macros.j2": "{% macro doc(d) %}<doc id={{ d.id }}>{{ d.page_content }}</doc>{% endmacro %}",
    "header.j2": "You are Harbor. Today is {{ current_date }}.\n",
    "base.j2": "{% include 'header.j2' %}{% block rules %}{% endblock %}\n{% block context %}{% endblock %}",
    "system.j2": (
        "{% extends 'base.j2' %}{% import 'macros.j2' as m %}{% block rules %}" + RULES + "{% endblock %}"
        "{% block context %}{% for d in docs %}{{ m.doc(d) }}{% endfor %}{% endblock %}"
    ),
}


def main(renders: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, text in FILES.items():
            (root / name).write_text(text)
        text = FILES["system.j2"]
        clear_caches()
        start = time.perf_counter()
        render_segments(text, style="jinja", path=str(root / "system.j2"), root=root)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(renders):
            render_segments(text, style="jinja", path=str(root / "system.j2"), root=root)
        warm = (time.perf_counter() - start) / renders
    print(f"cold {cold * 1000:.2f} ms, warm {warm * 1000:.3f} ms per render ({renders} renders)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
