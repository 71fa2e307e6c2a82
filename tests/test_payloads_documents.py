"""Payload documents: a JSON list of requests and wrapped batch lines, paths and locations inside
them, the cheap key sniffing of a file's head, API detection, and deep or odd JSON."""

from __future__ import annotations

import json

import pytest

from prefixlint.analysis.payloads.documents import read_payload_file
from prefixlint.analysis.payloads.json_reader import JsonSyntaxError, read_json
from prefixlint.analysis.payloads.shapes import detect_api, is_request_body
from prefixlint.analysis.payloads.sniff import top_level_keys
from prefixlint.model.layout import SourceLocation

CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "Q1"}]}
BATCH = {"custom_id": "x", "body": {"model": "gpt-4.1", "messages": [{"role": "user", "content": "Q2"}]}}


def at(loc: SourceLocation | None) -> tuple | None:
    return (loc.path, loc.line, loc.col) if loc else None


def test_a_json_list_holds_requests_and_wrapped_bodies() -> None:
    text = json.dumps([CHAT, BATCH, 3, {"nothing": 1}], indent=1)
    pf = read_payload_file("reqs.json", text)
    assert pf.errors == []
    first, second = pf.payloads
    assert (first.label, first.prefix, first.shared, first.api) == ("reqs.json:2", "[0]", True, "chat")
    assert (second.label, second.prefix, second.line) == ("reqs.json:13", "[1].body", 13)
    assert [first.full_path(p) for p in ("", "messages[0]", "[0]")] == ["[0]", "[0].messages[0]", "[0][0]"]
    assert second.full_path("messages[0]") == "[1].body.messages[0]" and second.full_path("") == "[1].body"
    assert at(first.locate("")) == ("reqs.json", 2, 1)
    assert at(second.locate("messages[0].content")) == ("reqs.json", 18, 16)
    assert read_payload_file("one.json", json.dumps(CHAT)).payloads[0].full_path("messages") == "messages"
    assert read_payload_file("one.json", json.dumps(CHAT)).payloads[0].label == "one.json"


def test_a_list_without_requests_is_an_error() -> None:
    pf = read_payload_file("none.json", json.dumps([1, {"nothing": 1}, [CHAT]]))
    assert pf.payloads == [] and [e.code for e in pf.errors] == ["PFX001"]


def test_string_locations_follow_escapes() -> None:
    doc = read_json('{"a": 1, "s": "x\\u00e9y"}')
    assert doc.char_location("a", 0, 1, "f") == doc.location("a", "f")
    assert at(doc.location("a", "f")) == ("f", 1, 6)
    assert doc.char_location("nope", 0, 1, "f") is None
    assert doc.char_location("s", 1, 2, "f") == SourceLocation("f", 1, 16, 1, 22)
    with pytest.raises(JsonSyntaxError) as err:
        read_json("x\n" + "[" * 100_000, start=2)
    assert (err.value.reason, err.value.line, err.value.col) == ("too deeply nested", 2, 0)


def test_top_level_keys_of_a_file_head() -> None:
    assert top_level_keys('\ufeff {"model": "x", "messages": [') == {"model": '"', "messages": "["}
    assert top_level_keys('{"a": 1, "b"') == {"a": "1"}
    assert top_level_keys('{"a" 1}') == {}
    assert top_level_keys("{ 3") == {}
    assert top_level_keys("[1]") == {}


def test_api_detection_and_request_shapes() -> None:
    image = {"type": "image", "source": {"type": "base64", "data": "x"}}
    assert detect_api({"messages": [{"role": "user", "content": ["str", image]}]}) == "messages"
    assert (
        detect_api({"messages": [{"role": "user", "content": [{"type": "image", "source": "x"}]}]}) == "chat"
    )
    assert detect_api({"messages": ["x"]}) == "chat"
    assert detect_api(
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "t", "cache_control": {}}]}]}
    ) == ("messages")
    assert [is_request_body(v) for v in (3, {"messages": []}, {"messages": "x"})] == [False, True, False]


def test_json_lines_with_blank_lines_and_empty_containers() -> None:
    text = "\n" + json.dumps({**CHAT, "tools": [], "metadata": {}}) + "\n\n" + json.dumps(CHAT) + "\n"
    pf = read_payload_file("s.jsonl", text)
    assert pf.errors == [] and [p.line for p in pf.payloads] == [2, 4]
    doc = read_json('{"a": [], "b": {}, "c": [ ], "d": [1, {}], "e": "x"}')
    assert [doc.spans[k] for k in ("a", "b", "c", "d[1]", "e")] == [
        (6, 8),
        (15, 17),
        (24, 27),
        (38, 40),
        (48, 51),
    ]
