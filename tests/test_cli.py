"""The ``prefixlint`` CLI: exit codes, discovery, stdin, cache, workers, --changed-since, --add-ignore."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_support import invoke, run_cli, use_analyzers

import prefixlint.lint.checker as checker
from prefixlint.analysis.result import AnalysisError, FileAnalysis
from prefixlint.model.layout import SourceLocation

NON_UTF8 = b"x = '\xff'\n"


@pytest.fixture(autouse=True)
def _analyzers(monkeypatch: pytest.MonkeyPatch) -> None:
    use_analyzers(monkeypatch)


class Calls:
    """Names of the files the analyzer was called for, in any process (files are checked in children)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        log.write_text("")

    def names(self) -> list[str]:
        return self.log.read_text().split()

    def clear(self) -> None:
        self.log.write_text("")


def counting_analyzer(
    monkeypatch: pytest.MonkeyPatch, log: Path, deps: dict[str, set[str]] | None = None
) -> Calls:
    """Wrap the analyzer to record which files it analysed (and add dependencies)."""
    calls = Calls(log)
    inner = checker.analyze

    def analyze(path, text, kind, settings):  # type: ignore[no-untyped-def]
        with open(log, "a") as fh:
            fh.write(Path(path).name + "\n")
        result = inner(path, text, kind, settings)
        result.dependencies |= (deps or {}).get(Path(path).name, set())
        return result

    monkeypatch.setattr(checker, "analyze", analyze)
    return calls


