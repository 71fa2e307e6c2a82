"""A small project written to disk and analysed from its ``app.py``, noting each module parsed."""

from __future__ import annotations

import textwrap
from pathlib import Path

from prefixlint.analysis.python import ProjectContext, analyze_python
from prefixlint.analysis.result import FileAnalysis
from prefixlint.model.settings import Settings


def analyze_app(root: Path, files: dict[str, str]) -> tuple[FileAnalysis, list[str]]:
    """Write ``files`` (dedented) under ``root``, analyse ``app.py`` with the project's other modules
    in reach, and return the result with the names of the modules the analysis parsed, in order."""
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    settings = Settings()
    project = ProjectContext(root, settings)
    parsed: list[str] = []
    real = project.load

    def load(path):  # type: ignore[no-untyped-def]
        parsed.append(Path(path).name)
        return real(path)

    project.load = load  # type: ignore[method-assign]
    app = root / "app.py"
    return analyze_python(str(app), app.read_text(), settings, project), parsed
