"""Jinja2 templates: segments, exact locations, classification, flags, includes, macros, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefixlint.analysis.templates import Binding, render_segments
from prefixlint.model.layout import DynamicKind, SourceLocation, Timing


def jinja(text: str, **kw):
    kw.setdefault("path", "t.j2")
    return render_segments(text, style="jinja", **kw)


def shape(result):
    return [(s.static, s.text if s.static else s.kind) for s in result.segments]


def test_text_is_static_and_outputs_are_dynamic_in_template_order():
    r = jinja("Hello {{ user_name }}, today is {{ current_date }}.\nRules follow.")
    assert shape(r) == [
        (True, "Hello "),
        (False, DynamicKind.USER_IDENTITY),
        (True, ", today is "),
        (False, DynamicKind.TIMESTAMP),
        (True, ".\nRules follow."),
    ]
    assert r.errors == [] and r.dependencies == set()


def test_exact_locations_of_placeholders_and_text():
    r = jinja("Intro line\n  x {{ user.name }} and {{- now() -}}  y\n")
    name, now = [s for s in r.segments if s.dynamic]
    assert name.location == SourceLocation("t.j2", 2, 4, 2, 19)
    assert name.text == "{{ user.name }}"
    assert now.location == SourceLocation("t.j2", 2, 24, 2, 37)
    assert r.segments[0].location == SourceLocation("t.j2", 1, 0)
    assert name.chain == (name.location,)


def test_comments_raw_blocks_and_string_literals_are_not_placeholders():
    r = jinja('{# {{ now() }} #}A {% raw %}{{ user }}{% endraw %} {{ "{{ x }}" }} {{ b }}')
    dynamic = [s for s in r.segments if s.dynamic]
    assert len(dynamic) == 1
    prefix = '{# {{ now() }} #}A {% raw %}{{ user }}{% endraw %} {{ "{{ x }}" }} '
    assert dynamic[0].location.col == len(prefix)
    assert "".join(s.text for s in r.segments if s.static) == "A {{ user }} {{ x }} "


@pytest.mark.parametrize(
    ("expr", "kind"),
    [
        ("now()", DynamicKind.TIMESTAMP),
        ("datetime.now().strftime('%Y')", DynamicKind.TIMESTAMP),
        ("x | now", DynamicKind.TIMESTAMP),
        ("items | random", DynamicKind.RANDOM),
        ("uuid.uuid4()", DynamicKind.IDENTIFIER),
        ("uuid4()", DynamicKind.IDENTIFIER),
        ("docs | join('\\n')", DynamicKind.RETRIEVED_CONTEXT),
        ("chat_history", DynamicKind.HISTORY),
        ("question", DynamicKind.USER_INPUT),
        ("session_id", DynamicKind.IDENTIFIER),
    ],
)
def test_calls_filters_and_names_are_classified(expr: str, kind: DynamicKind):
    (seg,) = [s for s in jinja("A {{ " + expr + " }} B").segments if s.dynamic]
    assert seg.kind is kind
    assert seg.timing is Timing.REQUEST


def test_unknown_names_are_unknown_with_lower_confidence():
    unknown, known = [s for s in jinja("{{ product_blurb }} {{ user_name }}").segments if s.dynamic]
    assert unknown.kind is DynamicKind.UNKNOWN and unknown.timing is Timing.REQUEST
    assert unknown.confidence < known.confidence


def test_constants_render_static_text():
    r = jinja('A{{ "b" ~ "c" }}{{ 3 }}D')
    assert shape(r) == [(True, "Abc3D")]


def test_bindings_override_name_classification():
    loc = SourceLocation("app.py", 9, 40)
    bindings = {
        "user_name": Binding(static=True, text="Ann"),
        "product": Binding(static=False, kind=DynamicKind.TIMESTAMP, location=loc, label="datetime.now()"),
        "boot": Binding(static=False, kind=DynamicKind.TIMESTAMP, timing=Timing.PROCESS),
        "question": Binding(static=False),
    }
    r = jinja("Hi {{ user_name }}. {{ product }} {{ boot }} {{ question }}", bindings=bindings)
    assert r.segments[0].static and r.segments[0].text == "Hi Ann. "
    product, boot, question = [s for s in r.segments if s.dynamic]
    assert product.kind is DynamicKind.TIMESTAMP and product.confidence == 1.0
    assert product.label == "datetime.now()"
    assert product.chain == (loc, product.location)
    assert boot.timing is Timing.PROCESS
    # Bound as dynamic without a kind: the name still says what it is.
    assert question.kind is DynamicKind.USER_INPUT and question.confidence == 1.0


def test_binding_of_root_name_covers_attributes():
    r = jinja("{{ user.name }}", bindings={"user": Binding(static=False, kind=DynamicKind.MEMORY)})
    assert r.segments[0].kind is DynamicKind.MEMORY


def test_if_bodies_are_conditional_and_for_bodies_repeated():
    r = jinja(
        "{% if vip %}VIP {{ user_name }}{% elif x %}X{% else %}N{% endif %}"
        "{% for d in docs %}- {{ d.page_content }}{% else %}none{% endfor %}end"
    )
    by_text = {(s.text if s.static else s.kind): s for s in r.segments}
    assert by_text["VIP "].conditional and not by_text["VIP "].repeated
    assert by_text[DynamicKind.USER_IDENTITY].conditional
    assert by_text["XN"].conditional  # branches of one if: both conditional
    assert by_text["- "].repeated and not by_text["- "].conditional
    assert by_text[DynamicKind.RETRIEVED_CONTEXT].repeated
    assert by_text["none"].conditional
    assert not by_text["end"].conditional and not by_text["end"].repeated


def test_loop_variable_takes_the_iterables_kind():
    r = jinja(
        "{% for d in docs %}{{ d }}{% endfor %}{% for m in messages %}{{ m.content }}{% endfor %}"
        "{% for n in ['a', 'b'] %}{{ n }}{% endfor %}"
    )
    kinds = [s.kind for s in r.segments if s.dynamic]
    assert kinds == [DynamicKind.RETRIEVED_CONTEXT, DynamicKind.HISTORY]
    assert r.segments[-1].static and r.segments[-1].repeated


def test_set_variables_carry_their_value():
    r = jinja(
        '{% set stamp = now() %}{% set greeting = "Hello" %}{{ greeting }} {{ stamp }}'
        "{% set block %}Dear {{ user_name }}{% endset %}{{ block }}"
    )
    assert shape(r) == [(True, "Hello "), (False, DynamicKind.TIMESTAMP), (False, DynamicKind.USER_IDENTITY)]


def test_syntax_error_reports_line():
    r = jinja("ok\n{{ user_name }}\n{% endfor %}\nmore", line_offset=10)
    assert r.segments == []
    (err,) = r.errors
    assert err.code == "PFX001"
    assert err.location.line == 13
    assert "syntax" in err.message


def test_embedded_string_offsets_apply_to_first_line_columns_only():
    r = jinja("A {{ today }}\nB {{ user_name }}", path="app.py", line_offset=19, col_offset=14)
    today, user = [s for s in r.segments if s.dynamic]
    assert today.location == SourceLocation("app.py", 20, 16, 20, 27)
    assert user.location == SourceLocation("app.py", 21, 2, 21, 17)


def write(tmp: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_include_is_resolved_with_locations_in_the_included_file(tmp_path: Path):
    write(
        tmp_path,
        {
            "templates/main.j2": "Rules.\n{% include 'parts/header.j2' %}\nEnd",
            "templates/parts/header.j2": "Now: {{ now() }}",
        },
    )
    main = tmp_path / "templates/main.j2"
    r = render_segments(
        main.read_text(), style="jinja", path=str(main), search_paths=[Path("templates")], root=tmp_path
    )
    assert shape(r) == [(True, "Rules.\nNow: "), (False, DynamicKind.TIMESTAMP), (True, "\nEnd")]
    header = str((tmp_path / "templates/parts/header.j2").resolve())
    dyn = r.segments[1]
    assert dyn.location == SourceLocation(header, 1, 5, 1, 16)
    assert dyn.chain[0] == SourceLocation(str(main), 2, 0, 2, 31)
    assert r.dependencies == {header}
    assert r.errors == []


def test_include_sees_the_callers_bindings_and_loop_variables(tmp_path: Path):
    write(
        tmp_path,
        {"main.j2": "{% for d in docs %}{% include 'item.j2' %}{% endfor %}", "item.j2": "* {{ d }}"},
    )
    r = render_segments(
        (tmp_path / "main.j2").read_text(), style="jinja", path=str(tmp_path / "main.j2"), root=tmp_path
    )
    (dyn,) = [s for s in r.segments if s.dynamic]
    assert dyn.kind is DynamicKind.RETRIEVED_CONTEXT and dyn.repeated


def test_include_loop_is_reported_and_terminates(tmp_path: Path):
    write(
        tmp_path, {"a.j2": "A {{ user_name }} {% include 'b.j2' %}", "b.j2": "B {% include 'a.j2' %} b-end"}
    )
    a = tmp_path / "a.j2"
    r = render_segments(a.read_text(), style="jinja", path=str(a), root=tmp_path)
    (err,) = r.errors
    assert err.code == "PFX002"
    assert "include loop" in err.message and "a.j2 -> " in err.message and "b.j2 -> " in err.message
    assert err.location.path == str((tmp_path / "b.j2").resolve())
    assert [s.text for s in r.segments if s.static] == ["A ", " B  b-end"]


def test_self_include_loop_with_a_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write(tmp_path, {"loop.j2": "x{% include 'loop.j2' %}"})
    monkeypatch.chdir(tmp_path)
    r = render_segments("x{% include 'loop.j2' %}", style="jinja", path="loop.j2", root=tmp_path)
    assert [e.code for e in r.errors] == ["PFX002"]
    assert r.errors[0].message == "include loop: loop.j2 -> loop.j2"
    assert r.errors[0].location == SourceLocation("loop.j2", 1, 1, 1, 24)


def test_missing_include_is_an_error_but_the_rest_is_analysed(tmp_path: Path):
    r = render_segments(
        "{% include 'nope.j2' %}{{ today }}{% include 'gone.j2' ignore missing %}",
        style="jinja",
        path="m.j2",
        root=tmp_path,
    )
    (err,) = r.errors
    assert err.code == "PFX002" and "nope.j2" in err.message and err.location.line == 1
    assert shape(r) == [(False, DynamicKind.TIMESTAMP)]


def test_include_name_from_a_static_binding_or_unknown(tmp_path: Path):
    write(tmp_path, {"part.j2": "P {{ today }}"})
    r = render_segments(
        "{% include part %}",
        style="jinja",
        path="m.j2",
        root=tmp_path,
        bindings={"part": Binding(static=True, text="part.j2")},
    )
    assert shape(r) == [(True, "P "), (False, DynamicKind.TIMESTAMP)]
    r = render_segments("{% include some_name %}", style="jinja", path="m.j2", root=tmp_path)
    (seg,) = r.segments
    assert seg.dynamic and seg.kind is DynamicKind.UNKNOWN and seg.label.startswith("include of")


def test_extends_renders_the_parent_with_child_blocks_and_super(tmp_path: Path):
    write(
        tmp_path,
        {
            "base.j2": "Base rules.\n{% block head %}H{% endblock %}\n{% block body %}B{% endblock %}\nTail",
            "child.j2": "{% extends 'base.j2' %}ignored"
            "{% block body %}{{ super() }} C {{ user_name }}{% endblock %}",
        },
    )
    child = tmp_path / "child.j2"
    r = render_segments(child.read_text(), style="jinja", path=str(child), root=tmp_path)
    assert shape(r) == [(True, "Base rules.\nH\nB C "), (False, DynamicKind.USER_IDENTITY), (True, "\nTail")]
    assert r.segments[1].location.path == str(child)
    assert r.dependencies == {str((tmp_path / "base.j2").resolve())}


def test_macros_local_imported_and_call_blocks(tmp_path: Path):
    write(
        tmp_path, {"macros.j2": "{% macro greet(who, when=now()) %}Hi {{ who }} at {{ when }}{% endmacro %}"}
    )
    text = (
        "{% import 'macros.j2' as m %}{% from 'macros.j2' import greet as g %}"
        "{% macro wrap(x) %}[{{ caller() }}|{{ x }}]{% endmacro %}"
        "{{ m.greet(user_name) }}{{ g('team', when='noon') }}"
        "{% call wrap('static') %}{{ docs }}{% endcall %}"
    )
    r = render_segments(text, style="jinja", path=str(tmp_path / "main.j2"), root=tmp_path)
    assert shape(r) == [
        (True, "Hi "),
        (False, DynamicKind.USER_IDENTITY),
        (True, " at "),
        (False, DynamicKind.TIMESTAMP),
        (True, "Hi team at noon["),
        (False, DynamicKind.RETRIEVED_CONTEXT),
        (True, "|static]"),
    ]
    macro_file = str((tmp_path / "macros.j2").resolve())
    assert r.segments[1].location.path == macro_file
    assert r.segments[1].chain[0].path == str(tmp_path / "main.j2")
    assert r.dependencies == {macro_file}


def test_recursive_macro_terminates():
    r = jinja(
        "{% macro tree(n) %}({{ n.name }}{% for c in n.children %}{{ tree(c) }}{% endfor %})"
        "{% endmacro %}{{ tree(root_node) }}"
    )
    assert r.errors == []
    assert r.segments[0].text == "("


def test_find_template_search_order(tmp_path: Path):
    from prefixlint.analysis.templates import find_template

    write(tmp_path, {"a/x.j2": "1", "b/x.j2": "2", "deep/nested/prompts/y.j2": "3"})
    assert find_template("x.j2", [Path("b"), Path("a")], tmp_path) == (tmp_path / "b/x.j2").resolve()
    assert find_template("a/x.j2", [], tmp_path) == (tmp_path / "a/x.j2").resolve()
    assert find_template("prompts/y.j2", [], tmp_path) == (tmp_path / "deep/nested/prompts/y.j2").resolve()
    assert find_template("missing.j2", [], tmp_path) is None


def test_with_namespace_and_filter_blocks():
    r = jinja(
        "{% set ns = namespace(v=none) %}{% set ns.v = now() %}{{ ns.v }}"
        "{% with who = user_name %}[{{ who }}]{% endwith %}"
        "{% filter upper %}up {{ docs }}{% endfilter %}"
    )
    assert shape(r) == [
        (False, DynamicKind.TIMESTAMP),
        (True, "["),
        (False, DynamicKind.USER_IDENTITY),
        (True, "]up "),
        (False, DynamicKind.RETRIEVED_CONTEXT),
    ]


def test_extends_loop_is_reported(tmp_path: Path):
    write(
        tmp_path,
        {
            "a.j2": "{% extends 'b.j2' %}{% block x %}A{% endblock %}",
            "b.j2": "{% extends 'a.j2' %}{% block x %}B{% endblock %}",
        },
    )
    a = tmp_path / "a.j2"
    r = render_segments(a.read_text(), style="jinja", path=str(a), root=tmp_path)
    assert [e.code for e in r.errors] == ["PFX002"]
    assert "include loop" in r.errors[0].message
    assert shape(r) == [(True, "A")]


def test_included_templates_are_parsed_once_per_process(tmp_path: Path):
    from prefixlint.analysis.templates.jinja_parse import parse_jinja

    write(tmp_path, {"part.j2": "shared {{ today }} part, unique to this test " + tmp_path.name})
    text = "{% include 'part.j2' %}" * 5
    before = parse_jinja.cache_info()
    render_segments(text, style="jinja", path="m.j2", root=tmp_path)
    after = parse_jinja.cache_info()
    assert after.misses - before.misses == 2  # the main text and part.j2, once each
    assert after.hits - before.hits >= 4


def test_the_name_of_a_project_or_a_tool_is_not_a_user_identity():
    # `x.name` is whatever `x` is the name of: a user's name splits the cache per user, the name of a
    # project or a tool says nothing about who asks
    r = jinja("{{ customer.name }} {{ project.name }} {{ tool.name }} {{ self.user.name }}")
    kinds = [s.kind for s in r.segments if s.dynamic]
    assert kinds == [
        DynamicKind.USER_IDENTITY,
        DynamicKind.UNKNOWN,
        DynamicKind.UNKNOWN,
        DynamicKind.USER_IDENTITY,
    ]
