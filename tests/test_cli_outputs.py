"""What ``check`` prints: errors in every output format, statistics, colour, progress, stdin snippets;
and how the process ends (atexit handlers run) and what ``--help`` says of a command it cannot load."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import REPO, invoke, run_cli
from test_output_formats import official_sarif_schema

UNUSED = "x = 1  # prefixlint: ignore[PFX001]\n"  # a fixable PFX900 finding
BROKEN = '[tool.prefixlint]\nselect = ["PFX1"\n'  # invalid TOML in the run's own config


# --- errors -----------------------------------------------------------------------------------------


def test_config_error_is_a_json_report_with_its_location(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(BROKEN)
    (tmp_path / "a.py").write_text(UNUSED)
    proc = run_cli(["check", "--output-format", "json", "."], tmp_path)
    assert proc.returncode == 2
    assert b"pyproject.toml: invalid TOML" in proc.stderr
    [error] = json.loads(proc.stdout)
    assert error["fatal"] is True and error["code"] is None and error["exit_code"] == 2
    assert error["filename"] == "pyproject.toml" and error["location"] == {"row": 2, "column": 17}
    assert "invalid TOML" in error["message"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.py"], "missing.py: No such file or directory"),
        (["--select", "NOPE", "."], "--select: unknown rule selector 'NOPE'"),
        (["--changed-since", "HEAD", "."], "--changed-since HEAD:"),
        (["--statistics", "."], "--statistics cannot be shown in the github output format"),
    ],
)
def test_every_error_is_a_report_in_the_machine_formats(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "a.py").write_text(UNUSED)
    for fmt in ("json", "json-lines", "sarif", "github"):
        if "--statistics" in args and fmt != "github":
            continue
        code, out, err = invoke(["check", "--output-format", fmt, *args], tmp_path)
        assert code == 2 and message in err, (fmt, err)
        if fmt == "json":
            assert message in json.loads(out)[0]["message"]
        elif fmt == "json-lines":
            assert message in json.loads(out.splitlines()[0])["message"]
        elif fmt == "sarif":
            invocation = json.loads(out)["runs"][0]["invocations"][0]
            assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 2
            assert message in invocation["toolExecutionNotifications"][0]["message"]["text"]
        else:
            assert out.startswith("::error title=prefixlint") and message in out


def test_error_sarif_validates_against_the_official_schema(tmp_path: Path) -> None:
    import jsonschema

    (tmp_path / "pyproject.toml").write_text(BROKEN)
    code, out, _ = invoke(["check", "--output-format", "sarif", "."], tmp_path)
    assert code == 2
    jsonschema.validate(json.loads(out), official_sarif_schema(), cls=jsonschema.Draft4Validator)


def test_text_errors_stay_on_stderr(tmp_path: Path) -> None:
    code, out, err = invoke(["check", "missing.py"], tmp_path)
    assert code == 2 and out == "" and "prefixlint: error: missing.py" in err


# --- statistics -------------------------------------------------------------------------------------


def test_statistics_in_each_format(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(UNUSED)
    _, text, _ = invoke(["check", "--no-cache", "--statistics"], tmp_path)
    assert text == "3\tPFX900\t[*] unused-suppression\n"
    _, out, _ = invoke(["check", "--no-cache", "--statistics", "--output-format", "json"], tmp_path)
    assert json.loads(out) == [{"code": "PFX900", "name": "unused-suppression", "count": 3, "fixable": 3}]
    _, out, _ = invoke(["check", "--no-cache", "--statistics", "--output-format", "json-lines"], tmp_path)
    assert [json.loads(line) for line in out.splitlines()] == json.loads(
        invoke(["check", "--no-cache", "--statistics", "--output-format", "json"], tmp_path)[1]
    )
    for fmt in ("sarif", "github"):
        code, out, err = invoke(["check", "--statistics", "--output-format", fmt], tmp_path)
        assert code == 2 and f"--statistics cannot be shown in the {fmt} output format" in err


# --- stdin ------------------------------------------------------------------------------------------


def test_stdin_snippets_come_from_stdin(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("# the file on disk says something else\n" * 3)
    stdin = "y = 2\nx = 1  # prefixlint: ignore[PFX001]\n"
    code, out, _ = invoke(["check", "--no-cache", "-", "--stdin-filename", "app.py"], tmp_path, input=stdin)
    assert code == 1
    assert "app.py:2:8: PFX900" in out
    assert "2 | x = 1  # prefixlint: ignore[PFX001]" in out and "something else" not in out


# --- colour and progress ----------------------------------------------------------------------------


def _on_a_terminal(args: list[str], cwd: Path, env: dict[str, str], stream: str) -> str:
    """Run the CLI with ``stream`` (stdout or stderr) on a pseudo-terminal; what it wrote there."""
    leader, follower = pty.openpty()
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, stream: follower}
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "prefixlint", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100", **env},
        **streams,  # type: ignore[arg-type]
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=240)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_text_output_is_coloured_on_a_terminal_unless_no_color(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(UNUSED)
    env = {k: "" for k in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")}
    coloured = _on_a_terminal(["check", "--no-cache", "a.py"], tmp_path, env, "stdout")
    assert "\x1b[1;31mPFX900\x1b[0m" in coloured
    plain = _on_a_terminal(["check", "--no-cache", "a.py"], tmp_path, {**env, "NO_COLOR": "1"}, "stdout")
    assert "PFX900" in plain and "\x1b[" not in plain
    piped = run_cli(["check", "--no-cache", "a.py"], tmp_path)
    assert b"\x1b[" not in piped.stdout


def test_long_runs_show_a_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    for i in range(250):
        (tmp_path / f"m{i:03}.py").write_text("x = 1\n")
    shown = re.sub(
        r"\x1b\[[0-9;?]*[A-Za-z]", "", _on_a_terminal(["check", "--no-cache", "."], tmp_path, {}, "stderr")
    )
    assert "Checking" in shown and "250/250 files" in shown
    quiet = _on_a_terminal(["check", "--no-cache", "-q", "."], tmp_path, {}, "stderr")
    assert "Checking" not in quiet
    piped = run_cli(["check", "--no-cache", "."], tmp_path)
    assert piped.returncode == 0 and b"Checking" not in piped.stderr


def test_progress_bar_counts_every_file() -> None:
    import io

    from prefixlint.report.progress import progress_bar

    out = io.StringIO()
    with progress_bar(3, stream=out, force=True) as advance:
        for _ in range(3):
            advance()
    assert "3/3" in out.getvalue()


# --- how the process ends ---------------------------------------------------------------------------


def test_coverage_run_keeps_its_data(tmp_path: Path) -> None:
    pytest.importorskip("coverage")
    (tmp_path / "a.py").write_text(UNUSED)
    env = {**os.environ, "PYTHONPATH": str(REPO), "COVERAGE_FILE": str(tmp_path / "cov.data")}
    proc = subprocess.run(
        [sys.executable, "-m", "coverage", "run", "--source=prefixlint", "-m", "prefixlint", "check", "a.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr  # the PFX900 finding
    assert (tmp_path / "cov.data").is_file(), "coverage's atexit handler did not run"


def test_atexit_handlers_run_after_a_check(tmp_path: Path) -> None:
    marker = tmp_path / "atexit-ran"
    (tmp_path / "a.py").write_text("x = 1\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"import atexit\natexit.register(lambda: open({str(marker)!r}, 'w').close())\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{REPO}"}
    proc = subprocess.run(
        [sys.executable, "-m", "prefixlint", "check", "a.py"], cwd=tmp_path, env=env, capture_output=True
    )
    assert proc.returncode == 0 and marker.exists()


_TEARDOWN_MARKER = """
import os


