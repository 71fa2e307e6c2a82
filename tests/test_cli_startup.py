"""What a fresh ``prefixlint check`` skips, and that skipping it changes nothing.

A plain ``check`` command line is parsed before typer is imported (``tests/test_cli_fast_path.py``),
the mounted ``engine`` and ``bench`` sub-apps are built only when used, and the cache stores findings
compactly. Each test checks one of these against the behaviour it replaces (no timing assertions).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from cli_support import REPO, invoke

from prefixlint.cli import MOUNTS, app


def _root() -> Any:
    return typer.main.get_command(app)  # type: ignore[arg-type]


def _plain(text: str) -> str:
    """A rich error panel as one line of words."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


# --- option values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-j", "0"], "Invalid value for '-j' / '--jobs': Input should be greater than or equal to 1"),
        (["--jobs", "abc"], "Input should be a valid integer, unable to parse string as an integer"),
        (["-j"], "Option '-j' requires an argument."),
        (["--output-format", "nope"], "--output-format: unknown format 'nope'; expected one of text,"),
        (["--select", "NOPE"], "--select: unknown rule selector 'NOPE'"),
        (["--config", "missing.toml"], "missing.toml: config file not found"),
    ],
)
def test_bad_option_values_exit_2_with_a_clear_message(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    code, out, err = invoke(["check", "a.py", *args], tmp_path)
    assert code == 2 and out == ""
    assert message in _plain(err)


def test_good_option_values_are_used(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    args = ["check", "-j", "02", "--cache-dir", "c", "-o", "out/report.json", "--output-format", "json"]
    code, out, err = invoke([*args, "--select", "pfx1,PFX9", "--ignore", "PFX101", "a.py"], tmp_path)
    assert (code, out, err) == (0, "", "")
    assert json.loads((tmp_path / "out" / "report.json").read_text()) == []
    assert (tmp_path / "c" / "CACHEDIR.TAG").is_file()


def test_check_imports_neither_pydantic_nor_the_sub_apps(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def add(a, b):\n    return a + b\n")
    script = (
        "import sys\n"
        "from prefixlint.cli import main\n"
        "sys.argv = ['prefixlint', 'check', '--statistics', '-j', '1', '--output-format', 'json', '.']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
        "names = ('pydantic', 'prefixlint.commands.engine', 'prefixlint.commands.bench',"
        " 'prefixlint.model.settings_schema')\n"
        "print(code, sorted(n for n in names if n in sys.modules), file=sys.stderr)\n"
    )
    for _ in range(2):  # cold, then warm
        proc = subprocess.run(
            [sys.executable, "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=240,
            check=False,
        )
        assert proc.stderr.strip().splitlines()[-1] == "0 []", proc.stderr
        assert json.loads(proc.stdout) == []


# --- mounted sub-apps ---------------------------------------------------------------------------------


def test_mounted_sub_apps_are_built_on_demand_as_add_typer_would() -> None:
    import importlib

    root = _root()
    assert list(root.commands) == ["check", "rules", "rule", "diff", "audit", *MOUNTS]
    for name, (module, help_text) in MOUNTS.items():
        sub = importlib.import_module(module).app
        if len(sub.registered_commands) == 1 and sub.registered_callback is None:
            # A one-command app (canary, probe) is mounted as that command, with the mount's short help.
            command = _root().commands[name]
            expected = typer.main.get_command(sub)
            assert type(command) is type(expected) and command.name == name
            assert command.short_help == help_text and command.help == expected.help
            got = [(p.name, p.opts, p.default) for p in command.params]
            assert got == [(p.name, p.opts, p.default) for p in expected.params]
            continue
        reference = typer.Typer()
        reference.add_typer(sub, name=name, help=help_text)
        expected = typer.main.get_group(reference).commands[name]
        group = _root().commands[name]
        assert type(group) is type(expected) and group.help == expected.help == help_text
        assert list(group.commands) == list(expected.commands)
        for sub in group.commands:
            got = [(p.name, p.opts, p.default) for p in group.commands[sub].params]
            assert got == [(p.name, p.opts, p.default) for p in expected.commands[sub].params]


def test_mounted_sub_apps_in_help_typos_and_runs(tmp_path: Path) -> None:
    code, out, _ = invoke(["--help"], tmp_path)
    assert code == 0 and all(name in out for name in ("check", "rules", "rule", *MOUNTS))
    code, _, err = invoke(["engin"], tmp_path)
    assert code == 2 and "No such command 'engin'. Did you mean 'engine'?" in _plain(err)
    code, _, err = invoke(["chek"], tmp_path)
    assert code == 2 and "Did you mean 'check'?" in _plain(err)
    for name in MOUNTS:
        code, out, _ = invoke([name, "--help"], tmp_path)
        assert code == 0 and "Usage:" in out


# --- cache entries ------------------------------------------------------------------------------------


def test_cached_findings_read_back_equal() -> None:
    from prefixlint.lint.result_cache import finding_from_dict, finding_to_dict
    from prefixlint.model.edits import Applicability, Edit, Fix
    from prefixlint.model.findings import Finding, Impact, Severity
    from prefixlint.model.layout import SourceLocation

    here = SourceLocation("/p/a.py", 3, 4, 3, 9)
    findings = [
        Finding(
            code="PFX101",
            message="m",
            location=here,
            severity=Severity.HIGH,
            impact=Impact(10, 5, True, 1024, False, "o200k_base", True),
            fix=Fix(
                "move", (Edit(1, 2, "x"), Edit(5, 5, "")), Applicability.UNSAFE, "move-to-end", "/p/b.py"
            ),
            chain=(SourceLocation("/p/a.py", 1), SourceLocation("/p/b.py", 2, 1, None, None), here),
            confidence=0.5,
            snippet="s",
            rule_name="r",
            extra={"kind": "timestamp", "n": 2, "flag": False},
        ),
        Finding(code="PFX001", message="bad", location=SourceLocation("", 1)),
    ]
    for f in findings:
        assert finding_from_dict(json.loads(json.dumps(finding_to_dict(f)))) == f
        assert finding_from_dict(json.loads(json.dumps(finding_to_dict(f)))).extra == f.extra


def test_warm_results_equal_cold_results(tmp_path: Path) -> None:
    from prefixlint.lint.config import SettingsResolver
    from prefixlint.lint.discover import discover
    from prefixlint.lint.runner import RunOptions, _skipped_data, check_targets

    assert _skipped_data() is not None  # the shortcut for pre-filtered files is in use
    (tmp_path / "plain.py").write_text("x = 1\n")
    (tmp_path / "p.py").write_text("from openai import OpenAI\nsystem_prompt = 'x'  # prefixlint: ignore\n")
    (tmp_path / "t.j2").write_text("Hello {{ name }}\n")
    targets = discover([tmp_path], SettingsResolver())
    options = RunOptions(jobs=1, cache_dir=tmp_path / "cache")
    cold = check_targets(targets, options)
    warm = check_targets(targets, options)
    assert all(r.cached for r in warm.values()) and not any(r.cached for r in cold.values())
    for path, result in cold.items():
        warm[path].cached = False
        assert warm[path] == result, path


# --- settings -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "table",
    [
        {
            "dynamic-sources": [
                {"pattern": "app.now", "kind": "timestamp"},
                {"pattern": "req_.*", "match": "name"},
            ]
        },
        {
            "sinks": [
                {"call": "myllm.chat", "system": "sys", "messages": "msgs"},
                {"call": "*.ask", "provider": "X"},
            ]
        },
        {"dynamic_sources": [], "sinks": [{"call": "a", "tools": None}]},
    ],
)
def test_sinks_and_dynamic_sources_skip_pydantic_with_the_same_result(table: dict[str, Any]) -> None:
    from prefixlint.model.settings import _fast_values, _schema_values

    fast = _fast_values(table)
    assert fast is not None and fast == _schema_values(table)


@pytest.mark.parametrize(
    "table",
    [
        {"dynamic-sources": [{"pattern": "x", "kind": "nope"}]},
        {"dynamic-sources": [{"pattern": 1}]},
        {"dynamic-sources": [{"pattern": "x", "match": "other"}]},
        {"sinks": [{"call": "a", "extra": 1}]},
        {"sinks": [{"provider": "x"}]},
        {"sinks": [{"call": "a", "tools": 3}]},
        {"sinks": {"call": "a"}},
    ],
)
def test_bad_sinks_and_dynamic_sources_still_get_pydantic_errors(table: dict[str, Any]) -> None:
    from pydantic import ValidationError

    from prefixlint.model.settings import Settings, _fast_values

    assert _fast_values(table) is None
    with pytest.raises(ValidationError):
        Settings(**table)
