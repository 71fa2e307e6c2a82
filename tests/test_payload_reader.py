"""Reading payload files: the position-keeping JSON reader, the first-keys sniff, payload documents."""

from __future__ import annotations

import json

import pytest

from prefixlint.analysis.payloads.documents import read_payload_file
from prefixlint.analysis.payloads.json_reader import JsonSyntaxError, read_json, read_json_lines
from prefixlint.analysis.payloads.shapes import detect_api, is_request_body
from prefixlint.analysis.payloads.sniff import SNIFF_BYTES, sniff_request, top_level_keys
from prefixlint.model.json_text import LineIndex, string_char_offset


def _at(text: str, loc) -> str:  # the text a location spans (one line)
    line = text.splitlines()[loc.line - 1]
    return line[loc.col : loc.end_col] if loc.end_line == loc.line else line[loc.col :]


def test_every_value_has_its_span_by_payload_path() -> None:
    text = json.dumps(
        {
            "model": "gpt-4.1",
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]},
            ],
            "a key": {"x": []},
        },
        indent=2,
    )
    doc = read_json(text)
    assert _at(text, doc.location("messages[0].content", "f.json")) == '"Be brief."'
    assert _at(text, doc.location("messages[1].content[0].text", "f.json")) == '"hi"'
    assert _at(text, doc.location("tools[0].function.name", "f.json")) == '"f"'
    assert doc.location('["a key"].x', "f.json") is not None
    assert doc.location("messages[7]", "f.json") is None
    loc = doc.location("messages[1]", "f.json")
    assert loc.line == text[: text.index('"role": "user"')].count("\n")  # the line of its "{"
    assert text.splitlines()[loc.end_line - 1][: loc.end_col].strip() == "}"


def test_characters_inside_a_string_map_through_escapes() -> None:
    content = 'Line one\n"quoted" caf\u00e9 \U0001f642 tab\there. Now: 2026-11-29T10:15:03Z.'
    text = '{"messages": [{"role": "system", "content": ' + json.dumps(content) + "}]}"
    doc = read_json(text)
    i = content.index("2026")
    loc = doc.char_location("messages[0].content", i, i + 20, "f.json")
    assert text[loc.col : loc.end_col] == "2026-11-29T10:15:03Z"
    quote = text.index('"Line')
    assert text[string_char_offset(text, quote, content.index("caf") + 3)] == "\\"  # the \u00e9 escape
    assert string_char_offset(text, quote, 10_000) == text.index('"}]}')  # past the end: closing quote


def test_line_index_round_trips() -> None:
    lines = LineIndex("ab\ncde\n\nf")
    for offset, pos in ((0, (1, 0)), (3, (2, 0)), (5, (2, 2)), (7, (3, 0)), (8, (4, 0))):
        assert lines.position(offset) == pos
        assert lines.offset(*pos) == offset


def test_malformed_json_has_line_and_column() -> None:
    with pytest.raises(JsonSyntaxError) as err:
        read_json('{\n  "model": "gpt-4.1",\n  "messages": [\n    {"role": "user" "content": "x"}\n  ]\n}')
    assert (err.value.line, err.value.col + 1) == (4, 21)  # where the ',' is missing
    assert "delimiter" in err.value.reason


def test_json_lines_keep_file_positions_per_line() -> None:
    text = (
        '{"messages": [{"role": "user", "content": "a"}]}\n\n{"messages": [{"role": "user", "content": "b"}\n'
    )
    docs = read_json_lines(text)
    assert isinstance(docs[0], type(read_json("{}"))) and isinstance(docs[1], JsonSyntaxError)
    assert docs[0].location("messages[0].content", "x").line == 1
    assert docs[1].line == 3


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ('{"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}', True),
        ('{"model": "claude-sonnet-4-5", "max_tokens": 10, "system": "You are', True),  # cut off
        ('{"tools": [{"name": "a", "description": "}{]["}], "model": "gpt-4.1"', True),
        ('{"model": "gpt-4.1", "input": [{"role": "user"', True),
        (
            '{"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "x"}}',
            True,
        ),
        ('\ufeff{"messages": []}', True),
        ('{"name": "pkg", "version": "1.0.0", "dependencies": {"messages": []}}', False),
        ('{"compilerOptions": {"strict": true}, "include": ["src"]}', False),
        ('[{"messages": []}]', False),
        ('{"messages": "not a list"}', False),
        ('{"input": "a model config without a model"}', False),
        ('{"model": "gpt-4.1", "temperature": 0.2, "max_tokens": 100}', False),
        ("not json at all", False),
    ],
)
def test_sniff_reads_only_the_first_keys(head: str, expected: bool) -> None:
    assert sniff_request(head.encode()) is expected


