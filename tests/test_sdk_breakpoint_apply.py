"""Where the wrapper writes ``cache_control``, and which part a template's drift check compares."""

from __future__ import annotations

import copy
import dataclasses

from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.model.providers import get_provider
from prefixlint.model.tokens import tokenizer_for
from prefixlint.sdk.breakpoints import apply, choose
from prefixlint.sdk.drift import template_end

CACHE = PieceCache(tokenizer_for("anthropic", "claude-sonnet-4-5"))
BODY = {
    "model": "claude-sonnet-4-5",
    "tools": [{"name": "lookup", "description": "Look a word up.", "input_schema": {"type": "object"}}],
    "system": "You answer questions about the library.",
    "messages": [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        {"role": "user", "content": [{"type": "text", "text": "first"}, "second"]},
    ],
}
EPHEMERAL = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def _pieces() -> list:
    return pieces_from_request(BODY, "messages", CACHE)


def _paths() -> list[str]:
    return [p.path for p in _pieces()]


def test_the_pieces_are_the_blocks_a_breakpoint_can_go_on() -> None:
    assert _paths() == [
        "tools[0]",
        "system",
        "messages[0].content",
        "messages[1].content[0]",
        "messages[2].content[0]",
        "messages[2].content[1]",
    ]


def test_each_kind_of_block_gets_its_control_and_nothing_else_changes() -> None:
    original = copy.deepcopy(BODY)
    pieces = _pieces()
    out = apply(BODY, pieces, [(0, "5m"), (1, "1h"), (2, "5m"), (3, "5m"), (5, "5m")])
    assert original == BODY  # copied along each path, never edited in place
    assert out["tools"] == [{**BODY["tools"][0], "cache_control": EPHEMERAL}]
    assert out["system"] == [{"type": "text", "text": BODY["system"], "cache_control": HOUR}]
    assert out["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "hello", "cache_control": EPHEMERAL}],
    }
    assert out["messages"][1]["content"] == [{"type": "text", "text": "hi", "cache_control": EPHEMERAL}]
    assert out["messages"][2]["content"] == [
        {"type": "text", "text": "first"},
        {"type": "text", "text": "second", "cache_control": EPHEMERAL},
    ]
    assert out["model"] == BODY["model"]
    assert [p.ttl for p in pieces] == ["5m", "1h", "5m", "5m", None, "5m"]
    assert [p.ttl for p in _pieces()] == [None] * 6  # the pieces given were replaced, not edited


def test_a_mark_on_a_part_keeps_the_other_parts_and_messages_as_they_were() -> None:
    out = apply(BODY, _pieces(), [(4, "5m")])
    assert out["messages"][2]["content"][0] == {"type": "text", "text": "first", "cache_control": EPHEMERAL}
    assert out["messages"][2]["content"][1] == "second"
    assert out["messages"][:2] == BODY["messages"][:2]
    assert out["messages"][2]["content"] is not BODY["messages"][2]["content"]
    assert out["messages"][0] is BODY["messages"][0]  # off the path: shared, not copied
    assert out["system"] == BODY["system"] and out["tools"] == BODY["tools"]


def _with_ttls(ttls: dict[int, str]) -> list:
    return [dataclasses.replace(p, ttl=ttls.get(i)) for i, p in enumerate(_pieces())]


def test_a_template_is_the_head_before_the_messages() -> None:
    pieces = _with_ttls({})
    assert template_end(pieces, 6, caller_marks=False) == 2  # tools and system
    assert template_end(pieces, 6, caller_marks=True) == 2  # no caller breakpoint: the head too
    assert template_end(pieces, 1, caller_marks=False) == 1  # ends inside the head: at the end
    assert template_end(pieces, 0, caller_marks=True) == 0


def test_a_template_reaches_the_callers_last_breakpoint_before_its_end() -> None:
    pieces = _with_ttls({1: "5m", 3: "5m", 5: "5m"})
    assert template_end(pieces, 6, caller_marks=True) == 6  # the last piece is marked
    assert template_end(pieces, 5, caller_marks=True) == 4  # after the marked assistant part
    assert template_end(pieces, 3, caller_marks=True) == 2  # back to the head: the system mark
    assert template_end(pieces, 6, caller_marks=False) == 2  # marks of the wrapper's own: ignored
    only_head = _with_ttls({0: "5m"})
    assert template_end(only_head, 6, caller_marks=True) == 2  # a mark inside the head: the head


def test_the_history_breakpoint_stays_before_the_last_user_turn_under_a_prefill() -> None:
    """An assistant prefill after the last user turn does not move the history mark onto that turn."""
    rules = dataclasses.replace(
        get_provider("anthropic").rules_for("claude-sonnet-4-5"), min_cacheable_tokens=0
    )
    body = {**BODY, "messages": [*BODY["messages"], {"role": "assistant", "content": "Sure"}]}
    pieces = pieces_from_request(body, "messages", CACHE)
    marks = [pieces[i].path for i, _ in choose(pieces, rules)]
    assert marks == ["tools[0]", "system", "messages[1].content[0]", "messages[3].content"]