class _Torn:
    # what it calls is bound now: late in a teardown, module globals may be gone already
    def __del__(self, _open=os.open, _close=os.close, _flags=os.O_CREAT | os.O_WRONLY):
        _close(_open({marker!r}, _flags))


torn = _Torn()  # deleted only when the interpreter tears its modules down
"""


def _check_with_teardown_marker(
    tmp_path: Path, command: list[str]
) -> tuple[subprocess.CompletedProcess[str], Path]:
    marker = tmp_path / "torn-down"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_TEARDOWN_MARKER.format(marker=str(marker)))
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{REPO}"}
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    return proc, marker


def test_a_check_from_the_command_line_ends_without_tearing_down_its_objects(tmp_path: Path) -> None:
    """``python -m prefixlint check`` leaves at once, after atexit handlers, with its whole report."""
    (tmp_path / "a.py").write_text(UNUSED)
    proc, marker = _check_with_teardown_marker(
        tmp_path, [sys.executable, "-m", "prefixlint", "check", "--output-format", "json", "a.py"]
    )
    assert proc.returncode == 1, proc.stderr  # the PFX900 finding: the exit code survives
    assert [f["code"] for f in json.loads(proc.stdout)] == ["PFX900"]  # flushed, whole
    assert not marker.exists()


def test_main_called_by_other_code_exits_as_usual(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(UNUSED)
    script = (
        "import sys\nfrom prefixlint.cli import main\n"
        "sys.argv = ['prefixlint', 'check', 'a.py']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    print('caught', exc.code)\n"
    )
    proc, marker = _check_with_teardown_marker(tmp_path, [sys.executable, "-c", script])
    assert proc.stdout.strip().splitlines()[-1] == "caught 1", proc.stderr
    assert marker.exists()


# --- commands that cannot be loaded -----------------------------------------------------------------


def test_a_command_that_cannot_be_imported_says_which_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import prefixlint.cli as cli

    (tmp_path / "needs_scipy_cmd.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'scipy'\", name='scipy')\n"
    )
    (tmp_path / "broken_cmd.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.MOUNTS, "stats", ("needs_scipy_cmd", "Statistics."))
    monkeypatch.setitem(cli.MOUNTS, "broken", ("broken_cmd", "Broken."))
    monkeypatch.setattr(cli, "_APP", [])
    code, out, _ = invoke(["--help"], tmp_path)
    assert code == 0
    flat = " ".join(out.replace("│", " ").split())
    assert "stats (unavailable: install prefixlint[engine]" in flat
    assert "broken (unavailable: it failed to load: RuntimeError: boom)" in flat
    code, _, err = invoke(["stats", "run", "--x"], tmp_path)
    assert code == 2
    assert "`prefixlint stats` is not available: install prefixlint[engine] (No module named 'scipy')" in err
