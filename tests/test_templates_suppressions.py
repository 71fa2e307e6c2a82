"""Suppression directives in template comments: the line they cover, their codes, whole-file ones."""

from __future__ import annotations

import pytest

from prefixlint.analysis.templates.suppressions import template_suppressions


@pytest.mark.parametrize(
    ("text", "style", "expected"),
    [
        # beside content: that line; alone on its line: the next line
        ("A {{ x }} {# prefixlint: ignore #}\nB", "jinja", {1: None}),
        ("{# prefixlint: ignore #} {{ x }}\nB", "jinja", {1: None}),
        ("A\n{# prefixlint: ignore[PFX101] #} {{ x }}\nB", "jinja", {2: {"PFX101"}}),
        ("{# prefixlint: ignore[pfx101, PFX102] #}\nB {{ x }}", "jinja", {2: {"PFX101", "PFX102"}}),
        ("  {# prefixlint: ignore #}  \nB", "jinja", {2: None}),
        ("{# prefixlint: ignore #}", "jinja", {2: None}),
        ("a\r\n{# prefixlint: ignore #}\r\nb", "jinja", {3: None}),
        # a comment over several lines with content after it covers all its lines
        (
            "{#\n prefixlint: ignore[PFX101]\n#} {{ x }}\nC",
            "jinja",
            {1: {"PFX101"}, 2: {"PFX101"}, 3: {"PFX101"}},
        ),
        ("{#\n prefixlint: ignore[PFX101]\n#}\nC", "jinja", {4: {"PFX101"}}),
        ("  {# prefixlint: ignore-file[PFX201] #}  \nB", "prompty", {0: {"PFX201"}}),
        # codes add up; no codes (all) wins whichever comes first
        ("x {# prefixlint: ignore #} {# prefixlint: ignore[PFX101] #}", "jinja", {1: None}),
        (
            "x {# prefixlint: ignore[PFX101] #} {# prefixlint: ignore[PFX102] #}",
            "jinja",
            {1: {"PFX101", "PFX102"}},
        ),
        ("x {# prefixlint: ignore[PFX101] #} {# prefixlint: ignore #}", "jinja", {1: None}),
        ("{# no directive #} {# prefixlint: ignored #}", "jinja", {}),
        ("{{ '{# prefixlint: ignore #}' }}", "jinja", {}),
        (
            "{{! prefixlint: ignore }}\n{{a}} {{! prefixlint: IGNORE[pfx1] }}\n"
            "{{a}} {{! prefixlint: ignore[PFX3] }}\n"
            "{{!\nprefixlint: ignore-file\n}}",
            "mustache",
            {2: None, 3: {"PFX3"}, 0: None},
        ),
        ("{# prefixlint: ignore #}\n{{! prefixlint: ignore[PFX1] }} x", "mustache", {2: {"PFX1"}}),
        (
            "<!-- prefixlint: ignore[PFX101] -->\nHi {x} # prefixlint: ignore\n# prefixlint: ignore[ , ]\nz",
            "format",
            {2: None, 4: None},
        ),
        ("Hi {x} <!-- prefixlint: ignore[PFX101] -->\n", "plain", {1: {"PFX101"}}),
        ("# prefixlint: ignore-file\n", "dollar", {0: None}),
        # a template that does not even lex holds no directive
        ("{# prefixlint: ignore #}\n{{ 'unclosed }}", "jinja", {}),
    ],
)
def test_directives_and_the_lines_they_cover(text: str, style: str, expected: dict) -> None:
    assert template_suppressions(text, style) == expected
