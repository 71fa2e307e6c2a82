"""What a prompty or dotprompt header says: provider, model and sample inputs; front matter that is
broken or never closed is an error at its line."""

from __future__ import annotations

import pytest

from prefixlint.analysis.templates.prompty import meta_from, split_front_matter
from prefixlint.analysis.templates.render import render_template


@pytest.mark.parametrize(
    ("model", "provider", "name"),
    [
        ("openai/gpt-4o", "openai", "gpt-4o"),
        ("claude-sonnet-4", "anthropic", "claude-sonnet-4"),
        ("llama-3", None, "llama-3"),
        ("o3-mini", "openai", "o3-mini"),
        (
            {"api": "chat", "configuration": {"type": "azure_openai", "azure_deployment": "dep"}},
            "azure",
            "dep",
        ),
        (
            {"configuration": {"type": "Anthropic", "model": "claude-x", "name": "other"}},
            "anthropic",
            "claude-x",
        ),
        ({"api_type": "openai", "name": "gpt-4.1"}, "openai", "gpt-4.1"),
        ({"configuration": "bad", "name": 7}, None, None),
        ({"configuration": {"type": "weird", "name": "n"}, "name": "outer"}, None, "n"),
        ({"configuration": {"type": "gemini"}, "name": "outer"}, "gemini", "outer"),
        (["not", "a", "model"], None, None),
    ],
)
def test_provider_and_model_from_the_header(model: object, provider: str | None, name: str | None) -> None:
    meta = meta_from({"model": model})
    assert (meta.provider, meta.model) == (provider, name)


def test_samples_from_the_header() -> None:
    data = {
        "sample": {"q": 1, "d": "x"},
        "inputs": {"q": {"sample": "no"}, "z": {"sample": 3}, "w": "str", "v": {"type": "string"}},
    }
    assert meta_from(data).samples == {"q": "1", "d": "x", "z": "3"}
    assert meta_from({"inputs": ["a"], "sample": "s"}).samples == {}
    assert meta_from({"inputs": {"a": {"sample": "only"}}}).samples == {"a": "only"}


def test_front_matter_is_split_from_the_body() -> None:
    fm = split_front_matter("---\nmodel: x\n---\nbody")
    assert (fm.data, fm.body, fm.body_line_offset, fm.error) == ({"model": "x"}, "body", 3, None)
    fm = split_front_matter("---\n- 1\n---\nb")
    assert (fm.data, fm.body, fm.body_line_offset, fm.error) == ({}, "b", 3, None)
    fm = split_front_matter("---\n---\nb")
    assert (fm.body, fm.body_line_offset) == ("b", 2)
    fm = split_front_matter("title: x\n\n  a: [\n---\nb")
    assert (fm.body, fm.body_line_offset, fm.error) == ("title: x\n\n  a: [\n---\nb", 0, None)


def test_broken_and_unclosed_front_matter_are_errors_at_their_line() -> None:
    result, meta = render_template(
        "---\nname: t\na: [\n---\nHi {{ question }}", style="prompty", path="p.prompty"
    )
    ((line, code, message),) = [(e.location.line, e.code, e.message) for e in result.errors]
    assert (line, code) == (3, "PFX001") and message.startswith("invalid YAML front matter: ")
    assert [s.location.line for s in result.segments if s.dynamic] == [5]
    result, _ = render_template("---\nmodel: gpt-4o\nHi {{ question }}", style="prompty", path="p.prompty")
    assert [(e.location.line, e.message) for e in result.errors] == [
        (1, "front matter opened with '---' is never closed")
    ]
    result, meta = render_template(
        "---\nmodel:\n  configuration:\n    type: anthropic\n    model: claude-x\nsample:\n  q: hi\n---\n"
        "system:\nRules.\nuser:\n{{ q }}",
        style="prompty",
        path="p.prompty",
    )
    assert (meta.provider, meta.model, meta.samples, result.errors) == (
        "anthropic",
        "claude-x",
        {"q": "hi"},
        [],
    )
    assert [(s.role, s.location.line) for s in result.segments if s.dynamic] == [("user", 12)]
