"""Real trees: files that crash the parser natively, unreadable folders, other projects' broken configs."""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from cli_support import invoke, run_cli

from prefixlint.lint.config import SettingsResolver
from prefixlint.lint.discover import discover

UNUSED = "x = 1  # prefixlint: ignore[PFX001]\n"  # a PFX900 finding on line 1: proof the file was linted
# Crashes libcst's native parser (a stack overflow, SIGSEGV) and with it the process that parses it.
DEEP = "system_prompt = " + "[" * 3000 + "]" * 3000 + "\n"


def _tree(root: Path, files: int = 6) -> None:
    (root / "deep.py").write_text(DEEP)
    for i in range(files):
        (root / f"ok{i}.py").write_text(UNUSED)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_that_kills_the_parser_is_pfx001_and_the_rest_is_linted(tmp_path: Path, jobs: str) -> None:
    _tree(tmp_path)
    proc = run_cli(["check", "--no-cache", "-j", jobs, "--output-format", "json", "."], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert b"BrokenProcessPool" not in proc.stderr and b"Traceback" not in proc.stderr
    found = {(Path(f["filename"]).name, f["code"]) for f in json.loads(proc.stdout)}
    assert found == {("deep.py", "PFX001"), *((f"ok{i}.py", "PFX900") for i in range(6))}
    (deep,) = [f for f in json.loads(proc.stdout) if f["code"] == "PFX001"]
    assert "crashed" in deep["message"] and "SIGSEGV" in deep["message"]


@pytest.mark.threaded_caller
@pytest.mark.parametrize("other_thread", [False, True], ids=["single-threaded", "threaded-caller"])
def test_crash_in_process_run_keeps_the_caller_alive(tmp_path: Path, other_thread: bool) -> None:
    """In-process callers too: forked children, or fresh worker processes when other threads run."""
    _tree(tmp_path, files=1)
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait, daemon=True)
    if other_thread:
        helper.start()
    try:
        code, out, _ = invoke(["check", "--no-cache", "--output-format", "concise"], tmp_path)
    finally:
        stop.set()
    assert code == 1
    assert "deep.py:1:1: PFX001 The parser or analyzer crashed on this file" in out
    assert "ok0.py:1:8: PFX900" in out


def test_crashed_file_is_not_cached_and_can_be_suppressed(tmp_path: Path) -> None:
    _tree(tmp_path, files=1)
    invoke(["check"], tmp_path)
    (tmp_path / "deep.py").write_text("# prefixlint: ignore-file[PFX001]\n" + DEEP)
    code, out, _ = invoke(["check", "--output-format", "concise"], tmp_path)
    assert code == 1 and "deep.py" not in out and "ok0.py:1:8: PFX900" in out


def test_an_exception_that_escapes_the_checker_is_that_files_pfx001(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import prefixlint.lint.pool as pool

    class Panic(BaseException):  # what pyo3 raises for a Rust panic: not an Exception
        pass

    inner = pool.check_source

    def check_source(path, text, settings, kind=None):  # type: ignore[no-untyped-def]
        if path.endswith("boom.py"):
            raise Panic("native panic")
        return inner(path, text, settings, kind)

    monkeypatch.setattr(pool, "check_source", check_source)
    (tmp_path / "boom.py").write_text("system_prompt = 'x'\n")
    (tmp_path / "fine.py").write_text(UNUSED)
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "concise"], tmp_path)
    assert code == 1
    assert (
        "boom.py:1:1: PFX001 The parser or analyzer crashed on this file: its worker process raised Panic"
        in out
    )
    assert "fine.py:1:8: PFX900" in out


def test_pool_without_fork_checks_a_broken_chunk_one_file_per_process(tmp_path: Path) -> None:
    from prefixlint.lint.pool import _run_pool

    _tree(tmp_path)
    targets = discover([tmp_path], SettingsResolver())
    results = {Path(r.path).name: r for r in _run_pool(targets, 2, True, {}, None)}
    assert set(results) == {"deep.py", *(f"ok{i}.py" for i in range(6))}
    assert results["deep.py"].crashed and results["deep.py"].findings[0].code == "PFX001"
    assert not any(r.crashed for name, r in results.items() if name != "deep.py")


# --- unreadable folders -----------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_unreadable_folder_is_reported_not_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ok.py").write_text(UNUSED)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(UNUSED)
    locked.chmod(0)
    if os.access(locked, os.R_OK):  # root reads every folder: refuse it the way the kernel would
        scandir = os.scandir

        def refusing(path: Any = ".") -> Any:
            if os.fspath(path) == str(locked):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
            return scandir(path)

        monkeypatch.setattr(os, "scandir", refusing)
    try:
        code, out, err = invoke(["check", "--no-cache", "--output-format", "json", "."], tmp_path)
    finally:
        locked.chmod(0o755)
    assert code == 1, err
    found = {(Path(f["filename"]).name, f["code"], f["message"]) for f in json.loads(out)}
    assert ("locked", "PFX001", "Cannot read directory: Permission denied") in found
    assert ("ok.py", "PFX900", "Unused suppression (unused: PFX001)") in found


# --- other projects' configs -------------------------------------------------------------------------

TEMPLATE_PYPROJECT = (
    '[project]\nname = "{{ cookiecutter.project_slug }}"\nversion = {{ cookiecutter.version }}\n'
)


def test_broken_pyproject_of_another_project_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.prefixlint]\nignore = ["PFX900"]\n')
    (tmp_path / "top.py").write_text(UNUSED)
    template = tmp_path / "{{cookiecutter.project_slug}}"
    template.mkdir()
    (template / "pyproject.toml").write_text(TEMPLATE_PYPROJECT)
    (template / "inner.py").write_text(UNUSED + "y = 2  # prefixlint: ignore[PFX999]\n")
    code, out, err = invoke(["check", "--no-cache", "--output-format", "concise"], tmp_path)
    assert (
        "prefixlint: warning:" in err and "{{cookiecutter.project_slug}}/pyproject.toml: invalid TOML" in err
    )
    # inner.py uses the root config (PFX900 ignored there too), so the run is clean
    assert code == 0, out
    assert "All checks passed!" in out


def test_broken_pyproject_that_configures_prefixlint_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.prefixlint]\nignore = ["PFX900"\n')
    (tmp_path / "a.py").write_text(UNUSED)
    code, out, err = invoke(["check", "--no-cache"], tmp_path)
    assert code == 2 and out == ""
    assert "pyproject.toml: invalid TOML" in err


def test_broken_config_given_with_config_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "other.toml").write_text(TEMPLATE_PYPROJECT)
    (tmp_path / "a.py").write_text(UNUSED)
    code, _, err = invoke(["check", "--no-cache", "--config", "other.toml"], tmp_path)
    assert code == 2 and "other.toml: invalid TOML" in err
