"""Errors that a step survives are said: a warning or a debug log line, never silence."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from prefixlint.model.settings import Settings


def test_prefilter_without_plugins_lets_every_file_through_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import prefixlint.plugins
    from prefixlint.lint.prefilter import _prefilter, may_build_prompts

    def broken() -> None:
        raise RuntimeError("entry points unreadable")

    monkeypatch.setattr(prefixlint.plugins, "load_plugins", broken)
    _prefilter.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="prefixlint.lint.prefilter"):
            assert may_build_prompts(b"x = 1\n", Settings())  # not skipped: it might hold a plugin's sink
        assert "cannot read the plugins (entry points unreadable)" in caplog.text
    finally:
        _prefilter.cache_clear()


def test_an_unparsable_project_module_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from prefixlint.analysis.python import ProjectContext

    (tmp_path / "broken.py").write_text("def (:\n")
    project = ProjectContext(tmp_path, Settings())
    with caplog.at_level(logging.DEBUG, logger="prefixlint.analysis.python.project"):
        assert project.load(tmp_path / "broken.py") is None
        assert project.load(tmp_path / "missing.py") is None
    assert "broken.py not indexed: parser error" in caplog.text
    assert "missing.py not indexed: Cannot read file" in caplog.text


def test_template_suppressions_the_analyzer_cannot_read_are_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import prefixlint.analysis.templates as templates
    from prefixlint.lint.checker import _merge_template_suppressions
    from prefixlint.lint.suppressions import parse_suppressions

    def broken(text: str, style: str) -> dict:
        raise ValueError("lexer gave up")

    monkeypatch.setattr(templates, "template_suppressions", broken)
    text = "Hi {{ name }} {# prefixlint: ignore[PFX101] #}\n"
    table = parse_suppressions("t.j2", text, "template")
    with caplog.at_level(logging.DEBUG, logger="prefixlint.lint.checker"):
        _merge_template_suppressions(table, text, "jinja")
    assert (
        "template suppressions of t.j2 not read by the analyzer: ValueError('lexer gave up')" in caplog.text
    )
    assert [d.line for d in table.directives] == [1]  # the line scan's reading still applies
