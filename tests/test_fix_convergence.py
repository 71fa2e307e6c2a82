"""``--fix``, ``--unsafe-fixes`` and ``--diff`` converge in one call, as ruff's do."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from cli_support import invoke, needs_analyzer

from prefixlint.lint.fixloop import fix_until_stable
from prefixlint.model.edits import Applicability, Edit, Fix
from prefixlint.model.findings import Finding
from prefixlint.model.layout import SourceLocation
from prefixlint.model.settings import Settings


@dataclass
class FakeRun:
    findings: list[Finding] = field(default_factory=list)


def _text(path: Path, pending: dict[str, str]) -> str:
    return pending.get(str(path), path.read_text() if path.exists() else "")


def _rule(path: Path, pending: dict[str, str], pattern: str, repl: str) -> FakeRun:
    """A rule with a safe fix: every (overlapping) match of ``pattern`` becomes ``repl``."""
    text = _text(path, pending)
    findings = []
    for m in re.finditer(f"(?=({pattern}))", text):
        fix = Fix("shrink", (Edit(m.start(), m.start() + len(m.group(1)), repl),), Applicability.SAFE)
        findings.append(Finding(code="PFX401", message="m", location=SourceLocation(str(path), 1), fix=fix))
    return FakeRun(findings)


def test_overlapping_fixes_converge_over_rounds_and_diff_equals_fix(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 'aaaaaaaa'\n")

    def relint(_last: object, changed: set[str], pending: dict[str, str]) -> FakeRun:
        assert changed == {str(path)}
        return _rule(path, pending, "aa", "a")

    preview = fix_until_stable(
        _rule(path, {}, "aa", "a"), relint, lambda p: Settings(), unsafe=False, write=False
    )
    assert path.read_text() == "x = 'aaaaaaaa'\n"  # --diff writes nothing
    assert preview.rounds == 3 and not preview.unstable
    [outcome] = preview.outcomes()
    assert outcome.fixed == "x = 'a'\n" and len(outcome.applied) == 7

    done = fix_until_stable(
        _rule(path, {}, "aa", "a"), relint, lambda p: Settings(), unsafe=False, write=True
    )
    assert path.read_text() == "x = 'a'\n" == outcome.fixed
    assert len(done.applied) == len(preview.applied) and done.run.findings == []


def test_fixes_that_undo_each_other_stop_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x\n")

    def flip(_last: object, _changed: set[str], pending: dict[str, str]) -> FakeRun:
        text = _text(path, pending)
        return _rule(path, pending, "x", "y") if "x" in text else _rule(path, pending, "y", "x")

    done = fix_until_stable(flip(None, set(), {}), flip, lambda p: Settings(), unsafe=False, write=False)
    assert done.unstable == [str(path)]
    assert done.rounds == 1 and done.texts[str(path)] == "y\n"


@needs_analyzer
def test_cli_diff_shows_the_converged_result_of_fix(tmp_path: Path) -> None:
    # Two fixes on one line: sort_keys and moving the dynamic text (both unsafe) overlap, so the
    # second waits for a round after the first.
    source = (
        "import json\n"
        "from datetime import datetime\n\n"
        "import openai\n\n"
        'RULES = "Follow the policy carefully. " * 300\n\n\n'
        "def ask(question, meta):\n"
        '    system = f"Meta: {json.dumps(meta)}\\nNow: {datetime.now()}\\n" + RULES\n'
        "    return openai.OpenAI().chat.completions.create(\n"
        '        model="gpt-4o",\n'
        '        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],\n'
        "    )\n"
    )
    for name in ("diffed.py", "fixed.py"):
        (tmp_path / name).write_text(source)
    code, patch, err = invoke(["check", "--no-cache", "--diff", "--unsafe-fixes", "diffed.py"], tmp_path)
    assert code == 1 and (tmp_path / "diffed.py").read_text() == source
    would = int(re.search(r"Would fix (\d+) errors?", err).group(1))  # type: ignore[union-attr]
    code, out, _ = invoke(["check", "--no-cache", "--fix", "--unsafe-fixes", "fixed.py"], tmp_path)
    fixed = (tmp_path / "fixed.py").read_text()
    assert "sort_keys=True" in fixed and fixed.index("RULES") < fixed.index("datetime.now()")
    assert f"({would} fixed," in out or f"Found {would} error" in out
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "p.diff").write_text(patch)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "diffed.py").read_text() == fixed


@needs_analyzer
def test_stdin_fix_converges_too(tmp_path: Path) -> None:
    source = (
        "import json\nimport openai\n\n"
        "def ask(q, a, b):\n"
        "    system = json.dumps(json.loads(a)) + json.dumps(json.loads(b)) + 'Rules. ' * 400\n"
        "    return openai.OpenAI().chat.completions.create(\n"
        '        model="gpt-4o",\n'
        '        messages=[{"role": "system", "content": system}, {"role": "user", "content": q}],\n'
        "    )\n"
    )
    code, out, _ = invoke(
        ["check", "--no-cache", "--fix", "-", "--stdin-filename", "s.py"], tmp_path, input=source
    )
    assert code in (0, 1) and out.count("sort_keys=True") == 2  # 1: findings without a fix remain
    assert not (tmp_path / "s.py").exists()
