"""One glob dialect for the whole config: gitignore patterns, relative to the config's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefixlint.analysis.templates import template_style_for
from prefixlint.lint.checker import file_kind, path_ignores
from prefixlint.lint.config import SettingsResolver
from prefixlint.lint.discover import discover
from prefixlint.lint.payload_files import payload_glob_matches
from prefixlint.model.globs import glob_match
from prefixlint.model.settings import Settings

# (glob, path relative to the config's folder, matches)
DIALECT = [
    ("*.txt", "a.txt", True),
    ("*.txt", "deep/er/a.txt", True),  # no slash: a name at any depth
    ("prompts/*.txt", "prompts/a.txt", True),
    ("prompts/*.txt", "app/prompts/a.txt", False),  # a slash anchors at the config's folder
    ("prompts/*.txt", "prompts/sub/a.txt", False),  # `*` stays within one folder
    ("**/prompts/*.txt", "app/prompts/a.txt", True),
    ("**/prompts/*.txt", "prompts/a.txt", True),
    ("prompts/**", "prompts/sub/a.txt", True),
    ("prompts/", "prompts/sub/a.txt", True),  # a folder: everything under it
    ("/top.txt", "top.txt", True),
    ("/top.txt", "sub/top.txt", False),
    ("./prompts/*.txt", "prompts/a.txt", True),  # a leading ./ is dropped
    ("a?.txt", "ab.txt", True),
    ("[ab].txt", "b.txt", True),
    ("*.TXT", "a.txt", False),  # case matters
]


@pytest.mark.parametrize(("glob", "rel", "expected"), DIALECT)
def test_the_dialect(glob: str, rel: str, expected: bool, tmp_path: Path) -> None:
    assert glob_match([glob], str(tmp_path / rel), str(tmp_path)) is expected


def test_negation_re_includes(tmp_path: Path) -> None:
    globs = ["*.txt", "!keep.txt"]
    assert glob_match(globs, str(tmp_path / "x.txt"), str(tmp_path))
    assert not glob_match(globs, str(tmp_path / "keep.txt"), str(tmp_path))


def test_outside_the_config_folder_the_name_is_matched(tmp_path: Path) -> None:
    assert glob_match(["*.txt"], "/elsewhere/a.txt", str(tmp_path))
    assert not glob_match(["prompts/*.txt"], "/elsewhere/prompts/a.txt", str(tmp_path))


@pytest.mark.parametrize(("glob", "rel", "expected"), DIALECT)
def test_every_config_glob_reads_the_same(glob: str, rel: str, expected: bool, tmp_path: Path) -> None:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x = 1  # prefixlint: ignore[PFX001]\n")
    (tmp_path / "pyproject.toml").write_text("[tool.prefixlint]\n")

    def settings(**kw: object) -> Settings:
        s = Settings.model_validate(kw)
        s.root = str(tmp_path)
        return s

    full = str(path)
    assert (template_style_for(path, settings(**{"plain-prompt-globs": [glob]})) == "plain") is expected
    assert (template_style_for(path, settings(**{"template-globs": [glob]})) is not None) is expected
    assert (file_kind(full, settings(**{"template-globs": [glob]})) == "template") is expected
    assert (path_ignores(full, settings(**{"per-file-ignores": {glob: ["PFX9"]}})) == ["PFX9"]) is expected
    assert payload_glob_matches(full, settings(**{"payload-globs": [glob]})) is expected
    # exclude: discovery walks the folder (which reads every .txt as a prompt) and leaves the match out
    walking = settings(exclude=[glob], **{"plain-prompt-globs": ["*.txt"]})

    class Fixed(SettingsResolver):
        def for_path(self, p: Path) -> Settings:
            return walking

    walked = {Path(t.path) for t in discover([tmp_path], Fixed())}
    assert (path not in walked) is expected
