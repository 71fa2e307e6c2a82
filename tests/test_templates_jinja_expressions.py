"""What each kind of Jinja expression and statement renders to: constant folding, operators, filters,
tests, set blocks, conditionals and loops (with their flags), filter blocks, macros' varargs."""

from __future__ import annotations

import pytest

from prefixlint.analysis.templates import render_segments


def rendered(text: str) -> list[str]:
    """Static text as is, a value as ``<kind:label>``; ``/c`` conditional, ``/r`` repeated."""
    out = []
    for s in render_segments(text, style="jinja", path="t.j2").segments:
        shown = s.text if s.static else f"<{s.kind.value}:{s.label}>"
        out.append(shown + ("/c" if s.conditional else "") + ("/r" if s.repeated else ""))
    return out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "{{ 'a' ~ 'b' }}|{{ 1 + 2 }}|{{ 'x' if flag else 'y' }}|{{ [1, 2] }}|{{ {'k': 'v'} }}|{{ 3>2 }}",
            ["ab|3|", "<unknown:flag>", "|[1, 2]|{'k': 'v'}|True"],
        ),
        (
            "{{ question ~ '!' }}|{{ 'Q: ' + question }}|{{ today if flag else 'no' }}",
            ["<user_input:question>", "|", "<user_input:question>", "|", "<timestamp:today>"],
        ),
        (
            "{{ docs | join(', ') }}|{{ question | upper }}|{{ name | default('x') }}|{{ items | length }}",
            [
                "<retrieved_context:docs>",
                "|",
                "<user_input:question>",
                "|",
                "<user_identity:name>",
                "|",
                "<unknown:items>",
            ],
        ),
        ("{% set x %}Today {{ today }}{% endset %}[{{ x }}]", ["[", "<timestamp:today>", "]"]),
        ("{% set x = 'fixed' %}[{{ x }}]{% set y = today %}{{ y }}", ["[fixed]", "<timestamp:today>"]),
        (
            "{% if flag %}A{% elif other %}B{{ question }}{% else %}C{% endif %}D",
            ["AB/c", "<user_input:question>/c", "C/c", "D"],
        ),
        (
            "{% for d in docs if d.ok %}{{ d.text }}{{ loop.index }}{% else %}none{% endfor %}",
            ["<retrieved_context:docs>/r", "<retrieved_context:docs>/r", "none/c"],
        ),
        (
            "{% for d in docs %}{% if d.ok %}{{ question }}{% endif %}{% endfor %}",
            ["<user_input:question>/c/r"],
        ),
        ("{% filter upper %}x {{ question }}{% endfilter %}", ["x ", "<user_input:question>"]),
        ("{{ range(3) | list }}|{{ dict(a=1) }}|{{ lipsum() }}", ["||", "<random:lipsum()>"]),
        (
            "{{ 'a' in question }}|{{ question[0:3] }}|{{ -today }}|{{ not flag }}",
            [
                "<user_input:question>",
                "|",
                "<user_input:question>",
                "|",
                "<timestamp:today>",
                "|",
                "<unknown:flag>",
            ],
        ),
        (
            "{{ '%s' % question }}|{{ '{}'.format(today) }}|{{ question.strip() }}|{{ now().strftime('%Y')}}",
            [
                "<user_input:question>",
                "|",
                "<timestamp:today>",
                "|",
                "<user_input:question>",
                "|",
                "<timestamp:now()>",
            ],
        ),
        ("{% raw %}{{ x }}{% endraw %}{#c#}{{ self }}{{ caller }}{{ loop }}", ["{{ x }}"]),
        (
            "{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(question, k=today) }}",
            ["<user_input:question>", "<timestamp:today>"],
        ),
        (
            "{% with a = today, b = 'x' %}{{ a }}{{ b }}{% endwith %}{{ a }}",
            ["<timestamp:today>", "x", "<unknown:a>"],
        ),
    ],
)
def test_expressions_and_statements(text: str, expected: list[str]) -> None:
    assert rendered(text) == expected
