"""The pre-commit hooks: the manifest's fields, and the real ``pre-commit`` binary running them.

Why ``repo: local`` with ``language: system``: a ``language: python`` hook (what users get from
``.pre-commit-hooks.yaml``, also through ``pre-commit try-repo``) makes pre-commit build a fresh
virtualenv and ``pip install`` this repository into it, which downloads hatchling and every dependency
from an index: that needs the network, which tests must not use. So the test takes the hook
definitions from the real ``.pre-commit-hooks.yaml`` (entry, args, ``types_or``, ``require_serial``)
and runs them with the real ``pre-commit`` binary against a temporary git repository, only swapping
the installed ``prefixlint`` command for ``python -m prefixlint`` of this checkout. pre-commit's own
file-type filtering, file passing and exit-code handling are exercised for real. The manifest itself
is validated with pre-commit's own schema (``pre_commit.clientlib.load_manifest``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cli_support import REPO

MANIFEST = REPO / ".pre-commit-hooks.yaml"
PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")


def hooks() -> dict[str, dict]:
    return {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text())}


def test_manifest_fields_and_schema() -> None:
    from pre_commit.clientlib import load_manifest

    loaded = {h["id"]: h for h in load_manifest(str(MANIFEST))}
    assert set(loaded) == {"prefixlint", "prefixlint-fix"}
    for hook in loaded.values():
        assert hook["language"] == "python"
        assert hook["require_serial"] is True
        assert {"python", "pyi", "jinja"} <= set(hook["types_or"])
        assert hook["entry"].startswith("prefixlint check")
        assert "--force-exclude" in hook["entry"]
    assert "--fix" in loaded["prefixlint-fix"]["entry"].split()
    assert "--fix" not in loaded["prefixlint"]["entry"].split()


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _make_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PRE_COMMIT_HOME": str(tmp_path / "pc-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"),
    }
    local_hooks = []
    for hook in hooks().values():
        entry = shlex.split(hook["entry"])
        assert entry[0] == "prefixlint"
        local_hooks.append(
            {
                "id": hook["id"],
                "name": hook["name"],
                "entry": shlex.join([sys.executable, "-m", "prefixlint", *entry[1:]]),
                "language": "system",
                "types_or": hook["types_or"],
                "require_serial": hook["require_serial"],
                "args": [*hook.get("args", []), "--no-cache"],
            }
        )
    config = {"repos": [{"repo": "local", "hooks": local_hooks}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    return repo, env


def _run(repo: Path, env: dict[str, str], hook: str) -> subprocess.CompletedProcess[str]:
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    return subprocess.run(
        [PRE_COMMIT, "run", hook, "--all-files", "--color", "never"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.mark.skipif(not Path(PRE_COMMIT).exists(), reason="pre-commit is in the dev extra")
def test_hook_fails_on_bad_file_and_passes_on_good_one(tmp_path: Path) -> None:
    repo, env = _make_repo(tmp_path)
    (repo / "good.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "README.md").write_text("# not linted\n")
    ok = _run(repo, env, "prefixlint")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "prefixlint" in ok.stdout and "Passed" in ok.stdout

    (repo / "bad.py").write_bytes(b"prompt = 'caf\xe9'\n")
    bad = _run(repo, env, "prefixlint")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout and "bad.py:1:" in bad.stdout and "PFX001" in bad.stdout

    (repo / "bad.py").unlink()
    (repo / "fixable.py").write_text("prompt = 1  # prefixlint: ignore[PFX001]\n")
    fixed = _run(repo, env, "prefixlint-fix")
    # pre-commit fails a hook that modifies files; the file now holds the fix.
    assert fixed.returncode == 1 and "files were modified by this hook" in fixed.stdout
    assert (repo / "fixable.py").read_text() == "prompt = 1\n"
    assert _run(repo, env, "prefixlint-fix").returncode == 0
