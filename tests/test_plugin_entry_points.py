"""A third-party plugin installed as a distribution is found through the ``prefixlint.plugins``
entry-point group, teaches the analyzer its sink, and is part of the lint cache key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PLUGIN_MODULE = """
from prefixlint.plugins import Plugin, SinkSpec

PLUGIN = Plugin(
    name="mylib",
    sinks=(SinkSpec(name="mylib chat", calls=("mylib.Client.chat",), provider="openai",
                    system=("preamble",), prompt=("text",)),),
)
"""

APP = """
from datetime import datetime

import mylib

RULES = "Follow the house policy carefully and cite every source you use. " * 40


def ask(q):
    return mylib.Client().chat(preamble=f"Now: {datetime.now()}\\n" + RULES, text=q)
"""


def _install(site: Path, version: str) -> None:
    """Lay out ``mylib_prefixlint`` as an installed distribution under ``site``."""
    site.mkdir(exist_ok=True)
    (site / "mylib_prefixlint.py").write_text(PLUGIN_MODULE)
    for old in site.glob("mylib_prefixlint-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    info = site / f"mylib_prefixlint-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: mylib-prefixlint\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[prefixlint.plugins]\nmylib = mylib_prefixlint:PLUGIN\n")


def _run(args: list[str], cwd: Path, site: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _codes(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [f["code"] for f in json.loads(proc.stdout)]


def test_installed_plugin_adds_its_sink(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text(APP)
    site = tmp_path / "site"
    _install(site, "1.0")
    # the app's prompt is below the provider minimum (informational findings): every finding counts here
    args = ["-m", "prefixlint", "check", "--no-cache", "--min-impact-tokens", "0", "--output-format", "json"]
    args.append("app.py")
    without = _run(args, project, None)
    assert without.returncode == 0 and _codes(without) == []
    with_plugin = _run(args, project, site)
    assert with_plugin.returncode == 1, with_plugin.stderr
    assert "PFX101" in _codes(with_plugin)


def test_plugin_version_is_part_of_the_cache_key(tmp_path: Path) -> None:
    site = tmp_path / "site"
    probe = [
        "-c",
        "from prefixlint.lint.result_cache import code_fingerprint, third_party_plugins as t\n"
        "print(t(), code_fingerprint())",
    ]
    _install(site, "1.0")
    first = _run(probe, tmp_path, site).stdout.split()
    _install(site, "2.0")
    second = _run(probe, tmp_path, site).stdout.split()
    bare = _run(probe, tmp_path, None).stdout.split()
    assert "mylib=mylib-prefixlint==1.0" in " ".join(first)
    assert "mylib=mylib-prefixlint==2.0" in " ".join(second)
    assert len({first[-1], second[-1], bare[-1]}) == 3
