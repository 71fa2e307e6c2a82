"""Properties over generated templates: no crash, and every placeholder location points at its source."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from prefixlint.analysis.templates import render_segments, template_suppressions

TEXT = st.text(alphabet="ab {}#%$\n\t\"'-:[]().|~!=^/&>", max_size=60)
NAMES = st.sampled_from(["today", "user_name", "docs", "x", "question", "a_b"])
CHUNK = st.text(alphabet="ab \n.,:\"'()[]-", max_size=12)

PLACEHOLDER = {
    "jinja": ["{{ %s }}", "{{%s}}", "{{- %s -}}", "{{ %s | upper }}"],
    "format": ["{%s}", "{%s!r}", "{%s:>4}"],
    "plain": ["{%s}", "{{%s}}", "{{ %s }}"],
    "mustache": ["{{%s}}", "{{{%s}}}", "{{& %s}}"],
    "dollar": ["$%s", "${%s}"],
    "percent": ["%%(%s)s", "%%(%s)r"],
}


@settings(max_examples=100, deadline=None)
@given(text=TEXT, style=st.sampled_from([*sorted(PLACEHOLDER), "prompty"]))
def test_any_text_renders_without_raising(text: str, style: str):
    result = render_segments(text, style=style, path="t")  # type: ignore[arg-type]
    lines = text.replace("\r\n", "\n").split("\n")
    for seg in result.segments:
        assert seg.location is not None and 1 <= seg.location.line <= len(lines)
    template_suppressions(text, style)


@settings(max_examples=100, deadline=None)
@given(
    style=st.sampled_from(sorted(PLACEHOLDER)),
    parts=st.lists(st.tuples(CHUNK, NAMES, st.integers(0, 3)), min_size=1, max_size=5),
    offsets=st.tuples(st.integers(0, 50), st.integers(0, 30)),
)
def test_placeholder_locations_slice_back_to_the_placeholder(style, parts, offsets):
    forms = PLACEHOLDER[style]
    text = ""
    expected = []
    for chunk, name, form in parts:
        if style in ("format", "plain", "percent", "dollar", "mustache"):
            chunk = chunk.replace("{", "").replace("}", "")
        ph = forms[form % len(forms)] % name
        if style == "dollar":
            chunk = " " + chunk  # keep the previous $name from running into this chunk
        text += chunk
        expected.append(ph)
        text += ph
    line_offset, col_offset = offsets
    result = render_segments(
        text,
        style=style,
        path="t",
        line_offset=line_offset,  # type: ignore[arg-type]
        col_offset=col_offset,
    )
    assert result.errors == []
    lines = text.split("\n")
    found = []
    for seg in result.segments:
        if seg.static:
            continue
        loc = seg.location
        line, col = loc.line - line_offset, loc.col
        end_line, end_col = loc.end_line - line_offset, loc.end_col
        if line == 1:
            col -= col_offset
        if end_line == 1:
            end_col -= col_offset
        assert line == end_line
        found.append(lines[line - 1][col:end_col])
    assert found == expected
