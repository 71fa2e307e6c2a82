"""One line index everywhere: lines break at ``\\r\\n``, ``\\r`` and ``\\n`` only, as Python's tokenizer does.

A form feed (``\\f``), ``\\v``, ``\\x1c``-``\\x1e``, ``\\x85`` or ``\\u2028`` inside a line is part of that
line for the tokenizer, libcst and jinja2; ``str.splitlines`` would break there and shift every line after.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import libcst as cst
import pytest
from cli_support import invoke, needs_analyzer

from prefixlint.lint.suppressions import add_ignores, parse_suppressions
from prefixlint.model.findings import Finding
from prefixlint.model.layout import SourceLocation
from prefixlint.model.source_text import LineIndex, line_starts, split_lines

ODD_BREAKS = ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]

PROMPT_MODULE = (
    "import openai\n"
    "from datetime import datetime\n"
    "{odd}\n"
    'RULES = "Follow the policy. " * 300\n'
    "\n"
    "\n"
    "def ask(q):\n"
    '    system = f"Now: {{datetime.now()}}\\n" + RULES\n'
    "    return openai.OpenAI().chat.completions.create(\n"
    '        model="gpt-4o",\n'
    '        messages=[{{"role": "system", "content": system}}, {{"role": "user", "content": q}}],\n'
    "    )\n"
)
FINDING_LINE = 8  # the f-string with datetime.now()


@pytest.mark.parametrize("odd", ODD_BREAKS)
def test_lines_split_like_the_tokenizer_and_libcst(odd: str) -> None:
    text = f"a = 1\nb = '{odd}'  # x{odd}\r\nc = 2\f\rd = 3\n"
    lines = split_lines(text, keepends=True)
    assert "".join(lines) == text
    assert len(lines) == 4  # the odd character never breaks a line
    unix = text.replace("\r\n", "\n").replace("\r", "\n")
    tokens = list(tokenize.generate_tokens(io.StringIO(unix).readline))
    assert max(t.start[0] for t in tokens) == len(lines) + 1  # ENDMARKER sits after the last line
    module = cst.parse_module(text)
    wrapper = cst.MetadataWrapper(module)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    names = {n.value: positions[n].start.line for n in positions if isinstance(n, cst.Name)}
    index = LineIndex(text)
    for name, line in names.items():
        assert index.position(text.index(f"{name} =")) == (line, 0)


def test_split_lines_matches_splitlines_without_odd_breaks() -> None:
    for text in ["", "\n", "a", "a\n", "a\nb", "a\r\nb\r\n", "a\rb", "\n\n", "x\r\n\r\n"]:
        assert split_lines(text) == text.splitlines()
        assert split_lines(text, keepends=True) == text.splitlines(keepends=True)
        assert line_starts(text)[0] == 0


def test_line_index_offsets_round_trip() -> None:
    text = "ab\f\ncd\r\nef\rgh"
    index = LineIndex(text)
    for offset in range(len(text)):
        line, col = index.position(offset)
        assert index.offset(line, col) == offset
    assert index.position(text.index("g")) == (4, 0)


@pytest.mark.parametrize("odd", ["\f", "\u2028"])
def test_add_ignores_puts_the_comment_on_the_finding_line(odd: str) -> None:
    text = f"x = 1\n{odd}\ny = 2\nz = 3\n"
    table = parse_suppressions("m.py", text)
    finding = Finding(code="PFX101", message="m", location=SourceLocation("m.py", 3, 0))
    new, count = add_ignores(text, table, [finding])
    assert count == 1
    assert split_lines(new)[2] == "y = 2  # prefixlint: ignore[PFX101]"


def test_template_directive_after_a_form_feed_counts_on_its_own_line() -> None:
    table = parse_suppressions("t.j2", "a\f b\n{{ x }} {# prefixlint: ignore[PFX101] #}\n", "template")
    assert [d.line for d in table.directives] == [2]


def test_unused_suppression_removal_after_a_form_feed(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n\f\ny = 2  # prefixlint: ignore[PFX101]\n")
    code, _, _ = invoke(["check", "--fix", "--no-cache", "m.py"], tmp_path)
    assert (tmp_path / "m.py").read_text() == "x = 1\n\f\ny = 2\n"
    assert code == 0


@needs_analyzer
def test_cli_add_ignore_after_a_form_feed_lands_on_the_finding_line(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(PROMPT_MODULE.format(odd="\f"))
    # the prompt is below the provider minimum (an informational finding): every finding counts here
    args = ["check", "--no-cache", "--min-impact-tokens", "0", "--output-format", "concise", "a.py"]
    code, out, _ = invoke(args, tmp_path)
    assert code == 1 and f"a.py:{FINDING_LINE}:" in out
    code, _, err = invoke(["check", "--no-cache", "--add-ignore", "a.py"], tmp_path)
    assert code == 0 and "Added 1" in err
    lines = split_lines((tmp_path / "a.py").read_text())
    assert lines[FINDING_LINE - 1].endswith("+ RULES  # prefixlint: ignore[PFX101]")
    assert sum("prefixlint: ignore" in line for line in lines) == 1
    code, out, _ = invoke(["check", "--no-cache", "a.py"], tmp_path)
    assert code == 0, out


@needs_analyzer
def test_text_snippet_after_a_form_feed_shows_the_finding_line(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(PROMPT_MODULE.format(odd="\f"))
    _, out, _ = invoke(["check", "--no-cache", "a.py"], tmp_path)
    assert f'{FINDING_LINE} |     system = f"Now: {{datetime.now()}}' in out
