"""Placeholder styles: str.format, plain prompt files, string.Template, printf and mustache."""

from __future__ import annotations

import pytest

from prefixlint.analysis.templates import Binding, render_segments
from prefixlint.model.layout import DynamicKind, Section, SourceLocation, Timing


def render(text: str, style: str, **kw):
    kw.setdefault("path", "p.txt")
    return render_segments(text, style=style, **kw)  # type: ignore[arg-type]


def shape(result):
    return [(s.static, s.text if s.static else s.kind) for s in result.segments]


def test_format_placeholders_escapes_and_locations():
    r = render("Today is {today}.\nKeep {{braces}} and {user.name!r:>10} {0} {1}", "format")
    assert shape(r) == [
        (True, "Today is "),
        (False, DynamicKind.TIMESTAMP),
        (True, ".\nKeep {braces} and "),
        (False, DynamicKind.USER_IDENTITY),
        (True, " "),
        (False, DynamicKind.UNKNOWN),
        (True, " "),
        (False, DynamicKind.UNKNOWN),
    ]
    today, user, zero, auto = [s for s in r.segments if s.dynamic]
    assert today.location == SourceLocation("p.txt", 1, 9, 1, 16) and today.text == "{today}"
    assert user.location == SourceLocation("p.txt", 2, 20, 2, 37) and user.label == "user.name"
    assert zero.label == "0" and auto.label == "1"
    assert [s.label for s in render("{} and {}", "format").segments if s.dynamic] == ["0", "1"]


def test_format_json_examples_are_not_placeholders():
    r = render('Reply as JSON like {"answer": "...", "sources": []} or { } for {query}', "format")
    dyn = [s for s in r.segments if s.dynamic]
    assert [s.kind for s in dyn] == [DynamicKind.USER_INPUT]
    assert r.segments[0].text.startswith('Reply as JSON like {"answer"')


def test_format_positional_bindings_and_nested_spec():
    r = render(
        "{0} {width_note:{width}}",
        "format",
        bindings={
            "0": Binding(static=True, text="Zed"),
            "width": Binding(static=False, kind=DynamicKind.RANDOM),
        },
    )
    assert r.segments[0].static and r.segments[0].text == "Zed "
    assert r.segments[1].kind is DynamicKind.RANDOM


def test_plain_files_take_single_and_double_braces_but_not_json():
    r = render('Hi {{ user_name }} / {question}\n{"a": {"b": 1}} {{"x": 2}}', "plain")
    assert shape(r) == [
        (True, "Hi "),
        (False, DynamicKind.USER_IDENTITY),
        (True, " / "),
        (False, DynamicKind.USER_INPUT),
        (True, '\n{"a": {"b": 1}} {{"x": 2}}'),
    ]
    assert r.segments[1].location == SourceLocation("p.txt", 1, 3, 1, 18)


def test_unclosed_front_matter_leaves_a_plain_file_plain():
    res = render_segments("---\n{today}", style="plain", path="p.prompt")
    assert [(s.static, s.label) for s in res.segments] == [(True, ""), (False, "today")]
    assert res.segments[1].location == SourceLocation("p.prompt", 2, 0, 2, 7)


def test_dollar_templates():
    r = render("Hello $user_name, ${today}! Cost: $$5, lone $ sign, $9", "dollar")
    assert shape(r) == [
        (True, "Hello "),
        (False, DynamicKind.USER_IDENTITY),
        (True, ", "),
        (False, DynamicKind.TIMESTAMP),
        (True, "! Cost: $5, lone $ sign, $9"),
    ]
    assert r.segments[3].location == SourceLocation("p.txt", 1, 18, 1, 26)


def test_percent_templates():
    r = render("Now %(now)s for %s at 100%% %(docs)r", "percent")
    assert shape(r) == [
        (True, "Now "),
        (False, DynamicKind.TIMESTAMP),
        (True, " for "),
        (False, DynamicKind.UNKNOWN),
        (True, " at 100% "),
        (False, DynamicKind.RETRIEVED_CONTEXT),
    ]
    assert r.segments[3].label == "0"


