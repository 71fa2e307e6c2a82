"""Configuration: discovery by walking up, validation errors (exit 2), overrides and per-file ignores."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import invoke, use_analyzers

from prefixlint.lint.checker import path_ignores
from prefixlint.lint.config import ConfigError, SettingsResolver, apply_overrides, settings_for
from prefixlint.model.settings import Settings

NON_UTF8 = b"x = '\xff'\n"


def test_nearest_config_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.prefixlint]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n'
    )
    sub = tmp_path / "pkg" / "inner"
    sub.mkdir(parents=True)
    (tmp_path / "pkg" / "prefixlint.toml").write_text('ignore = ["PFX4"]\n')
    (sub / "a.py").write_text("x = 1\n")
    # pyproject without [tool.prefixlint] in between is skipped.
    (sub / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    resolver = SettingsResolver()
    s = resolver.for_path(sub / "a.py")
    assert s.ignore == ["PFX4"] and s.provider == "openai"
    assert s.root == str((tmp_path / "pkg").resolve())
    top = resolver.for_path(tmp_path / "a.py")
    assert top.provider == "anthropic"
    assert settings_for(sub / "a.py").ignore == ["PFX4"]


def test_overrides_extend_and_replace() -> None:
    base = Settings(select=["PFX1"], ignore=["PFX101"])
    base.root = "/x"
    out = apply_overrides(base, {"select": ["PFX2"], "ignore": ["PFX102"], "extend_select": ["PFX9"]})
    assert out.select == ["PFX2"] and out.ignore == ["PFX101", "PFX102"] and out.extend_select == ["PFX9"]
    assert out.root == "/x"
    with pytest.raises(ConfigError):
        apply_overrides(base, {"provider": "nosuchprovider"})


def test_per_file_ignores_globs(tmp_path: Path) -> None:
    s = Settings(**{"per-file-ignores": {"tests/**": ["PFX1"], "conftest.py": ["PFX4"]}})
    s.root = str(tmp_path)
    assert path_ignores(str(tmp_path / "tests" / "x" / "t.py"), s) == ["PFX1"]
    assert path_ignores(str(tmp_path / "a" / "conftest.py"), s) == ["PFX4"]
    assert path_ignores(str(tmp_path / "src" / "a.py"), s) == []


def test_per_file_ignores_apply_to_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_analyzers(monkeypatch)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.prefixlint]\nper-file-ignores = {"legacy/*" = ["PFX001"]}\n'
    )
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_bytes(NON_UTF8)
    (tmp_path / "new.py").write_bytes(NON_UTF8)
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "concise"], tmp_path)
    assert code == 1 and "new.py:1:6: PFX001" in out and "old.py" not in out


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('[tool.prefixlint]\nselect = "PFX1"\n', "select: Input should be a valid list"),
        ('[tool.prefixlint]\nprovider = "nope"\n', "unknown provider 'nope'"),
        ("[tool.prefixlint]\nno-such-key = 1\n", "no-such-key: Extra inputs are not permitted"),
        ("[tool.prefixlint\nselect = 1\n", "invalid TOML"),
        ("[tool.prefixlint]\nthresholds = {high = -1}\n", "thresholds.high"),
        ('[tool.prefixlint]\ndynamic-sources = [{pattern = "x", kind = "nope"}]\n', "unknown kind 'nope'"),
    ],
)
def test_bad_config_is_a_clear_error_with_exit_2(tmp_path: Path, toml: str, expected: str) -> None:
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "a.py").write_text("x = 1\n")
    code, out, err = invoke(["check", "a.py"], tmp_path)
    assert code == 2 and out == ""
    assert "pyproject.toml" in err and expected in err


def test_unknown_selector_in_config_or_cli_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    code, _, err = invoke(["check", "--select", "PFX9,XYZ9", "a.py"], tmp_path)
    assert code == 2 and "--select: unknown rule selector 'XYZ9'" in err
    (tmp_path / "prefixlint.toml").write_text('ignore = ["NOPE"]\n')
    code, _, err = invoke(["check", "a.py"], tmp_path)
    assert code == 2 and "unknown rule selector 'NOPE'" in err and str(tmp_path.resolve()) in err


def test_explicit_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_analyzers(monkeypatch)
    (tmp_path / "a.py").write_bytes(NON_UTF8)
    (tmp_path / "strict.toml").write_text('ignore = ["PFX001"]\n')
    code, _, _ = invoke(["check", "--no-cache", "a.py"], tmp_path)
    assert code == 1
    code, _, _ = invoke(["check", "--no-cache", "--config", "strict.toml", "a.py"], tmp_path)
    assert code == 0
    code, _, err = invoke(["check", "--config", "missing.toml", "a.py"], tmp_path)
    assert code == 2 and "missing.toml" in err


@pytest.mark.parametrize("explicit", [False, True])
def test_deprecated_thresholds_low_is_a_warning_once(tmp_path: Path, explicit: bool) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "prefixlint.toml").write_text("[thresholds]\nhigh = 900\nlow = 10\n")
    args = ["check", "--no-cache", *(["--config", "prefixlint.toml"] if explicit else []), "."]
    code, _, err = invoke(args, tmp_path)
    assert code == 0, err
    assert err.count("`thresholds.low` is deprecated and no longer read; use `min-impact-tokens`") == 1
    (tmp_path / "prefixlint.toml").write_text("[thresholds]\nhigh = 900\n")
    code, _, err = invoke(args, tmp_path)
    assert code == 0 and "deprecated" not in err