def test_sniff_judges_json_lines_by_their_first_line() -> None:
    lines = '{"id": 1, "usage": {}}\n{"messages": [{"role": "user", "content": "x"}]}\n'
    assert top_level_keys(lines) == {"id": "1", "usage": "{"}
    assert not sniff_request(lines.encode())
    assert sniff_request(b"x" * 0 + b'{"messages": [' + b" " * (SNIFF_BYTES + 10))


def test_request_shapes() -> None:
    assert detect_api({"model": "gpt-4.1", "input": "hi"}) == "responses"
    assert detect_api({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": []}) == "messages"
    assert detect_api({"model": "x", "system": "s", "messages": []}) == "messages"
    tool_result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}
    assert detect_api({"model": "my-model", "messages": [tool_result]}) == "messages"
    image = {
        "role": "user",
        "content": [{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}],
    }
    assert detect_api({"model": "my-model", "messages": [image]}) == "messages"
    assert (
        detect_api({"model": "claude-3-5-sonnet", "messages": []}) == "chat"
    )  # an OpenAI-compatible gateway
    assert detect_api({"model": "gpt-4.1", "messages": []}) == "chat"
    assert is_request_body({"model": "gpt-4.1", "tools": []}) and not is_request_body({"model": "gpt-4.1"})


def test_payload_files_unwrap_batches_and_report_what_is_not_a_request() -> None:
    batch = "".join(
        json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": body})
        + "\n"
        for i, body in enumerate(
            [{"model": "gpt-4.1", "messages": [{"role": "user", "content": f"q{i}"}]} for i in range(2)]
        )
    )
    pf = read_payload_file("batch.jsonl", batch + '{"id": "resp", "choices": []}\n')
    assert [p.prefix for p in pf.payloads] == ["body", "body"]
    assert [p.label for p in pf.payloads] == ["batch.jsonl:1", "batch.jsonl:2"]
    assert pf.payloads[1].locate("messages[0].content").line == 2
    assert len(pf.errors) == 1 and pf.errors[0].location.line == 3
    assert "1 of 3 lines are not request payloads" in pf.errors[0].message

    anthropic_batch = json.dumps(
        {"custom_id": "a", "params": {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": []}}
    )
    pf = read_payload_file("claude.jsonl", anthropic_batch + "\n")
    assert pf.payloads[0].api == "messages" and pf.payloads[0].prefix == "params"

    pf = read_payload_file("package.json", '{"name": "x"}')
    assert not pf.payloads and pf.errors[0].message.startswith("Not a request payload")

    pf = read_payload_file("bad.json", '{"messages": [1,]}')
    assert pf.errors[0].message.startswith("Malformed JSON") and pf.errors[0].location.col == 16

    lines_as_json = '{"messages": []}\n{"messages": []}\n'
    assert len(read_payload_file("saved_as.json", lines_as_json).payloads) == 2

    forced = read_payload_file("r.json", '{"model": "x", "messages": []}', shape="responses")
    assert forced.payloads[0].api == "responses"


def test_top_level_keys_of_compact_json() -> None:
    """Compact JSON (no space after a comma) gives every key, each with its value's first character."""
    head = '{"model":"gpt-4o","temperature":0,"messages":[{"role":"user","content":"hi"}]}'
    assert top_level_keys(head) == {"model": '"', "temperature": "0", "messages": "["}


@pytest.mark.parametrize("name", ["req.json", "reqs.jsonl"])
def test_a_byte_order_mark_is_ignored_and_positions_stay_in_the_file(name: str) -> None:
    body = '{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}'
    text = "\ufeff" + body + "\n"
    got = read_payload_file(name, text)
    assert not got.errors
    assert [p.body["model"] for p in got.payloads] == ["gpt-4o"]
    start, end = got.payloads[0].doc.spans["model"]
    assert text[start:end] == '"gpt-4o"'
