"""Shared helpers for the CLI tests (not a test module).

Until the Python and template analyzers are integrated, :func:`use_analyzers` replaces the missing
ones with an analyzer that finds no layouts, so the suppression, fix, cache and report pipeline can be
tested on its own. Once the real analyzers exist they are used unchanged.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prefixlint.analysis.result import FileAnalysis

REPO = Path(__file__).resolve().parent.parent


def has_python_analyzer() -> bool:
    try:
        module = importlib.import_module("prefixlint.analysis.python")
    except Exception:
        return False
    return hasattr(module, "analyze_python")


def has_rules() -> bool:
    from prefixlint.rules.base import all_rules

    try:
        return any(r.code.startswith("PFX1") for r in all_rules())
    except Exception:  # a rule module being written by someone else may not import yet
        return False


needs_analyzer = pytest.mark.skipif(
    not (has_python_analyzer() and has_rules()), reason="needs the Python analyzer and the PFX1xx rules"
)


def use_analyzers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``prefixlint.lint.checker.analyze`` work for any file, with a no-layout stand-in if needed."""
    if has_python_analyzer():
        return
    import prefixlint.lint.checker as checker

    monkeypatch.setattr(checker, "analyze", lambda path, text, kind, settings: FileAnalysis(path=path))


def invoke(args: list[str], cwd: Path, input: str | bytes | None = None) -> tuple[int, str, str]:
    """Run the CLI in-process in ``cwd``; returns (exit code, stdout, stderr)."""
    from prefixlint.cli import app

    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, args, input=input, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def run_cli(
    args: list[str], cwd: Path, input: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m prefixlint`` as a real subprocess (``env``: variables set on top of ours)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "prefixlint", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env=env,
        check=False,
        timeout=240,
    )


def write_project(root: Path, files: dict[str, str]) -> None:
    """Write a small project: each file dedented, plus a bare ``pyproject.toml`` marking its root."""
    import textwrap

    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")


def project_findings(root: Path) -> list[dict]:
    """The JSON findings of ``prefixlint check -n --exit-zero .`` run in ``root`` in a fresh process."""
    import json

    proc = run_cli(["check", "-n", "--exit-zero", "--output-format", "json", "."], root)
    assert proc.returncode == 0, proc.stderr.decode()
    data = json.loads(proc.stdout)
    return data if isinstance(data, list) else data["findings"]