def test_exit_codes_clean_findings_and_usage(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    assert invoke(["check", "ok.py"], tmp_path)[0] == 0
    (tmp_path / "bad.py").write_bytes(NON_UTF8)
    code, out, _ = invoke(["check"], tmp_path)
    assert code == 1 and "bad.py:1:6: PFX001 File is not valid UTF-8" in out and "Found 1 error." in out
    assert invoke(["check", "--exit-zero"], tmp_path)[0] == 0
    code, out, err = invoke(["check", "missing.py"], tmp_path)
    assert code == 2 and "missing.py: No such file or directory" in err
    code, _, err = invoke(["check", "--output-format", "xml"], tmp_path)
    assert code == 2 and "unknown format 'xml'" in err
    code, _, err = invoke(["check", "--provider", "bogus", "ok.py"], tmp_path)
    assert code == 2 and "command line: --provider: Value error, unknown provider 'bogus'" in err
    assert "errors.pydantic.dev" not in err


def test_bad_inputs_get_located_diagnostics_not_tracebacks(tmp_path: Path) -> None:
    (tmp_path / "binary.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tmp_path / "latin1.py").write_bytes(b"# ok\nname = 'caf\xe9'\n")
    unreadable = tmp_path / "secret.py"
    unreadable.write_text("x = 1\n")
    unreadable.chmod(0)
    proc = run_cli(["check", "--no-cache", "--output-format", "concise", "."], tmp_path)
    unreadable.chmod(0o644)
    out = proc.stdout.decode()
    assert proc.returncode == 1, proc.stderr
    assert "binary.py:1:1: PFX001 Binary file" in out
    assert "latin1.py:2:12: PFX001 File is not valid UTF-8" in out
    if "secret.py" in out:  # root can read any file; elsewhere the permission error is reported
        assert "secret.py:1:1: PFX001 Cannot read file" in out
    assert b"Traceback" not in proc.stderr


def test_every_command_takes_output_format_json() -> None:
    from prefixlint.cli import app

    root = typer_command(app)

    def walk(cmd: Any, path: str) -> list[str]:
        if hasattr(cmd, "commands"):
            return [p for name, sub in cmd.commands.items() for p in walk(sub, f"{path} {name}")]
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        return [] if "--output-format" in opts else [path]

    assert walk(root, "prefixlint") == []
    assert {"check", "rules", "rule"} <= set(root.commands)


def typer_command(app: object) -> Any:
    import typer.main

    return typer.main.get_command(app)  # type: ignore[arg-type]


def test_rules_and_rule_commands(tmp_path: Path) -> None:
    code, out, _ = invoke(["rules"], tmp_path)
    assert code == 0 and "PFX900  unused-suppression" in out
    code, out, _ = invoke(["rules", "--output-format", "json"], tmp_path)
    codes = [r["code"] for r in json.loads(out)]
    assert {"PFX001", "PFX002", "PFX900"} <= set(codes) and codes == sorted(codes)
    code, out, _ = invoke(["rule", "pfx900"], tmp_path)
    assert code == 0 and "# unused-suppression (PFX900)" in out and "Fix: safe." in out
    code, out, _ = invoke(["rule", "PFX001", "--output-format", "json"], tmp_path)
    assert json.loads(out)["name"] == "unanalysable-input"
    code, _, err = invoke(["rule", "PFX777"], tmp_path)
    assert code == 2 and "unknown rule code 'PFX777'" in err


def test_stdin_with_filename(tmp_path: Path) -> None:
    code, out, _ = invoke(
        ["check", "-", "--stdin-filename", "pkg/mod.py", "--output-format", "json"], tmp_path, input=NON_UTF8
    )
    assert code == 1
    [f] = json.loads(out)
    assert f["filename"] == str(Path("pkg/mod.py")) and f["code"] == "PFX001"
    assert invoke(["check", "-"], tmp_path, input=b"x = 1\n")[0] == 0


def test_stdin_fix_prints_fixed_source(tmp_path: Path) -> None:
    code, out, _ = invoke(["check", "-", "--fix"], tmp_path, input=b"x = 1  # prefixlint: ignore[PFX001]\n")
    assert code == 0 and out == "x = 1\n"


def test_discovery_excludes_gitignore_and_templates(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.prefixlint]\nexclude = ["generated/**"]\n')
    for rel in [
        "src/a.py",
        "generated/g.py",
        ".venv/lib/v.py",
        "ignored_dir/i.py",
        "build/b.py",
        "src/ignored.py",
        "prompts/system.j2",
        "notes.md",
    ]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(NON_UTF8)
    (tmp_path / ".gitignore").write_text("ignored_dir/\n")
    (tmp_path / "src" / ".gitignore").write_text("ignored.py\n")
    _code, out, _ = invoke(["check", "--no-cache", "--output-format", "json"], tmp_path)
    names = sorted(Path(f["filename"]).as_posix() for f in json.loads(out))
    assert names == ["prompts/system.j2", "src/a.py"]
    # A file named explicitly is linted even if excluded, unless --force-exclude (pre-commit).
    assert invoke(["check", "--no-cache", "generated/g.py"], tmp_path)[0] == 1
    assert (
        invoke(["check", "--no-cache", "--force-exclude", "generated/g.py", "src/ignored.py"], tmp_path)[0]
        == 0
    )
    # Files prefixlint does not lint are skipped silently when named.
    assert invoke(["check", "--no-cache", "notes.md"], tmp_path)[0] == 0


def test_cache_warm_run_analyses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_analyzer(
        monkeypatch, tmp_path.parent / f"{tmp_path.name}.calls", {"a.py": {str(tmp_path / "prompts.py")}}
    )
    (tmp_path / "a.py").write_text("import openai\n")
    (tmp_path / "b.py").write_text("system_prompt = 'x'\n")
    (tmp_path / "prompts.py").write_text("x = 1\n")  # no prompt words: pre-filtered, never analysed
    (tmp_path / "bad.py").write_bytes(NON_UTF8 + b" prompt")
    first = invoke(["check", "-j", "1", "--output-format", "json"], tmp_path)
    assert sorted(calls.names()) == ["a.py", "b.py"]
    cache = tmp_path / ".prefixlint_cache"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    calls.clear()
    assert invoke(["check", "-j", "1", "--output-format", "json"], tmp_path) == first
    assert calls.names() == []
    # Touching a file without changing it keeps the entry (content hash fallback).
    (tmp_path / "b.py").write_text("system_prompt = 'x'\n")
    invoke(["check", "-j", "1"], tmp_path)
    assert calls.names() == []
    # A dependency change invalidates the dependent file only.
    (tmp_path / "prompts.py").write_text("x = 22\n")
    invoke(["check", "-j", "1"], tmp_path)
    assert calls.names() == ["a.py"]
    calls.clear()
    # Other settings use another cache entry; --no-cache bypasses it.
    invoke(["check", "-j", "1", "--provider", "anthropic"], tmp_path)
    assert sorted(calls.names()) == ["a.py", "b.py"]
    calls.clear()
    invoke(["check", "-j", "1", "--no-cache"], tmp_path)
    assert sorted(calls.names()) == ["a.py", "b.py"]


def test_cache_dir_option(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    invoke(["check", "--cache-dir", "elsewhere"], tmp_path)
    assert (tmp_path / "elsewhere" / "CACHEDIR.TAG").is_file()
    assert not (tmp_path / ".prefixlint_cache").exists()


def test_parallel_workers_match_single_process(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"m{i}.py").write_bytes(NON_UTF8 if i % 3 == 0 else b"system_prompt = 'hello'\n")
    one = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json"], tmp_path)
    two = invoke(["check", "--no-cache", "-j", "2", "--output-format", "json"], tmp_path)
    assert one == two and len(json.loads(one[1])) == 4


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "HOME": str(cwd),
            "PATH": "/usr/bin:/bin:/usr/local/bin",
        },
    )


def test_changed_since_reports_only_changed_lines(tmp_path: Path) -> None:
    old = tmp_path / "old.py"
    old.write_text("x = 1  # prefixlint: ignore[PFX001]\ny = 2  # prefixlint: ignore[PFX001]\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "init")
    old.write_text("x = 1  # prefixlint: ignore[PFX001]\ny = 3  # prefixlint: ignore[PFX001]\n")
    (tmp_path / "new.py").write_bytes(NON_UTF8)
    code, out, _ = invoke(
        ["check", "--no-cache", "--changed-since", "HEAD", "--output-format", "concise"], tmp_path
    )
    assert code == 1
    assert "old.py:2:8: PFX900" in out and "old.py:1:" not in out and "new.py:1:6: PFX001" in out
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "concise"], tmp_path)
    assert "old.py:1:8: PFX900" in out
    code, _, err = invoke(["check", "--changed-since", "no-such-ref"], tmp_path)
    assert code == 2 and "no-such-ref" in err