def test_mustache_sections_comments_and_dot():
    text = (
        "{{! a comment about now }}Hi {{user_name}}\n{{#docs}}- {{.}} {{title}}\n{{/docs}}"
        "{{^docs}}none{{/docs}}{{{raw_html}}}"
    )
    r = render(text, "mustache")
    assert shape(r) == [
        (True, "Hi "),
        (False, DynamicKind.USER_IDENTITY),
        (True, "\n"),
        (True, "- "),
        (False, DynamicKind.RETRIEVED_CONTEXT),
        (True, " "),
        (False, DynamicKind.RETRIEVED_CONTEXT),
        (True, "\n"),
        (True, "none"),
        (False, DynamicKind.UNKNOWN),
    ]
    assert r.segments[3].repeated and r.segments[3].conditional
    assert r.segments[8].conditional and not r.segments[8].repeated
    assert r.segments[1].location == SourceLocation("p.txt", 1, 29, 1, 42)


def test_mustache_handlebars_helpers_and_delimiters():
    text = "{{#if vip}}V{{/if}}{{#each docs}}{{this}}{{/each}}{{=<% %>=}}<% today %> {{literal}}"
    r = render(text, "mustache")
    assert shape(r) == [
        (True, "V"),
        (False, DynamicKind.RETRIEVED_CONTEXT),
        (False, DynamicKind.TIMESTAMP),
        (True, " {{literal}}"),
    ]
    assert r.segments[0].conditional and not r.segments[0].repeated
    assert r.segments[1].repeated


@pytest.mark.parametrize("style", ["format", "plain", "mustache", "dollar", "percent"])
def test_embedded_offsets_every_style(style: str):
    ph = {
        "format": "{today}",
        "plain": "{today}",
        "mustache": "{{today}}",
        "dollar": "$today",
        "percent": "%(today)s",
    }[style]
    r = render(f"AB {ph}\nC {ph}", style, path="app.py", line_offset=4, col_offset=10)
    first, second = [s for s in r.segments if s.dynamic]
    assert (first.location.line, first.location.col) == (5, 13)
    assert (first.location.end_line, first.location.end_col) == (5, 13 + len(ph))
    assert (second.location.line, second.location.col) == (6, 2)
    assert r.segments[0].location == SourceLocation("app.py", 5, 10)


def test_section_role_and_message_index_are_applied():
    r = render("{question} please", "format", section=Section.MESSAGES, role="user", message_index=3)
    assert {(s.section, s.role, s.message_index) for s in r.segments} == {(Section.MESSAGES, "user", 3)}


def test_process_timing_from_binding_is_kept():
    r = render(
        "{started}",
        "format",
        bindings={"started": Binding(static=False, kind=DynamicKind.TIMESTAMP, timing=Timing.PROCESS)},
    )
    assert r.segments[0].timing is Timing.PROCESS


def test_unknown_style_is_rejected():
    with pytest.raises(ValueError, match="unknown template style"):
        render("x", "handlebars")


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        ('{{formatDate today "short"}}', DynamicKind.TIMESTAMP),
        ("{{truncate user_name length=10}}", DynamicKind.USER_IDENTITY),
        ('{{pick "docs" style=today}}', None),
    ],
)
def test_handlebars_helper_call_is_classified_by_its_positional_arguments(call: str, kind) -> None:
    """``{{helper arg "text" key=value}}``: the value is what its unquoted positional arguments are;
    quoted strings and ``key=value`` options are fixed text (a helper with none of them: static)."""
    r = render(f"A {call} B", "mustache")
    if kind is None:
        assert shape(r) == [(True, "A  B")]
    else:
        assert shape(r) == [(True, "A "), (False, kind), (True, " B")]
