"""Template analysis details that hand-made changes to the analyzer (mutants) went through unseen."""

from __future__ import annotations

from pathlib import Path

from prefixlint.analysis.templates import analyze_template_file, find_template, render_segments
from prefixlint.model.layout import DynamicKind, Timing
from prefixlint.model.settings import Settings


def shape(text: str, style: str = "jinja", path: str = "t.j2") -> list[tuple[bool, object]]:
    r = render_segments(text, style=style, path=path)
    assert r.errors == []
    return [(s.static, s.text if s.static else s.kind) for s in r.segments]


def test_a_call_the_catalog_does_not_know_takes_the_kind_of_its_arguments() -> None:
    assert shape("Hello {{ format_name(user_name) }}.") == [
        (True, "Hello "),
        (False, DynamicKind.USER_IDENTITY),
        (True, "."),
    ]
    r = render_segments("Q: {{ shorten(question) }}", style="jinja", path="t.j2")
    assert r.segments[-1].label == "question"


def test_a_captured_block_of_static_text_is_static() -> None:
    assert shape("{% set greeting %}Welcome aboard{% endset %}{{ greeting }}, {{ user_name }}") == [
        (True, "Welcome aboard, "),
        (False, DynamicKind.USER_IDENTITY),
    ]


def test_an_include_of_a_computed_name_keeps_the_kind_of_the_name() -> None:
    (inc,) = render_segments("{% include 'hi_' ~ user_name ~ '.j2' %}", style="jinja", path="t.j2").segments
    assert (inc.static, inc.kind) == (False, DynamicKind.USER_IDENTITY)
    assert inc.label == "include of a computed name"
    (inc,) = render_segments("{% include 'day_' ~ now() ~ '.j2' %}", style="jinja", path="t.j2").segments
    assert inc.kind is DynamicKind.TIMESTAMP


def test_a_self_block_call_renders_the_block_and_nothing_for_the_call() -> None:
    expected = [
        (True, "Dear "),
        (False, DynamicKind.USER_IDENTITY),
        (True, "\nDear "),
        (False, DynamicKind.USER_IDENTITY),
    ]
    assert shape("{% block b %}Dear {{ user_name }}{% endblock %}\n{{ self.b() }}") == expected
    assert shape("{% block b %}Dear {{ user_name }}{% endblock %}\n{{ self.b() | upper }}") == expected
    assert shape("Hi {{ self.missing() }} end") == [(True, "Hi  end")]


def test_a_configuration_attribute_is_one_value_for_the_run() -> None:
    r = render_segments("Use at most {config.max_words} words. {question}", style="format", path="t.txt")
    words = r.segments[1]
    assert (words.static, words.text, words.kind, words.timing) == (
        False,
        "{config.max_words}",
        DynamicKind.UNKNOWN,
        Timing.PROCESS,
    )
    assert [s.static for s in r.segments] == [True, False, True, False]


def test_prompty_static_messages_each_get_their_own_index() -> None:
    text = "---\nname: x\n---\nsystem:\nYou are terse.\nuser:\nHi there.\n"
    text += "assistant:\nHello.\nuser:\n{{question}}"
    r = render_segments(text, style="prompty", path="x.prompty")
    assert [(s.text, s.role, s.message_index) for s in r.segments] == [
        ("You are terse.\n", "system", 0),
        ("Hi there.\n", "user", 1),
        ("Hello.\n", "assistant", 2),
        ("{{question}}", "user", 3),
    ]
    assert [s.is_last_user_message for s in r.segments] == [False, False, False, True]


def test_dotprompt_static_messages_each_get_their_own_index(tmp_path: Path) -> None:
    text = '---\nmodel: googleai/gemini-1.5-flash\n---\n{{role "system"}}\nBe terse.\n'
    text += '{{role "user"}}\nHello there.\n{{role "model"}}\nHi.\n{{role "user"}}\n{{question}}\n'
    (layout,) = analyze_template_file("chat.prompt", text, Settings(), tmp_path).layouts
    got = [(s.role, s.message_index) for s in layout.segments if s.text.strip()]
    assert got == [("system", 0), ("user", 1), ("model", 2), ("user", 3)]


def test_a_template_is_found_by_its_name_under_the_root_but_not_in_skipped_folders(tmp_path: Path) -> None:
    for rel in ("src/deep/card.j2", ".venv/lib/other.j2", "node_modules/pkg/other.j2"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    for root in (tmp_path, str(tmp_path)):  # the root as a path or as text
        assert find_template("card.j2", [], root) == (tmp_path / "src/deep/card.j2").resolve()
        assert find_template("other.j2", [], root) is None


def test_text_trimmed_by_whitespace_control_keeps_its_place() -> None:
    r = render_segments("Hello   {{- user_name }} and {{ question -}}   \n  bye", style="jinja", path="t.j2")
    assert [(s.static, s.text, s.location.line, s.location.col) for s in r.segments] == [
        (True, "Hello", 1, 0),
        (False, "{{- user_name }}", 1, 8),
        (True, " and ", 1, 24),
        (False, "{{ question -}}", 1, 29),
        (True, "bye", 2, 2),
    ]


def test_the_indexes_of_many_project_roots_stay_bounded(tmp_path: Path) -> None:
    """A long-lived process (an editor) that analyses many projects keeps a bounded number of file
    indexes and named-template tables, the most recent ones."""
    from prefixlint.analysis.templates import files, named

    roots = []
    for i in range(20):
        root = tmp_path / str(i)
        root.mkdir()
        (root / "prompts.yaml").write_text(f"t{i}:\n  template: |\n    Hi {{name}},\n    rule {i}.\n")
        roots.append(str(root))
    for root in roots:
        assert [t.name for t in named.named_templates(root)] == [f"t{roots.index(root)}"]
    assert named.named_templates.cache_info().currsize == 8
    assert files._index.cache_info().currsize == 16


def test_an_empty_prompty_message_takes_no_index() -> None:
    text = "---\nname: x\n---\nsystem:\nuser:\n{{question}}"
    r = render_segments(text, style="prompty", path="x.prompty")
    assert [(s.text, s.role, s.message_index) for s in r.segments] == [("{{question}}", "user", 0)]


def test_an_empty_template_has_no_segments() -> None:
    for style in ("literal", "plain", "format", "jinja"):
        assert render_segments("", style=style, path="t.txt").segments == [], style
