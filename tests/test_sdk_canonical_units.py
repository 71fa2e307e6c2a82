"""Canonicalization, each switch on its own: what it changes, what it reports, what it leaves alone."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from prefixlint.analysis.payloads.markers import VolatileText
from prefixlint.sdk.canonical import canonicalize, normalize_text, sorted_json

DECOMPOSED = "cafe\u0301"  # "café" as e + combining acute
COMPOSED = "caf\u00e9"


def _opts(**on: bool) -> Any:
    names = ("sort_keys", "sort_tools", "normalize_newlines", "strip_trailing_whitespace", "unicode_nfc")
    return SimpleNamespace(**{n: on.get(n, False) for n in names})


def _tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}, **extra}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("a\r\nb", True, False, False), "a\nb"),
        (("a\r\nb", False, False, False), "a\r\nb"),  # off: untouched
        (("a  \nb\t", False, True, False), "a\nb"),
        (("a  \nb\t", False, False, False), "a  \nb\t"),
        ((DECOMPOSED, False, False, True), COMPOSED),
        ((DECOMPOSED, False, False, False), DECOMPOSED),
        (("a \r\nb", True, True, True), "a\nb"),
    ],
)
def test_each_text_switch_does_only_its_own_change(args: tuple[str, bool, bool, bool], expected: str) -> None:
    assert normalize_text(*args) == expected


def test_a_marked_value_stays_marked_with_its_name() -> None:
    out = normalize_text(VolatileText("x \r\n", "date"), True, True, False)
    assert isinstance(out, VolatileText) and out == "x\n" and out.name == "date"


def test_nothing_on_changes_nothing() -> None:
    body = {"tools": [_tool("b"), _tool("a")], "messages": [{"role": "user", "content": "x \r\n"}]}
    out, changes = canonicalize(body, "chat", _opts())
    assert out == body and changes == []
    assert out is not body  # a shallow copy, so the caller's dict is never edited


def test_tools_sorted_by_name_and_keys_are_reported_separately() -> None:
    b, a = {"function": {"name": "b"}, "type": "function"}, {"type": "function", "function": {"name": "a"}}
    out, changes = canonicalize({"tools": [b, a]}, "chat", _opts(sort_tools=True))
    assert [t["function"]["name"] for t in out["tools"]] == ["a", "b"]
    assert changes == ["tools: canonical order"]

    out, changes = canonicalize({"tools": [b, a]}, "chat", _opts(sort_keys=True))
    assert [list(t) for t in out["tools"]] == [["function", "type"], ["function", "type"]]
    assert changes == ["tools: sorted keys"]  # same order, same dicts: only the keys moved

    out, changes = canonicalize({"tools": [a, b]}, "chat", _opts(sort_tools=True))
    assert changes == [] and out["tools"] == [a, b]


def test_response_formats_get_sorted_keys_where_each_api_keeps_them() -> None:
    schema = {"type": "json_schema", "json_schema": {"schema": {"b": 1, "a": 2}, "name": "x"}}
    out, changes = canonicalize({"response_format": schema}, "chat", _opts(sort_keys=True))
    assert list(out["response_format"]) == ["json_schema", "type"]
    assert list(out["response_format"]["json_schema"]["schema"]) == ["a", "b"]
    assert changes == ["response_format: sorted keys"]

    fmt = {"type": "json_schema", "schema": {"z": 1, "a": 1}}
    out, changes = canonicalize(
        {"text": {"format": fmt, "verbosity": "low"}}, "responses", _opts(sort_keys=True)
    )
    assert list(out["text"]["format"]["schema"]) == ["a", "z"] and out["text"]["verbosity"] == "low"
    assert changes == ["text.format: sorted keys"]

    out, changes = canonicalize(
        {"output_config": {"format": {"b": 1, "a": 1}}}, "messages", _opts(sort_keys=True)
    )
    assert list(out["output_config"]["format"]) == ["a", "b"]
    assert changes == ["output_config.format: sorted keys"]

    done = {"response_format": {"a": 1, "b": {"c": 1}}}
    assert canonicalize(done, "chat", _opts(sort_keys=True))[1] == []


def test_text_normalisation_reaches_system_instructions_and_every_message_shape() -> None:
    body = {
        "system": [{"type": "text", "text": "s \r\n"}],
        "messages": [
            {"role": "user", "content": "u \r\n"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a \n"}, {"type": "image", "source": {}}],
            },
            {"role": "assistant", "tool_calls": []},  # no content: kept as it is
            "not a message",
        ],
    }
    out, changes = canonicalize(
        body, "messages", _opts(normalize_newlines=True, strip_trailing_whitespace=True)
    )
    assert out["system"] == [{"type": "text", "text": "s\n"}]
    assert out["messages"][0] == {"role": "user", "content": "u\n"}
    assert out["messages"][1]["content"] == [{"type": "text", "text": "a\n"}, {"type": "image", "source": {}}]
    assert out["messages"][2:] == body["messages"][2:]
    assert changes == ["system: normalized text", "messages: normalized text"]
    assert body["messages"][0]["content"] == "u \r\n"  # the caller's messages are not edited


def test_responses_input_and_instructions_are_normalised() -> None:
    out, changes = canonicalize(
        {"instructions": DECOMPOSED, "input": DECOMPOSED}, "responses", _opts(unicode_nfc=True)
    )
    assert out == {"instructions": COMPOSED, "input": COMPOSED}
    assert changes == ["instructions: normalized text", "input: normalized text"]
    out, changes = canonicalize(
        {"input": [{"role": "user", "content": DECOMPOSED}]}, "responses", _opts(unicode_nfc=True)
    )
    assert out["input"] == [{"role": "user", "content": COMPOSED}] and changes == ["input: normalized text"]
    _, changes = canonicalize(
        {"messages": [{"role": "user", "content": COMPOSED}]}, "chat", _opts(unicode_nfc=True)
    )
    assert changes == []


def test_sorted_json_sorts_dicts_inside_lists_and_takes_keys_of_mixed_types() -> None:
    assert [list(d) for d in sorted_json([{"b": 1, "a": 2}, {"d": 1, "c": 2}])] == [["a", "b"], ["c", "d"]]
    assert list(sorted_json({"b": 1, 2: 2, "a": 3})) == [2, "a", "b"]  # compared as text, never a TypeError


def test_tool_keys_sorted_at_any_depth_are_reported_and_sorted_ones_are_not() -> None:
    deep = {"type": "function", "function": {"parameters": {"type": "object"}, "name": "a"}}
    out, changes = canonicalize({"tools": [deep]}, "chat", _opts(sort_keys=True))
    assert list(out["tools"][0]["function"]) == ["name", "parameters"]
    assert changes == ["tools: sorted keys"]
    tidy = {"function": {"name": "a", "parameters": {"type": "object"}}, "type": "function"}
    assert canonicalize({"tools": [tidy]}, "chat", _opts(sort_keys=True, sort_tools=True))[1] == []


def test_tools_moved_and_resorted_report_both_changes_against_their_own_keys() -> None:
    b = {"function": {"name": "b"}, "type": "function"}  # keys already sorted
    a = {"type": "function", "function": {"name": "a"}}  # keys out of order
    out, changes = canonicalize({"tools": [b, a]}, "chat", _opts(sort_keys=True, sort_tools=True))
    assert [list(t) for t in out["tools"]] == [["function", "type"], ["function", "type"]]
    assert changes == ["tools: canonical order", "tools: sorted keys"]
    tidy_b = {"function": {"name": "b"}, "type": "function"}
    tidy_a = {"function": {"name": "a"}, "strict": True, "type": "function"}  # other keys, all sorted
    _, changes = canonicalize({"tools": [tidy_b, tidy_a]}, "chat", _opts(sort_keys=True, sort_tools=True))
    assert changes == ["tools: canonical order"]  # moved, but no tool's keys changed


def test_tools_that_are_not_a_list_are_left_as_given() -> None:
    given = ({"name": "b"}, {"name": "a"})
    out, changes = canonicalize({"tools": given}, "chat", _opts(sort_keys=True, sort_tools=True))
    assert out["tools"] is given and changes == []


def test_nested_formats_already_sorted_report_no_change() -> None:
    for key, sub, api in (("text", "format", "responses"), ("output_config", "format", "messages")):
        body = {key: {sub: {"a": 1, "b": {"c": 1}}}}
        out, changes = canonicalize(body, api, _opts(sort_keys=True))
        assert changes == [] and out[key][sub] == body[key][sub]
