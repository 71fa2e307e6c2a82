"""``prefixlint.plugins.entry_points`` reads ``entry_points.txt`` as importlib.metadata does: the
same entries of a group, the first distribution of a name winning, ``module:attr`` loaded."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from prefixlint.plugins.entry_points import entry_points

GROUP = "prefixlint.plugins"


def _dist(site: Path, folder: str, name: str, version: str, entry_points_txt: str | None) -> None:
    info = site / folder
    info.mkdir(parents=True)
    meta = "PKG-INFO" if folder.endswith(".egg-info") else "METADATA"
    (info / meta).write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nLong text: no\n")
    if entry_points_txt is not None:
        (info / "entry_points.txt").write_text(entry_points_txt)


@pytest.fixture
def sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(
        first,
        "alpha_plugin-1.2.dist-info",
        "alpha-plugin",
        "1.2",
        "# generated\n[console_scripts]\nalpha = alpha_plugin:main\n\n"
        f"[{GROUP}]\nalpha = alpha_plugin:PLUGIN\n# a comment\n"
        "beta=alpha_plugin.extra:Holder.PLUGIN [fast]\n",
    )
    _dist(first, "no_entry_points-0.1.dist-info", "no-entry-points", "0.1", None)
    _dist(first, "Old.Egg-3.0-py3.11.egg-info", "Old.Egg", "3.0", f"[{GROUP}]\nold = old_egg:PLUGIN\n")
    # a second copy of alpha further down the path: ignored, as importlib.metadata ignores it
    _dist(second, "Alpha.Plugin-9.9.dist-info", "alpha-plugin", "9.9", f"[{GROUP}]\nshadowed = x:Y\n")
    (tmp_path / "not-a-folder.zip").write_bytes(b"PK")
    (first / "alpha_plugin").mkdir()
    (first / "alpha_plugin" / "__init__.py").write_text("PLUGIN = 'the alpha plugin'\n")
    (first / "alpha_plugin" / "extra.py").write_text("class Holder:\n    PLUGIN = 'held'\n")
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "not-a-folder.zip"), str(second)])
    return first, second


def test_the_entries_of_a_group_match_importlib_metadata(sites: tuple[Path, Path]) -> None:
    ours = sorted((ep.name, ep.value) for ep in entry_points(GROUP))
    theirs = sorted((ep.name, ep.value) for ep in importlib.metadata.entry_points(group=GROUP))
    assert ours == theirs
    assert ours == [
        ("alpha", "alpha_plugin:PLUGIN"),
        ("beta", "alpha_plugin.extra:Holder.PLUGIN [fast]"),
        ("old", "old_egg:PLUGIN"),
    ]


def test_each_entry_names_its_distribution_and_version(sites: tuple[Path, Path]) -> None:
    assert {ep.name: ep.dist for ep in entry_points(GROUP)} == {
        "alpha": "alpha-plugin==1.2",
        "beta": "alpha-plugin==1.2",
        "old": "Old.Egg==3.0",
    }


def test_load_imports_the_module_and_follows_the_attributes(sites: tuple[Path, Path]) -> None:
    by_name = {ep.name: ep for ep in entry_points(GROUP)}
    try:
        assert by_name["alpha"].load() == "the alpha plugin"
        assert by_name["beta"].load() == "held"
        with pytest.raises(ImportError):
            by_name["old"].load()
    finally:
        for name in ("alpha_plugin", "alpha_plugin.extra"):
            sys.modules.pop(name, None)


def test_prefixlints_own_plugins_are_found_on_the_real_path() -> None:
    ours = sorted((ep.name, ep.value) for ep in entry_points(GROUP))
    theirs = sorted((ep.name, ep.value) for ep in importlib.metadata.entry_points(group=GROUP))
    assert ours == theirs
