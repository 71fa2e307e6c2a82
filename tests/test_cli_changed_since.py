"""``--changed-since``: file names git quotes, and a current directory outside the repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_support import invoke

from prefixlint.lint.gitdiff import changed_lines, unquote

UNUSED = "x = 1  # prefixlint: ignore[PFX001]\n"  # an unused suppression: a PFX900 finding on line 1


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _repo(root: Path, names: list[str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / name).write_text("a = 0\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "init")
    for name in names:
        (root / name).write_text("a = 0\n" + UNUSED)


NAMES = ["ünïcode.py", "spa ce.py", "tab\tname.py", 'quo"te.py', "back\\slash.py", "日本.py"]


@pytest.mark.parametrize("quote_path", ["true", "false"])
def test_findings_in_files_whose_names_git_quotes_are_kept(tmp_path: Path, quote_path: str) -> None:
    _repo(tmp_path, NAMES)
    _git(tmp_path, "config", "core.quotePath", quote_path)
    _git(tmp_path, "config", "diff.mnemonicPrefix", "true")  # w/ and i/ instead of a/ and b/
    changed = changed_lines("HEAD", [tmp_path])
    assert {Path(p).name: lines for p, lines in changed.items()} == {n: {2} for n in NAMES}
    code, out, _ = invoke(
        ["check", "--no-cache", "--changed-since", "HEAD", "--output-format", "concise"], tmp_path
    )
    assert code == 1
    for name in NAMES:
        assert f"{name}:2:8: PFX900" in out, name


def test_untracked_files_with_odd_names_count_in_full(tmp_path: Path) -> None:
    _repo(tmp_path, ["a.py"])
    (tmp_path / "nëw\tfile.py").write_text(UNUSED)
    changed = changed_lines("HEAD", [tmp_path])
    assert changed[str((tmp_path / "nëw\tfile.py").resolve())] == {1, 2}


def test_changed_since_works_from_outside_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _repo(repo, ["app.py"])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    args = ["check", "--no-cache", "--changed-since", "HEAD", "--output-format", "concise"]
    code, out, err = invoke([*args, str(repo / "app.py")], outside)
    assert code == 1, err
    assert "app.py:2:8: PFX900" in out


def test_changed_since_spans_two_repositories(tmp_path: Path) -> None:
    _repo(tmp_path / "one", ["a.py"])
    _repo(tmp_path / "two", ["b.py"])
    changed = changed_lines("HEAD", [tmp_path / "one", tmp_path / "two" / "b.py"])
    assert sorted(Path(p).name for p in changed) == ["a.py", "b.py"]


def test_path_outside_any_repository_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(UNUSED)
    code, out, err = invoke(["check", "--changed-since", "HEAD", "a.py"], tmp_path)
    assert code == 2 and out == ""
    assert "--changed-since HEAD:" in err and "not a git repository" in err.lower()


@pytest.mark.parametrize(
    ("quoted", "name"),
    [
        ('"b/\\303\\274.py"', "b/ü.py"),
        ('"a\\tb\\"c\\\\d"', 'a\tb"c\\d'),
        ("plain.py", "plain.py"),
        ('"b/new\\nline.py"', "b/new\nline.py"),
    ],
)
def test_unquote_reverses_gits_c_style_quoting(quoted: str, name: str) -> None:
    assert unquote(quoted) == name
