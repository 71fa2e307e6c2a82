"""What older code and older caches still get: moved import paths, and caches ignored cleanly."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from prefixlint import __version__
from prefixlint.lint.result_cache import LintCache, code_fingerprint


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        ("prefixlint.testing_rules", "prefixlint.testing.rules", "check_example"),
        ("prefixlint.cachemodel", "prefixlint.model.prefix_cache", "CacheModel"),
        ("prefixlint.layout", "prefixlint.model.layout", "Layout"),
        ("prefixlint.tokens", "prefixlint.model.tokens", "get_tokenizer"),
        ("prefixlint.providers", "prefixlint.model.providers", "get_provider"),
        ("prefixlint.diagnostics", "prefixlint.model.findings", "Finding"),
        ("prefixlint.edits", "prefixlint.model.edits", "Fix"),
        ("prefixlint.config", "prefixlint.model.settings", "Settings"),
        ("prefixlint.config", "prefixlint.lint.config", "ConfigError"),
    ],
)
def test_a_moved_module_still_imports_with_a_deprecation_warning(old: str, new: str, name: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to "):
        legacy = importlib.import_module(old)
    assert getattr(legacy, name) is getattr(importlib.import_module(new), name)


def test_documented_import_paths_need_no_shim() -> None:
    from prefixlint.plugins import ENTRY_POINT_GROUP, Plugin, SinkSpec  # noqa: F401
    from prefixlint.rules.base import Example, Rule  # noqa: F401
    from prefixlint.sdk import wrap  # noqa: F401
    from prefixlint.testing import assert_shared_prefix, shared_prefix  # noqa: F401

    assert ENTRY_POINT_GROUP == "prefixlint.plugins"


def _write_results(directory: Path, version: str, code: str, files: object) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.json").write_text(json.dumps({"version": version, "code": code, "files": files}))


def test_results_written_by_another_version_are_ignored(tmp_path: Path) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 1\n")
    st = source.stat()
    key = [st.st_mtime_ns, st.st_size]
    entry = {str(source): {"key": key, "deps": {}, "seen": 0, "result": {"stale": 1}}}
    here = tmp_path / "cache" / __version__ / "fp"
    # The same directory, but written by another release or another build of the code: not read.
    _write_results(here, "0.0.0-old", code_fingerprint(), entry)
    assert LintCache.open(tmp_path / "cache", "fp").get(str(source)) is None
    _write_results(here, __version__, "0.0.0+other-code", entry)
    assert LintCache.open(tmp_path / "cache", "fp").get(str(source)) is None
    # A malformed file is ignored too, and the next save replaces it whole.
    _write_results(here, __version__, code_fingerprint(), ["not", "a", "table"])
    cache = LintCache.open(tmp_path / "cache", "fp")
    assert cache.get(str(source)) is None
    cache.put(str(source), {"findings": []}, set())
    cache.save()
    assert LintCache.open(tmp_path / "cache", "fp").get(str(source)) == {"findings": []}
    # The current version and code read their own entry back.
    _write_results(here, __version__, code_fingerprint(), entry)
    assert LintCache.open(tmp_path / "cache", "fp").get(str(source)) == {"stale": 1}


def test_building_an_encoding_patches_nothing_other_threads_see(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The SDK runs inside user applications: loading ranks must not swap tiktoken's loader globally."""
    import types

    from tiktoken_ext import openai_public

    from prefixlint.model import tokens

    writes: list[str] = []

    class RecordingModule(types.ModuleType):
        def __setattr__(self, name: str, value: object) -> None:
            writes.append(name)
            super().__setattr__(name, value)

    monkeypatch.setenv("PREFIXLINT_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(openai_public, "__class__", RecordingModule)
    writes.clear()
    enc = tokens._load_official("cl100k_base")
    assert enc is not None and enc.encode("hello world") == [15339, 1917]
    assert writes == []
