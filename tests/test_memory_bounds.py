"""A long-lived process (an editor integration, a test session) does not grow with the files it checks."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

from cli_support import needs_analyzer

import prefixlint.lint.checker as checker
from prefixlint.lint.checker import check_source
from prefixlint.lint.config import (
    _FINGERPRINTS,
    _MAX_FINGERPRINTS,
    SettingsResolver,
    fingerprint,
    settings_for,
)
from prefixlint.lint.discover import discover
from prefixlint.lint.runner import RunOptions, check_targets
from prefixlint.model.settings import Settings

APP = (
    "import openai\n"
    "from helpers import RULES, build\n\n"
    "def ask(q):\n"
    "    system = build(q) + RULES\n"
    '    return openai.OpenAI().chat.completions.create(model="gpt-4o", messages=[{"role": "system", '
    '"content": system}])\n'
)
HELPERS = (
    'RULES = "Follow the rules. " * 50\n'
    + "".join(f"def f{i}(x):\n    return str(x) + 'y{i}'\n" for i in range(120))
    + "def build(q):\n    return 'Hi ' + q\n"
)


def _check_a_new_project(base: Path, i: int) -> None:
    root = base / f"p{i}"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.prefixlint]\n")
    (root / "helpers.py").write_text(HELPERS)
    (root / "app.py").write_text(APP)
    check_source(str(root / "app.py"), None, settings_for(root / "app.py"), "python")


@needs_analyzer
def test_checking_many_projects_in_one_process_keeps_memory_flat(tmp_path: Path) -> None:
    for i in range(3):  # imports, tokenizer and memo warm-up
        _check_a_new_project(tmp_path, i)
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(3, 9):
            _check_a_new_project(tmp_path, i)
        gc.collect()
        after_six = tracemalloc.get_traced_memory()[0]
        for i in range(9, 25):
            _check_a_new_project(tmp_path, i)
        gc.collect()
        after_twenty_two = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # Each project index holds about 0.7 MB here; 16 more projects kept would be about 11 MB.
    assert after_twenty_two - after_six < 2_000_000, (after_six, after_twenty_two)
    assert len(checker._PROJECTS) <= checker.MAX_PROJECTS


@needs_analyzer
def test_the_per_node_memo_is_bounded_and_cleared_with_the_projects(tmp_path: Path) -> None:
    from prefixlint.analysis.python.collect import evaluated

    _check_a_new_project(tmp_path, 0)
    assert 0 < evaluated.cache_info().currsize <= evaluated.cache_info().maxsize
    checker.forget_projects()
    assert evaluated.cache_info().currsize == 0 and not checker._PROJECTS


@needs_analyzer
def test_a_run_in_this_process_leaves_no_project_behind(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "app.py").write_text(APP)
    targets = discover([tmp_path], SettingsResolver())
    check_targets(targets, RunOptions(jobs=1, use_cache=False, isolate=False))
    assert not checker._PROJECTS


def test_settings_fingerprints_are_bounded() -> None:
    kept = [Settings() for _ in range(3 * _MAX_FINGERPRINTS)]
    for s in kept:
        fingerprint(s)
    assert len(_FINGERPRINTS) <= _MAX_FINGERPRINTS
    assert fingerprint(kept[0]) == kept[0].fingerprint()  # an evicted one is computed again


def test_prefilter_is_built_once_per_set_of_sinks() -> None:
    from prefixlint.lint.prefilter import _prefilter, prefilter_for

    a = Settings(sinks=[{"call": "myllm.ask"}])
    b = Settings(sinks=[{"call": "myllm.ask"}])
    assert prefilter_for(a) is prefilter_for(b)
    assert _prefilter.cache_info().maxsize is not None
