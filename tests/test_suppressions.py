"""Suppression comments: parsing, matching (multi-line strings), unused codes, and --add-ignore."""

from __future__ import annotations

import libcst

from prefixlint.lint.suppressions import (
    add_ignores,
    apply_suppressions,
    parse_python,
    parse_template,
    unused_findings,
)
from prefixlint.model.edits import apply_edits
from prefixlint.model.findings import Finding
from prefixlint.model.layout import SourceLocation


def finding(code: str, line: int, path: str = "a.py", col: int = 0) -> Finding:
    return Finding(code=code, message="m", location=SourceLocation(path, line, col))


MULTILINE = '''import os
SYSTEM = f"""You are a bot.
Today is {now}.
Be nice."""  # prefixlint: ignore[PFX101]
OTHER = "x"  # prefixlint: ignore[PFX102, PFX4]
PLAIN = "no directive"  # prefixlint ignore[PFX101] is not a directive
TEXT = "# prefixlint: ignore[PFX103] inside a string is not a comment"
'''


def test_parse_python_directives_and_multiline_anchor() -> None:
    table = parse_python("a.py", MULTILINE)
    assert [(d.line, d.codes) for d in table.directives] == [(4, ("PFX101",)), (5, ("PFX102", "PFX4"))]
    # Every line of the f-string anchors to the line of its closing quotes.
    assert table.anchor_line(2) == 4 and table.anchor_line(3) == 4 and table.anchor_line(5) == 5


def test_line_directive_covers_whole_multiline_string_only() -> None:
    table = parse_python("a.py", MULTILINE)
    assert table.matching(3, "PFX101") is not None
    assert table.matching(3, "PFX102") is None
    assert table.matching(1, "PFX101") is None
    # A prefix selector in the directive (PFX4) silences every code it starts.
    assert table.matching(5, "PFX401") is not None
    assert table.matching(7, "PFX103") is None


def test_blanket_and_file_level() -> None:
    text = (
        "# prefixlint: ignore-file[PFX301]\nx = 1  # prefixlint: ignore\ny = 2  # prefixlint: ignore-file\n"
    )
    table = parse_python("a.py", text)
    assert table.matching(40, "PFX301") is not None  # file level applies everywhere
    assert table.matching(40, "PFX101") is None
    assert table.matching(2, "PFX999") is not None  # blanket
    # ignore-file after code is only a line directive.
    assert table.matching(3, "PFX101") is not None and table.matching(1, "PFX101") is None


def test_apply_suppressions_and_unused_with_fix() -> None:
    text = (
        "a = 1  # prefixlint: ignore[PFX101, PFX102]\n"
        "b = 2  # prefixlint: ignore[PFX103]\n"
        "# prefixlint: ignore-file[PFX555]\n"
    )
    table = parse_python("a.py", text)
    result = apply_suppressions([finding("PFX101", 1), finding("PFX104", 2)], {"a.py": table})
    assert [f.code for f in result.kept] == ["PFX104"]
    unused = unused_findings(
        table,
        result.used,
        enabled=["PFX101", "PFX102", "PFX103"],
        known=["PFX101", "PFX102", "PFX103"],
        text=text,
    )
    messages = {f.location.line: f.message for f in unused}
    assert messages[1] == "Unused suppression (unused: PFX102)"
    assert messages[2] == "Unused suppression (unused: PFX103)"
    assert "unknown: PFX555" in messages[3]
    fixed = text
    edits = [e for f in sorted(unused, key=lambda f: -f.location.line) for e in f.fix.edits]
    fixed = apply_edits(text, edits)
    assert fixed == "a = 1  # prefixlint: ignore[PFX101]\nb = 2\n"


def test_unused_ignores_codes_of_rules_not_enabled() -> None:
    table = parse_python("a.py", "a = 1  # prefixlint: ignore[PFX101]\n")
    assert unused_findings(table, set(), enabled=["PFX102"], known=["PFX101", "PFX102"]) == []


def test_template_directives() -> None:
    text = "Hello {{ name }} {# prefixlint: ignore[PFX104] #}\n{#- prefixlint: ignore-file[PFX2] -#}\n"
    table = parse_template("t.j2", text)
    assert table.matching(1, "PFX104") is not None
    assert table.matching(9, "PFX201") is not None
    assert table.matching(9, "PFX104") is None


def test_add_ignores_python_end_of_line_and_after_closing_quotes() -> None:
    table = parse_python("a.py", MULTILINE)
    findings = [finding("PFX105", 3), finding("PFX101", 1), finding("PFX109", 5), finding("PFX900", 5)]
    new, changed = add_ignores(MULTILINE, table, findings)
    assert changed == 3
    lines = new.splitlines()
    assert lines[0] == "import os  # prefixlint: ignore[PFX101]"
    assert lines[3] == 'Be nice."""  # prefixlint: ignore[PFX101, PFX105]'
    assert lines[4] == 'OTHER = "x"  # prefixlint: ignore[PFX102, PFX109, PFX4]'
    libcst.parse_module(new)
    again = parse_python("a.py", new)
    assert all(again.matching(f.location.line, f.code) for f in findings if f.code != "PFX900")
    # Adding the same findings again changes nothing.
    assert add_ignores(new, again, findings)[0] == new


def test_add_ignores_skips_backslash_continuation() -> None:
    text = "x = 1 + \\\n    2\n"
    new, changed = add_ignores(text, parse_python("a.py", text), [finding("PFX101", 1)])
    assert (new, changed) == (text, 0)


def test_add_ignores_template_adds_no_rendered_whitespace() -> None:
    import jinja2

    text = "Today is {{ now }}\nBye\n"
    new, _ = add_ignores(text, parse_template("t.j2", text), [finding("PFX101", 1, "t.j2")])
    assert new == "Today is {{ now }}{# prefixlint: ignore[PFX101] #}\nBye\n"
    env = jinja2.Environment()
    assert env.from_string(new).render(now="N") == env.from_string(text).render(now="N")


def test_file_without_directives_skips_tokenizer_but_add_ignores_still_anchors() -> None:
    text = 'SYSTEM = f"""Today is {now}.\nBe nice.\n"""\n'
    table = parse_python("a.py", text)
    assert table.directives == [] and not table.anchors_known
    assert table.matching(1, "PFX101") is None
    # The lazily skipped multi-line string map is rebuilt where a comment must be placed.
    new, changed = add_ignores(text, table, [finding("PFX101", 1)])
    assert changed == 1
    assert new.splitlines()[2] == '"""  # prefixlint: ignore[PFX101]'
    assert parse_python("a.py", new).matching(1, "PFX101") is not None