def test_add_ignore_then_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def analyze(path, text, kind, settings):  # type: ignore[no-untyped-def]
        lines = [i for i, line in enumerate(text.splitlines(), 1) if "include" in line]
        errors = [AnalysisError(SourceLocation(path, n, 0), "cannot follow include", "PFX002") for n in lines]
        return FileAnalysis(path=path, errors=errors)

    monkeypatch.setattr(checker, "analyze", analyze)
    src = 'import prompts\nT = """a\ninclude b\n"""\nU = "include c"\n'
    (tmp_path / "a.py").write_text(src)
    (tmp_path / "t.j2").write_text("Hi\n{% include name %}\n")
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "concise"], tmp_path)
    assert code == 1 and out.count("PFX002") == 3
    code, _, err = invoke(["check", "--no-cache", "--add-ignore"], tmp_path)
    assert code == 0 and "Added 3 prefixlint: ignore directives." in err
    assert (tmp_path / "a.py").read_text() == (
        'import prompts\nT = """a\ninclude b\n"""  # prefixlint: ignore[PFX002]\n'
        'U = "include c"  # prefixlint: ignore[PFX002]\n'
    )
    assert (tmp_path / "t.j2").read_text() == "Hi\n{% include name %}{# prefixlint: ignore[PFX002] #}\n"
    code, out, _ = invoke(["check", "-j", "1", "--no-cache"], tmp_path)
    assert code == 0 and "All checks passed!" in out


def test_output_file_statistics_and_quiet(tmp_path: Path) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_bytes(NON_UTF8)
    code, out, _ = invoke(["check", "--statistics"], tmp_path)
    assert code == 1 and out.split() == ["2", "PFX001", "unanalysable-input"]
    code, out, _ = invoke(["check", "--statistics", "--output-format", "json"], tmp_path)
    assert json.loads(out) == [{"code": "PFX001", "name": "unanalysable-input", "count": 2, "fixable": 0}]
    code, out, _ = invoke(["check", "-o", "report/out.json", "--output-format", "json"], tmp_path)
    assert code == 1 and out == "" and len(json.loads((tmp_path / "report" / "out.json").read_text())) == 2
    code, out, _ = invoke(["check", "-q", "--output-format", "concise"], tmp_path)
    assert out.splitlines() == [
        "a.py:1:6: PFX001 File is not valid UTF-8 (invalid start byte at byte 5)",
        "b.py:1:6: PFX001 File is not valid UTF-8 (invalid start byte at byte 5)",
    ]


def test_entry_point_version_and_help(tmp_path: Path) -> None:
    proc = run_cli(["--version"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.decode().startswith("prefixlint ")
    proc = run_cli(["check", "--help"], tmp_path)
    assert proc.returncode == 0 and b"--unsafe-fixes" in proc.stdout


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (b"from openai import OpenAI\n", True),
        (b"import anthropic\n", True),
        (b"SYSTEM_PROMPT = f'Today is {d}'\n", True),
        (b"msgs = [{'role': 'user', 'content': q}]\n", True),
        (b"client.messages.create(model=m, max_tokens=1, messages=msgs)\n", True),
        (b"from jinja2 import Template\n", True),
        (b"agent = Agent(instructions=text)\n", True),
        (b"line = input(prompt)\nself.prompt = '(Pdb) '\n", False),
        (b"import os\nos.system('ls')\nlogging.info(messages)\n", False),
        (b"def add(a, b):\n    return a + b\n", False),
    ],
)
def test_prefilter(source: bytes, expected: bool) -> None:
    from prefixlint.lint.prefilter import may_build_prompts
    from prefixlint.model.settings import Settings

    assert may_build_prompts(source, Settings()) is expected


def test_prefilter_includes_configured_sinks() -> None:
    from prefixlint.lint.prefilter import may_build_prompts
    from prefixlint.model.settings import Settings

    settings = Settings(sinks=[{"call": "myllm.ask_model", "prompt": "question"}])
    assert may_build_prompts(b"answer = ask_model(question=q)\n", settings)
    assert not may_build_prompts(b"answer = ask_model(question=q)\n", Settings())


def test_gc_settings_are_restored_after_a_run(tmp_path: Path) -> None:
    import gc

    from prefixlint.lint.pool import fewer_gc_passes

    before = gc.get_threshold()
    with fewer_gc_passes():
        assert gc.get_threshold()[0] >= 100_000 and gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    gc.freeze()  # a caller that froze its own objects keeps them frozen
    try:
        frozen = gc.get_freeze_count()
        with fewer_gc_passes():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
