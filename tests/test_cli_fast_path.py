"""``check``'s fast path (``commands/lean.py``) reads command lines exactly as the typer command does.

The fast path parses ``check``'s options before typer is imported. For every command line tried here
it must either give the same keyword arguments that typer gives the command, or step aside (None) so
that typer handles it; it must never accept what typer rejects.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from cli_support import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import prefixlint.commands.check as check_command
from prefixlint.cli import build_app
from prefixlint.commands.lean import CHECK_OPTIONS, parse_check_args

ENV: dict[str, str] = {}


def _typer_kwargs(
    args: list[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> dict[str, Any] | None:
    """The keyword arguments typer passes for ``prefixlint check ARGS``, or None (usage error, help)."""
    seen: list[dict[str, Any]] = []

    def capture(**kwargs: Any) -> int:
        seen.append(kwargs)
        return 0

    monkeypatch.setattr(check_command, "run_check", capture)
    result = CliRunner().invoke(build_app(), ["check", *args], env=env, catch_exceptions=False)
    if result.exit_code != 0:
        assert result.exit_code == 2, result.output
        return None
    assert len(seen) <= 1
    return seen[0] if seen else None  # --help prints and exits 0 without running the command


def test_the_option_table_matches_the_typer_signature() -> None:
    cmd = typer.main.get_command(build_app()).commands["check"]
    params = {p.name: p for p in cmd.params}
    assert set(params) == {o.dest for o in CHECK_OPTIONS} | {"paths"}
    for opt in CHECK_OPTIONS:
        p = params[opt.dest]
        assert tuple(p.opts) == opt.opts and tuple(p.secondary_opts) == opt.secondary, opt.dest
        assert p.envvar == opt.envvar and p.default == opt.default, opt.dest
        assert bool(p.multiple) == (opt.kind == "list"), opt.dest
        assert bool(getattr(p, "is_flag", False)) == (opt.kind == "flag"), opt.dest
        kind = {str: "str", int: "int", Path: "path", bool: "flag"}.get(p.type_descriptor.annotation, "list")
        assert kind == opt.kind, opt.dest
    assert params["paths"].nargs == -1


COMMON = [
    [],
    ["."],
    ["--fix", "a.py", "b.py"],
    ["--force-exclude", "--exit-zero", "src/x.py"],
    ["-j", "2", "--output-format", "json", "--statistics", "."],
    ["--output-format=concise", "-q", "-n", "."],
    ["-nq", "-j2", "-oout/report.sarif", "--output-format", "sarif"],
    ["--select", "PFX1,PFX9", "--ignore", "PFX101", "--extend-select", "PFX4", "x"],
    ["--select", "a", "--select", "b", "--no-fix", "--fix", "--unsafe-fixes", "--diff"],
    ["--changed-since", "HEAD~1", "--cache-dir", "c", "--config", "p.toml", "--", "-weird.py"],
    ["-", "--stdin-filename", "app/x.py", "--show-fixes", "--add-ignore", "--no-prefilter"],
    ["--provider", "openai", "--model", "gpt-4.1", "-o", "-", "--jobs=3"],
]


@pytest.mark.parametrize("args", COMMON, ids=lambda a: " ".join(a) or "(none)")
def test_common_command_lines_take_the_fast_path_with_typers_values(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = parse_check_args(args, ENV)
    assert fast is not None, "a plain command line must not need typer"
    assert fast == _typer_kwargs(args, monkeypatch, ENV)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--nope"],
        ["-x"],
        ["-j"],
        ["-j", "0"],
        ["-j", "abc"],
        ["-j", " 3"],
        ["--fix=yes"],
        ["-n=1"],
        ["--config", ""],
        ["--output-format"],
        ["-qz"],
        ["---x"],
    ],
)
def test_typer_handles_what_the_fast_path_is_not_sure_of(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parse_check_args(args, ENV) is None
    # and typer's answer stands (a value or an exit-2 usage error), whichever it is
    _typer_kwargs(args, monkeypatch, ENV)


def test_environment_variables_are_read_as_click_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in (
        {"PREFIXLINT_OUTPUT_FORMAT": "json", "PREFIXLINT_CACHE_DIR": "/tmp/c"},
        {"PREFIXLINT_OUTPUT_FORMAT": "", "PREFIXLINT_CACHE_DIR": ""},  # empty means unset
    ):
        for args in ([], ["--output-format", "text", "--cache-dir", "d"]):
            assert parse_check_args(args, env) == _typer_kwargs(args, monkeypatch, env), (env, args)


_WORDS = [
    *(name for o in CHECK_OPTIONS for name in (*o.opts, *o.secondary)),
    "--",
    "-",
    "a.py",
    "dir/",
    "json",
    "text",
    "2",
    "02",
    "0",
    "-1",
    "",
    "x=y",
    "-nq",
    "-qn",
    "-j3",
    "-oreport.txt",
    "-o=r.txt",
    "-qj",
    "-nj2",
    "--fix=1",
    "--select=PFX1",
    "--output-format=json",
    "--jobs=2",
    "--nope",
    "-z",
    "ü.py",
    "--help",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_WORDS), max_size=6))
def test_fast_path_never_disagrees_with_typer(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    fast = parse_check_args(args, ENV)
    if fast is None:
        return  # typer decides
    assert fast == _typer_kwargs(args, monkeypatch, ENV), args


def _fresh(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=240,
        check=False,
    )


def test_a_plain_check_imports_neither_typer_nor_pydantic(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def add(a, b):\n    return a + b\n")
    script = (
        "import sys\n"
        "from prefixlint.cli import main\n"
        "try:\n    main(['check', '-j', '1', '--output-format', 'json', '.'])\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        "names = ('typer', 'click', 'pydantic', 'rich', 'prefixlint.commands.engine',"
        " 'prefixlint.commands.bench')\n"
        "print(code, sorted(n for n in names if n in sys.modules), file=sys.stderr)\n"
    )
    proc = _fresh(script, tmp_path)
    assert proc.stderr.strip().splitlines()[-1] == "0 []", proc.stderr
    assert json.loads(proc.stdout) == []


def test_a_usage_error_goes_through_typer_and_is_json_on_stdout(tmp_path: Path) -> None:
    script = "from prefixlint.cli import main\nmain(['check', '--nope', '--output-format', 'json', '.'])\n"
    proc = _fresh(script, tmp_path)
    assert proc.returncode == 2
    assert "No such option: --nope" in proc.stderr
    [error] = json.loads(proc.stdout)
    assert error["fatal"] and error["code"] is None and "No such option: --nope" in error["message"]
