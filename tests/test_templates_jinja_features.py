"""Jinja features a prompt template uses less often: subscripts, tuple loops, inheritance with
top-level sets, include lists, unreadable or broken included files, deep nesting, macro calls with
missing arguments, call blocks of unknown macros, and ``self.block()``."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefixlint.analysis.templates import Binding, render_segments


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)


def render(root: Path, text: str, **kw):
    result = render_segments(text, style="jinja", path=str(root / "m.j2"), root=root, **kw)
    shape = [(s.static, s.text if s.static else (s.kind.value, s.label)) for s in result.segments]
    errors = [
        (e.code, e.message, Path(e.location.path).name, e.location.line, e.location.col)
        for e in result.errors
    ]
    return shape, errors


def test_subscripts_are_looked_up_by_their_dotted_name(tmp_path: Path) -> None:
    shape, errors = render(
        tmp_path,
        'A {{ user["name"] }} B {{ docs[0] }} C {{ user[1] }} D {{ cfg[question] }}',
        bindings={"user.name": Binding(static=True, text="Ann")},
    )
    assert errors == []
    assert shape == [
        (True, "A Ann B "),
        (False, ("retrieved_context", "docs")),
        (True, " C "),
        (False, ("user_identity", "user")),
        (True, " D "),
        (False, ("unknown", "cfg")),
    ]


def test_attribute_bound_by_the_caller_and_unknown_attribute(tmp_path: Path) -> None:
    shape, _ = render(
        tmp_path,
        "{{ cfg.model_name }} {{ settings.extra }}",
        bindings={"cfg.model_name": Binding(static=True, text="m")},
    )
    assert shape == [(True, "m "), (False, ("unknown", "settings.extra"))]


def test_tuple_loop_targets_take_the_iterables_kind(tmp_path: Path) -> None:
    shape, _ = render(
        tmp_path, "Intro {% for role, text in chat_history %}{{ role }}: {{ text }}{% endfor %}"
    )
    assert shape == [
        (True, "Intro "),
        (False, ("history", "chat_history")),
        (True, ": "),
        (False, ("history", "chat_history")),
    ]


def test_a_child_template_keeps_its_top_level_sets(tmp_path: Path) -> None:
    write(tmp_path, {"base.j2": "Base {% block body %}b{% endblock %} end"})
    shape, errors = render(
        tmp_path, "{% extends 'base.j2' %}{% set who = 'Ann' %}{% block body %}[{{ who }}]{% endblock %}"
    )
    assert (shape, errors) == ([(True, "Base [Ann] end")], [])
    shape, errors = render(tmp_path, "X{% if flag %}{% extends 'base.j2' %}{% endif %}Y{{ question }}")
    assert (shape, errors) == ([(True, "XY"), (False, ("user_input", "question"))], [])


def test_an_include_list_takes_the_first_file_that_exists(tmp_path: Path) -> None:
    write(tmp_path, {"part.j2": "P {{ today }}"})
    shape, errors = render(tmp_path, "{% include ['missing.j2', 'part.j2'] %}")
    assert (shape, errors) == ([(True, "P "), (False, ("timestamp", "today"))], [])
    shape, errors = render(tmp_path, "{% include ['missing.j2', 'gone.j2'] %}x")
    assert shape == [(True, "x")]
    assert errors == [("PFX002", "included template 'missing.j2' not found", "m.j2", 1, 0)]


def test_imports_of_computed_names_give_static_values(tmp_path: Path) -> None:
    shape, errors = render(
        tmp_path, "{% from helpers import greet %}[{{ greet() }}] {% import mod as m %}[{{ m.x }}]"
    )
    assert (shape, errors) == ([(True, "[] []")], [])


def test_unreadable_broken_and_too_deep_includes_are_reported(tmp_path: Path) -> None:
    write(tmp_path, {"latin.j2": b"caf\xe9 {{ x }}", "bad.j2": "ok\n{% if %}"})
    shape, errors = render(tmp_path, "A{% include 'latin.j2' %}B")
    assert shape == [(True, "AB")]
    ((code, message, where, line, col),) = errors
    assert (code, where, line, col) == ("PFX002", "m.j2", 1, 1)
    assert message.startswith("cannot read included template 'latin.j2': 'utf-8' codec can't decode")
    shape, errors = render(tmp_path, "A\n{% include 'bad.j2' %}B")
    assert shape == [(True, "A\nB")]
    assert errors == [
        (
            "PFX001",
            "template syntax error: Expected an expression, got 'end of statement block'",
            "bad.j2",
            2,
            0,
        )
    ]
    write(tmp_path, {f"d{i}.j2": f"{i} {{% include 'd{i + 1}.j2' %}}" for i in range(45)})
    shape, errors = render(tmp_path, "{% include 'd0.j2' %}")
    assert shape == [(True, "".join(f"{i} " for i in range(40)))]
    assert errors == [("PFX002", "templates nested deeper than 40 levels; 'd40.j2' not read", "d39.j2", 1, 3)]


def test_macro_arguments_missing_given_by_keyword_or_by_default(tmp_path: Path) -> None:
    macro = "{% macro m(a, b, c=today) %}[{{ a }}|{{ b }}|{{ c }}]{% endmacro %}"
    shape, _ = render(tmp_path, macro + "{{ m(question) }}")
    assert shape == [
        (True, "["),
        (False, ("user_input", "question")),
        (True, "||"),
        (False, ("timestamp", "today")),
        (True, "]"),
    ]
    shape, _ = render(tmp_path, macro + "{{ m('x', b=user_name, c='y') }}")
    assert shape == [(True, "[x|"), (False, ("user_identity", "user_name")), (True, "|y]")]
    shape, _ = render(tmp_path, macro + "<{{ m }}>")
    assert shape == [(True, "<>")]


def test_call_block_of_an_unknown_macro_is_a_value_then_its_body(tmp_path: Path) -> None:
    shape, _ = render(tmp_path, "{% call wrap(question) %}inner {{ today }}{% endcall %} end")
    assert shape == [
        (False, ("user_input", "question")),
        (True, "inner "),
        (False, ("timestamp", "today")),
        (True, " end"),
    ]


def test_self_block_renders_the_block_again(tmp_path: Path) -> None:
    shape, _ = render(tmp_path, "{{ self.body() }}|{% block body %}B{{ question }}{% endblock %}")
    assert shape == [
        (True, "B"),
        (False, ("user_input", "question")),
        (True, "|B"),
        (False, ("user_input", "question")),
    ]
    shape, _ = render(tmp_path, "[{{ self.nothing() }}]")
    assert shape == [(True, "[]")]


def test_an_include_by_absolute_path(tmp_path: Path) -> None:
    write(tmp_path, {"parts/abs.j2": "Abs {{ today }}"})
    target = (tmp_path / "parts" / "abs.j2").resolve()
    shape, errors = render(tmp_path, f"{{% include '{target}' %}}", search_paths=[Path("parts")])
    assert (shape, errors) == ([(True, "Abs "), (False, ("timestamp", "today"))], [])
    shape, errors = render(tmp_path, f"x{{% include '{tmp_path / 'gone.j2'}' %}}")
    assert shape == [(True, "x")]
    assert errors == [("PFX002", f"included template '{tmp_path / 'gone.j2'}' not found", "m.j2", 1, 1)]


def test_template_names_found_under_the_root(tmp_path: Path) -> None:
    from prefixlint.analysis.templates.files import clear_caches, files_with_stem, find_template

    write(
        tmp_path,
        {
            "a/prompts/review.prompt": "x",
            "b/review.j2": "y",
            "deep/er/prompts/review.prompt": "z",
            ".hidden/review.md": "h",
            "venv/review.txt": "v",
        },
    )
    clear_caches()
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in files_with_stem(tmp_path, "review")) == [
        "a/prompts/review.prompt",
        "b/review.j2",
        "deep/er/prompts/review.prompt",
    ]
    assert files_with_stem(tmp_path, "nothing") == ()
    # a unique-enough tail: the shortest matching path wins
    assert (
        find_template("prompts/review.prompt", (), tmp_path)
        == (tmp_path / "a/prompts/review.prompt").resolve()
    )
    assert find_template("../b/review.j2", (), tmp_path / "a") == (tmp_path / "b/review.j2").resolve()
    assert find_template("x/../review.j2", (), tmp_path) is None
    assert find_template("", (), tmp_path) is None and find_template(".", (), tmp_path) is None
    assert (
        find_template("er/prompts/review.prompt", (), tmp_path)
        == (tmp_path / "deep/er/prompts/review.prompt").resolve()
    )
    (tmp_path / "b" / "new.j2").write_text("n")
    assert find_template("b2/new.j2", (), tmp_path) is None
    assert find_template("new.j2", (), tmp_path) is None  # the index is kept until the caches are cleared
    clear_caches()
    assert find_template("new.j2", (), tmp_path) == (tmp_path / "b" / "new.j2").resolve()


@pytest.mark.parametrize(
    ("expr", "kind", "label"),
    [
        ("time.time()", "timestamp", "time.time()"),
        ("store.similarity_search(q)", "retrieved_context", "store.similarity_search()"),
        ("secrets.token_hex(8)", "identifier", "secrets.token_hex()"),
        ("uuid4()", "identifier", "uuid4()"),
        ("helpers.now()", "timestamp", "helpers.now()"),
    ],
)
def test_calls_named_by_the_catalog_or_by_their_last_name(
    tmp_path: Path, expr: str, kind: str, label: str
) -> None:
    shape, _ = render(tmp_path, "A {{ " + expr + " }} B")
    assert shape == [(True, "A "), (False, (kind, label)), (True, " B")]
