"""Placeholder styles other than Jinja: ``str.replace`` keys, mustache/handlebars sections, helpers,
delimiters and unclosed tags, and dotted ``format`` fields named by their root."""

from __future__ import annotations

from prefixlint.analysis.templates import Binding, render_segments
from prefixlint.model.layout import DynamicKind


def render(text: str, style: str, **kw) -> list[tuple]:
    result = render_segments(text, style=style, path="t.txt", **kw)
    return [
        (True, s.text)
        if s.static
        else (False, s.kind.value, s.label, s.text, (s.location.line, s.location.col, s.location.end_col))
        for s in result.segments
    ]


def test_replace_keys_are_exact_strings_longest_first() -> None:
    name = Binding(static=False, kind=DynamicKind.USER_IDENTITY, label="name")
    bindings = {"{{ user }}": name, "{{ user_id }}": Binding(static=True, text="42"), "": name}
    assert render(
        "Hi {{ user }}, {{user}} at {{ user_id }} and {{ user }}.", "literal", bindings=bindings
    ) == [
        (True, "Hi "),
        (False, "user_identity", "name", "{{ user }}", (1, 3, 13)),
        (True, ", {{user}} at 42 and "),
        (False, "user_identity", "name", "{{ user }}", (1, 45, 55)),
        (True, "."),
    ]
    assert render("{{ user }}{{ user }}", "literal", bindings={"{{ user }}": name}) == [
        (False, "user_identity", "name", "{{ user }}", (1, 0, 10)),
        (False, "user_identity", "name", "{{ user }}", (1, 10, 20)),
    ]
    assert render("Plain {x} text only", "literal") == [(True, "Plain {x} text only")]


def test_mustache_sections_give_their_value_to_dot_and_unbound_names() -> None:
    assert render("A {{#items}}{{.}} {{name}}{{/items}} {{ unclosed", "mustache") == [
        (True, "A "),
        (False, "unknown", "items", "{{.}}", (1, 12, 17)),
        (True, " "),
        (False, "unknown", "items", "{{name}}", (1, 18, 26)),
        (True, " {{ unclosed"),
    ]
    assert render("{{#each docs}}{{this.title}} {{this}}{{/each}}[{{this.x}}][{{.}}]", "mustache") == [
        (False, "retrieved_context", "docs", "{{this.title}}", (1, 14, 28)),
        (True, " "),
        (False, "retrieved_context", "docs", "{{this}}", (1, 29, 37)),
        (True, "[][]"),
    ]
    # a name the caller binds is the caller's value, also inside a dynamic section
    assert render(
        "{{#docs}}{{cfg}}{{cfg.x}}{{/docs}}", "mustache", bindings={"cfg": Binding(static=True, text="C")}
    ) == [(True, "CC")]


def test_mustache_if_with_unless_and_closing_tags() -> None:
    assert render("{{#with user}}{{name}}{{/with}}{{#unless today}}u{{name}}{{/unless}}", "mustache") == [
        (False, "user_identity", "user", "{{name}}", (1, 14, 22)),
        (True, "u"),
        (False, "user_identity", "name", "{{name}}", (1, 49, 57)),
    ]
    # a closing tag pops to its own section; a stray one pops nothing
    assert render("{{#a}}{{#b}}x{{/a}}{{/b}}{{/c}} {{question}}", "mustache") == [
        (True, "x"),
        (True, " "),
        (False, "user_input", "question", "{{question}}", (1, 32, 44)),
    ]
    shape = render("{{#docs}}{{#b}}{{/b}}{{x}}{{/docs}}{{y}}", "mustache")
    assert [s[2] for s in shape] == ["docs", "y"]


def test_mustache_delimiters_comments_partials_and_helpers() -> None:
    assert render("{{= a b c =}}{{question}} {{=<% %>=}}<% today %> {{x}}", "mustache") == [
        (False, "user_input", "question", "{{question}}", (1, 13, 25)),
        (True, " "),
        (False, "timestamp", "today", "<% today %>", (1, 37, 48)),
        (True, " {{x}}"),
    ]
    assert render(
        "x {{{ question }}} {{& today}} {{! c }} {{> part}} {{^docs}}n{{/docs}} {{else}}", "mustache"
    ) == [
        (True, "x "),
        (False, "user_input", "question", "{{{ question }}}", (1, 2, 18)),
        (True, " "),
        (False, "timestamp", "today", "{{& today}}", (1, 19, 30)),
        (True, "   "),
        (True, "n"),
        (True, " "),
    ]
    assert render("{{lookup docs 'a' key=v}} [{{helper 'x'}}] {{{ unclosed", "mustache") == [
        (False, "retrieved_context", "docs", "{{lookup docs 'a' key=v}}", (1, 0, 25)),
        (True, " [] {{{ unclosed"),
    ]


