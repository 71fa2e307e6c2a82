"""A worker forked at launch (``workers.prestart``): handed the run's work, replaced when it dies
before it has that work, killed when no run takes it; and which command lines start one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import REPO, run_cli

from prefixlint.lint import workers
from prefixlint.lint.prestart import worth_prestarting

PROMPT_APP = """from openai import OpenAI
from datetime import datetime

client = OpenAI()
RULES = "Follow the house policy carefully and cite every source you use. " * 200


def ask(question):
    system = f"Today is {datetime.now()}.\\n" + RULES
    return client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],
    )
"""


@pytest.fixture(autouse=True)
def _two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "_cores", lambda: 2)  # a one-core machine never pre-starts


def _pid_and_square(i: int) -> tuple[int, int]:
    if i == 2 and os.environ.get("PRESTART_TEST_KILL_AT_2"):
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid(), i * i


def _gone(pid: int) -> bool:
    """No such process, or only its exit status is left (a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        # the state follows the command name, which is in brackets and may hold spaces
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return not Path("/proc").is_dir()  # elsewhere: assume so


def _ends(pid: int, within: float = 10.0) -> bool:
    """The process ends on its own within ``within`` seconds (a finished worker is not waited for)."""
    deadline = time.monotonic() + within
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return _gone(pid)


def _prestarted_pid() -> int:
    (child,) = workers._PRESTARTED
    return child.pid


def _run(count: int, work: object) -> list[object]:
    return workers.run_forked(count, work, lambda i, reason: ("crash", i, reason), jobs=1, chunk_size=count)  # type: ignore[arg-type]


def test_the_prestarted_worker_does_the_work() -> None:
    workers.prestart(lambda: None)
    pid = _prestarted_pid()
    results = _run(4, _pid_and_square)
    assert results == [(pid, 0), (pid, 1), (pid, 4), (pid, 9)]
    assert not workers._PRESTARTED and _ends(pid)


def test_a_finished_worker_is_not_waited_for_and_is_reaped_by_the_next_run() -> None:
    """The run returns once every result is in; the worker's exit is collected later, leaving no zombie."""
    first = _run(2, _pid_and_square)
    pid = first[0][0]  # type: ignore[index]
    assert pid in workers._EXITING
    assert _ends(pid)  # told to stop, it ends on its own
    second = _run(1, _pid_and_square)
    assert pid not in workers._EXITING
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped: not even a zombie is left
    assert second[0][0] in workers._EXITING  # type: ignore[index]


def test_a_prestarted_worker_that_dies_before_its_work_is_replaced_by_a_fork() -> None:
    workers.prestart(lambda: os._exit(3))
    pid = _prestarted_pid()
    results = _run(3, _pid_and_square)
    assert [r[1] for r in results] == [0, 1, 4]  # type: ignore[index]
    assert all(r[0] not in (pid, os.getpid()) for r in results)  # type: ignore[index]  # a fresh fork did it


def test_a_crash_in_the_prestarted_workers_work_is_that_items_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRESTART_TEST_KILL_AT_2", "1")
    workers.prestart(lambda: None)
    results = _run(4, _pid_and_square)
    assert results[2] == ("crash", 2, "was killed by SIGKILL")
    assert [r[1] for i, r in enumerate(results) if i != 2] == [0, 1, 9]  # type: ignore[index]


def test_work_that_cannot_be_pickled_runs_in_a_fork_and_the_prestarted_worker_is_stopped() -> None:
    workers.prestart(lambda: None)
    pid = _prestarted_pid()
    assert [r[1] for r in _run(3, lambda i: (os.getpid(), i + 1))] == [1, 2, 3]  # type: ignore[index]
    assert _ends(pid)


def test_an_unused_prestarted_worker_is_killed() -> None:
    workers.prestart(lambda: None)
    pid = _prestarted_pid()
    workers.discard_prestarted()
    assert not workers._PRESTARTED and _gone(pid)


def test_a_single_core_never_prestarts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "_cores", lambda: 1)
    workers.prestart(lambda: None)
    assert not workers._PRESTARTED


def test_which_command_lines_prestart(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(PROMPT_APP)
    (tmp_path / "plain.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "prompt.j2").write_text("You are {{ role }}.")
    assert worth_prestarting([str(tmp_path / "plain.py"), str(tmp_path / "app.py")])
    assert not worth_prestarting([str(tmp_path / "plain.py")])  # nothing to analyse: no libcst
    assert not worth_prestarting([str(tmp_path / "prompt.j2")])
    assert not worth_prestarting([str(tmp_path / "missing.py")])
    assert not worth_prestarting(["-"])
    assert not worth_prestarting(None)


def test_a_one_file_check_reports_the_same_with_and_without_the_prestarted_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "app.py").write_text(PROMPT_APP)
    args = ["check", "--no-cache", "--output-format", "json", "app.py"]
    with_it = run_cli(args, tmp_path)
    monkeypatch.setenv("PREFIXLINT_NO_PRESTART", "1")
    without = run_cli(args, tmp_path)
    assert with_it.returncode == without.returncode == 1, with_it.stderr
    assert with_it.stdout == without.stdout and with_it.stderr == without.stderr
    assert "PFX101" in {f["code"] for f in json.loads(with_it.stdout)}


def test_the_prestarted_worker_leaves_with_its_parent(tmp_path: Path) -> None:
    """A parent killed before it hands over the work leaves no worker behind (its pipe closes)."""
    (tmp_path / "app.py").write_text(PROMPT_APP)
    script = (
        "import os, sys\n"
        "from prefixlint.lint import workers\n"
        "from prefixlint.lint.prestart import warm\n"
        "workers._cores = lambda: 2\n"
        "workers.prestart(warm)\n"
        "print(workers._PRESTARTED[0].pid, flush=True)\n"
        "os._exit(0)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-c", script]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True, env=env)
    pid = int(proc.stdout)  # run() returned: the worker, which shared stdout, has closed it
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:  # it may still be on its way out
        time.sleep(0.05)
    assert _gone(pid)


_LAUNCH = """
import json, sys
from prefixlint.lint import workers
workers._cores = lambda: 2
forks = []
real_fork = workers._fork
def spy(body, inherited=()):
    child = real_fork(body, inherited)
    forks.append([child.pid, "prefixlint.commands.check_run" in sys.modules])
    return child
workers._fork = spy
from prefixlint import cli
code = cli._run(sys.argv[1:])
print(json.dumps({"code": code, "forks": forks, "left": len(workers._PRESTARTED)}), flush=True)
"""


def _launch(tmp_path: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PREFIXLINT_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PREFIXLINT_NO_PRESTART", None)
    cmd = [sys.executable, "-c", _LAUNCH, *args]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_check_forks_its_worker_before_the_check_command_is_imported(tmp_path: Path) -> None:
    """The command line alone decides: the worker's imports overlap everything the check reads first."""
    (tmp_path / "app.py").write_text(PROMPT_APP)
    got = _launch(tmp_path, "check", "--no-cache", "--quiet", "app.py")
    assert got["code"] == 1
    ((pid, check_run_imported),) = got["forks"]  # the prestarted worker did the work: no second fork
    assert not check_run_imported
    assert _ends(pid)  # not waited for once its results are in: it ends on its own


def test_a_check_that_stops_on_a_configuration_error_kills_the_worker_it_forked(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(PROMPT_APP)
    (tmp_path / "broken.toml").write_text("[tool.prefixlint\n")
    got = _launch(tmp_path, "check", "--no-cache", "--config", "broken.toml", "app.py")
    assert got["code"] == 2
    ((pid, _),) = got["forks"]
    assert got["left"] == 0
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)