def test_format_fields_are_named_by_their_whole_name_then_their_root() -> None:
    assert render(
        "{user.name} {docs[0]} {history.last} {thing.session_id} {cfg.x}",
        "format",
        bindings={"cfg": Binding(static=True, text="C")},
    ) == [
        (False, "user_identity", "user.name", "{user.name}", (1, 0, 11)),
        (True, " "),
        (False, "retrieved_context", "docs", "{docs[0]}", (1, 12, 21)),
        (True, " "),
        (False, "history", "history", "{history.last}", (1, 22, 36)),
        (True, " "),
        (False, "identifier", "thing.session_id", "{thing.session_id}", (1, 37, 55)),
        (True, " C"),
    ]


def located(text: str, style: str, **kw) -> list[tuple]:
    result = render_segments(text, style=style, path="t.txt", **kw)
    out = []
    for s in result.segments:
        loc = s.location
        if s.static:
            out.append((s.text, (loc.line, loc.col)))
        else:
            out.append((s.kind.value, s.label, s.text, (loc.line, loc.col, loc.end_line, loc.end_col)))
    return out


def test_format_fields_escapes_and_automatic_numbers() -> None:
    text = "{{x}} a {0} {} {:{width}} {user_name!r:>{}}\nline {{ {question} }}}}"
    assert located(text, "format") == [
        ("{x} a ", (1, 0)),
        ("unknown", "0", "{0}", (1, 8, 1, 11)),
        (" ", (1, 11)),
        ("unknown", "0", "{}", (1, 12, 1, 14)),
        (" ", (1, 14)),
        ("unknown", "1", "{:{width}}", (1, 15, 1, 25)),
        (" ", (1, 25)),
        ("user_identity", "user_name", "{user_name!r:>{}}", (1, 26, 1, 43)),
        ("\nline { ", (1, 43)),
        ("user_input", "question", "{question}", (2, 8, 2, 18)),
        (" }}", (2, 18)),
    ]


def test_format_positions_inside_an_embedded_string() -> None:
    assert located("Hi {x}\n  {y} end", "format", line_offset=10, col_offset=5, indent=2) == [
        ("Hi ", (11, 5)),
        ("unknown", "x", "{x}", (11, 8, 11, 11)),
        ("\n  ", (11, 11)),
        ("unknown", "y", "{y}", (12, 4, 12, 7)),
        (" end", (12, 7)),
    ]


def test_dollar_percent_and_plain_placeholders() -> None:
    assert located("$$5 $today and ${user_name}s $ 1 $$", "dollar") == [
        ("$5 ", (1, 0)),
        ("timestamp", "today", "$today", (1, 4, 1, 10)),
        (" and ", (1, 10)),
        ("user_identity", "user_name", "${user_name}", (1, 15, 1, 27)),
        ("s $ 1 $", (1, 27)),
    ]
    assert located("%% %(today)s %s %5.2f %%", "percent") == [
        ("% ", (1, 0)),
        ("timestamp", "today", "%(today)s", (1, 3, 1, 12)),
        (" ", (1, 12)),
        ("unknown", "0", "%s", (1, 13, 1, 15)),
        (" ", (1, 15)),
        ("unknown", "1", "%5.2f", (1, 16, 1, 21)),
        (" %", (1, 21)),
    ]
    assert located("{{ user.name }} and {question} {not-valid} {{x}}", "plain") == [
        ("user_identity", "user.name", "{{ user.name }}", (1, 0, 1, 15)),
        (" and ", (1, 15)),
        ("user_input", "question", "{question}", (1, 20, 1, 30)),
        (" {not-valid} ", (1, 30)),
        ("unknown", "x", "{{x}}", (1, 43, 1, 48)),
    ]
