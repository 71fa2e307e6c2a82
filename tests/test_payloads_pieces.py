"""How a request body is cut into pieces: paths, sections, roles, texts, stability, breakpoints.

Every body shape the three APIs send (chat, responses, messages), SDK objects in a body, the reuse of
an earlier request's pieces, and the cheap head fingerprints that the SDK computes per request.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from prefixlint.analysis.payloads.markers import VolatileText
from prefixlint.analysis.payloads.pieces import (
    MESSAGE_OVERHEAD,
    PieceCache,
    count_pieces,
    head_fingerprint,
    head_key,
    head_pieces,
    pieces_from_request,
    uncounted_pieces,
)
from prefixlint.model.pieces import SKETCH_BLOCK
from prefixlint.model.tokens import Tokenizer, tokenizer_for

TOK = tokenizer_for("openai", "gpt-4.1")
CALL = [{"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}]


class TextPart(BaseModel):
    type: str = "text"
    text: str


class Message(BaseModel):
    role: str
    content: str


def cut(body: dict[str, Any], api: str = "chat", **kw: Any) -> list[tuple]:
    pieces = pieces_from_request(body, api, PieceCache(TOK, snapshots=False), keep_text=True, **kw)
    return [(p.path, p.section.value, p.role, p.text, p.stable, p.ttl, p.message_index) for p in pieces]


def test_chat_body_with_tools_format_parts_and_tool_calls() -> None:
    body = {
        "model": "gpt-4.1",
        "tools": [{"type": "function", "function": {"name": "look"}, "cache_control": {"type": "ephemeral"}}],
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Hi"},
                    {"type": "image_url", "image_url": {"url": "u"}, "cache_control": {"ttl": "1h"}},
                    7,
                ],
            },
            {"role": "assistant", "content": None, "tool_calls": CALL},
            {"role": "tool", "tool_call_id": "c1", "content": {"ok": True}},
            {"role": "assistant", "content": "Done.", "tool_calls": CALL},
            "a bare string",
            {"content": None},
        ],
    }
    calls = '[{"id":"c1","type":"function","function":{"name":"look","arguments":"{}"}}]'
    assert cut(body) == [
        ("tools[0]", "tools", None, '{"type":"function","function":{"name":"look"}}', True, "5m", None),
        ("response_format", "tools", None, '{"type":"json_object"}', True, None, None),
        ("messages[0].content", "system", "developer", "Be brief.", True, None, 0),
        ("messages[1].content[0]", "messages", "user", "Hi", True, None, 1),
        (
            "messages[1].content[1]",
            "messages",
            "user",
            "[image: url u, size not read, ~765 tokens]",  # an image by URL: a stand-in size
            True,
            "1h",
            1,
        ),
        ("messages[1].content[2]", "messages", "user", "7", True, None, 1),
        (
            "messages[2]",
            "messages",
            "assistant",
            '{"content":null,"tool_calls":' + calls + "}",
            True,
            None,
            2,
        ),
        ("messages[3].content", "messages", "tool", '{"ok":true}', True, None, 3),
        ("messages[4].content", "messages", "assistant", "Done.", True, None, 4),
        ("messages[4].tool_calls", "messages", "assistant", calls, True, None, 4),
        ("messages[5]", "messages", None, '"a bare string"', True, None, 5),
        ("messages[6].content", "messages", None, "null", True, None, 6),
    ]


def test_message_tokens_carry_the_overhead_once_per_message() -> None:
    body = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "Hi"}]}
        ]
    }
    a, b = pieces_from_request(body, "chat", PieceCache(TOK, snapshots=False))
    assert (a.tokens, b.tokens) == (1 + MESSAGE_OVERHEAD, 1)
    assert (a.end, b.end) == (1 + MESSAGE_OVERHEAD, 2 + MESSAGE_OVERHEAD)
    assert a.digest == b.digest and a.chain != b.chain


def test_responses_body_instructions_formats_and_string_input() -> None:
    body = {
        "instructions": VolatileText("Today is Monday."),
        "text": {"format": {"type": "json_schema", "name": "answer"}, "verbosity": "low"},
        "output_config": {"format": {"type": "text"}},
        "input": "What now?",
    }
    assert cut(body, "responses") == [
        ("text.format", "tools", None, '{"type":"json_schema","name":"answer"}', True, None, None),
        ("output_config.format", "tools", None, '{"type":"text"}', True, None, None),
        ("instructions", "system", "system", "Today is Monday.", False, None, None),
        ("input", "messages", "user", "What now?", True, None, 0),
    ]
    assert cut(
        {"instructions": "", "text": {"verbosity": "low"}, "input": VolatileText("x")}, "responses"
    ) == [("input", "messages", "user", "x", False, None, 0)]
    assert cut({"instructions": "Stable rules.", "input": 3}, "responses") == [
        ("instructions", "system", "system", "Stable rules.", True, None, None)
    ]


def test_responses_input_items_use_their_type_as_role() -> None:
    body = {"input": [{"type": "function_call_output", "call_id": "c1", "output": "42"}]}
    assert cut(body, "responses") == [
        (
            "input[0]",
            "messages",
            "function_call_output",
            '{"type":"function_call_output","call_id":"c1","output":"42"}',
            True,
            None,
            0,
        )
    ]


def test_messages_body_system_blocks_and_top_level_breakpoint() -> None:
    body = {
        "system": [
            {"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            {"type": "text", "text": VolatileText("Date: today")},
            "plain block",
        ],
        "messages": [{"role": "user", "content": "Q?"}],
        "cache_control": {"type": "ephemeral"},
    }
    assert cut(body, "messages") == [
        ("system[0]", "system", "system", "Rules.", True, "1h", None),
        ("system[1]", "system", "system", "Date: today", False, None, None),
        ("system[2]", "system", "system", "plain block", True, None, None),
        ("messages[0].content", "messages", "user", "Q?", True, "5m", 0),
    ]
    # a top-level cache_control means nothing to the other APIs; an empty or odd system adds no piece
    assert cut(body, "chat")[-1][5] is None
    for system in ("", None, 5):
        assert cut({"system": system, "messages": [{"role": "user", "content": "Q?"}]}, "messages") == [
            ("messages[0].content", "messages", "user", "Q?", True, None, 0)
        ]
    assert cut({"system": VolatileText("Now: 12:00")}, "messages") == [
        ("system", "system", "system", "Now: 12:00", False, None, None)
    ]


def test_sdk_objects_are_cut_as_the_dicts_their_client_sends() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd-value"

    body = {
        "tools": [
            {"type": "function", "function": {"name": "f", "default": Odd()}},
            TextPart(type="text", text="as tool"),
        ],
        "messages": [
            Message(role="system", content="From a model."),
            {
                "role": "user",
                "content": [
                    TextPart(type="text", text="part text"),
                    TextPart(type="input_image", text="img"),
                ],
            },
            {"role": "user", "content": VolatileText("volatile text")},
            {
                "role": "user",
                "content": [VolatileText("volatile part"), {"type": "input_text", "text": "in"}],
            },
        ],
    }
    assert cut(body) == [
        (
            "tools[0]",
            "tools",
            None,
            '{"type":"function","function":{"name":"f","default":"odd-value"}}',
            True,
            None,
            None,
        ),
        ("tools[1]", "tools", None, '{"type":"text","text":"as tool"}', True, None, None),
        ("messages[0].content", "system", "system", "From a model.", True, None, 0),
        ("messages[1].content[0]", "messages", "user", "part text", True, None, 1),
        ("messages[1].content[1]", "messages", "user", '{"type":"input_image","text":"img"}', True, None, 1),
        ("messages[2].content", "messages", "user", "volatile text", False, None, 2),
        ("messages[3].content[0]", "messages", "user", "volatile part", False, None, 3),
        ("messages[3].content[1]", "messages", "user", "in", True, None, 3),
    ]


def _fresh(body: dict[str, Any], api: str = "chat") -> list:
    return pieces_from_request(body, api, PieceCache(TOK, snapshots=False), keep_text=True)


def test_a_growing_history_reuses_pieces_and_sees_edits_in_place() -> None:
    cache = PieceCache(TOK)
    history: list[Any] = [
        {"role": "system", "content": "Answer briefly."},
        Message(role="user", content="First?"),
    ]
    body = {"tools": [{"type": "function", "function": {"name": "f"}}], "messages": history}
    assert pieces_from_request(body, "chat", cache, keep_text=True) == _fresh(body)
    history.append({"role": "assistant", "content": [{"type": "text", "text": "One."}], "tool_calls": CALL})
    history.append({"role": "user", "content": "Second?"})
    assert pieces_from_request(body, "chat", cache, keep_text=True) == _fresh(body)
    history[1].content = "First, edited?"  # an SDK object changed in place
    assert [p.text for p in pieces_from_request(body, "chat", cache, keep_text=True)][2] == "First, edited?"
    history[2]["content"][0]["text"] = "One, edited."  # a dict changed in place
    got = pieces_from_request(body, "chat", cache, keep_text=True)
    assert got == _fresh(body) and got[3].text == "One, edited."
    body["tools"][0]["function"]["name"] = "g"  # the head changed: nothing is reused
    got = pieces_from_request(body, "chat", cache, keep_text=True)
    assert got == _fresh(body) and '"g"' in got[0].text
    # the same messages without text kept: another snapshot, equal to a fresh cut
    assert pieces_from_request(body, "chat", cache) == pieces_from_request(
        body, "chat", PieceCache(TOK, snapshots=False)
    )


def test_an_uncopyable_value_is_never_taken_for_unchanged() -> None:
    class Box:
        def __init__(self) -> None:
            self.value = "first"

        def __str__(self) -> str:
            return self.value

    box = Box()
    cache = PieceCache(TOK)
    history: list[Any] = [
        {"role": "user", "content": [{"type": "data", "data": box}]},
        {"role": "user", "content": "Q"},
    ]
    body = {"messages": history}
    assert (
        pieces_from_request(body, "chat", cache, keep_text=True)[0].text == '{"type":"data","data":"first"}'
    )
    box.value = "second"
    assert (
        pieces_from_request(body, "chat", cache, keep_text=True)[0].text == '{"type":"data","data":"second"}'
    )
    history.append(("a", "tuple", box))
    assert pieces_from_request(body, "chat", cache, keep_text=True) == _fresh(body)


def test_the_conversation_table_is_bounded() -> None:
    cache = PieceCache(TOK)
    for i in range(256):
        pieces_from_request({"messages": [{"role": "user", "content": f"q{i}"}]}, "chat", cache)
    assert len(cache._snapshots) == 256
    pieces_from_request({"messages": [{"role": "user", "content": "one more"}]}, "chat", cache)
    assert len(cache._snapshots) == 1


def test_lone_surrogates_are_counted_by_tiktoken() -> None:
    cache = PieceCache(TOK)
    text = "bad \ud800 char"
    assert cache.entry("messages", "user", text).tokens == len(TOK.encode(text))
    assert cache._encode(text) == TOK.encode(text)
    assert cache._encode("plain words") == TOK.encode("plain words")


def test_an_estimating_tokenizer_sketches_text_blocks() -> None:
    tok = Tokenizer("o200k_base", exact=False, source="estimate")
    cache = PieceCache(tok)
    long, other = "x" * 1000, "x" * 500 + "y" * 500
    a, b = cache.entry("system", None, long), cache.entry("system", None, other)
    assert (
        len(a.sketch) == 1000 // (SKETCH_BLOCK * 4) and a.sketch[:1] == b.sketch[:1] and a.sketch != b.sketch
    )
    assert cache.chunks is None and cache.entry("system", None, "short").sketch == ()


def test_digests_seeds_and_peeks_agree() -> None:
    cache, fresh = PieceCache(TOK), PieceCache(TOK)
    cache.seed("messages", "user", "seeded", 99)
    cache.seed("messages", "user", "seeded", 5)  # already known: kept
    assert cache.entry("messages", "user", "seeded").tokens == 99
    assert cache.peek_digest("messages", "user", "seeded") == fresh.digest("messages", "user", "seeded")
    d = cache.digest("system", None, "remembered")
    assert (
        cache.peek_digest("system", None, "remembered")
        == d
        == fresh.peek_digest("system", None, "remembered")
    )
    assert len(fresh._digests) == 1  # a peek remembers nothing
    assert cache.peek_digest("system", "x", "remembered") != d


def test_uncounted_pieces_counted_later_with_tools_and_breakpoint() -> None:
    body = {
        "tools": [{"name": "t", "input_schema": {}}],
        "system": "Sys.",
        "messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}],
        "cache_control": {"type": "ephemeral", "ttl": "1h"},
    }
    expected = pieces_from_request(body, "messages", PieceCache(TOK, snapshots=False))
    pieces, texts = uncounted_pieces(body, "messages", PieceCache(TOK, snapshots=False))
    assert texts == ['{"name":"t","input_schema":{}}', "Sys.", "Q", "A"] and pieces[-1].ttl == "1h"
    count_pieces(pieces, texts, PieceCache(TOK, snapshots=False))
    assert pieces == expected


def test_head_pieces_fingerprint_and_key() -> None:
    cache = PieceCache(TOK)
    head = {
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "instructions": "Rules.",
        "input": [
            {"role": "system", "content": "One."},
            {"role": "developer", "content": "Two."},
            {"role": "user", "content": "Q"},
            {"role": "system", "content": "Late."},
        ],
    }
    pieces = head_pieces(head, "responses", cache)
    assert [p.path for p in pieces] == ["tools[0]", "instructions", "input[0].content", "input[1].content"]
    assert head_fingerprint(head, "responses", cache) == pieces[-1].chain.hex()[:16]
    only_system = {"messages": [{"role": "system", "content": "One."}, {"role": "system", "content": "Two."}]}
    assert [p.path for p in head_pieces(only_system, "chat", cache)] == [
        "messages[0].content",
        "messages[1].content",
    ]
    assert (
        head_fingerprint(only_system, "chat", cache)
        == head_pieces(only_system, "chat", cache)[-1].chain.hex()[:16]
    )
    volatile = {"system": [{"type": "text", "text": "A."}, {"type": "text", "text": VolatileText("B")}, "C"]}
    assert [p.path for p in head_pieces(volatile, "messages", cache)] == ["system[0]"]
    assert (
        head_fingerprint(volatile, "messages", cache)
        == head_pieces(volatile, "messages", cache)[-1].chain.hex()[:16]
    )
    no_list = {"system": "S", "messages": "text"}
    assert [p.path for p in head_pieces(no_list, "messages", cache)] == ["system"]
    assert (
        head_fingerprint(no_list, "messages", cache)
        == head_pieces(no_list, "messages", cache)[-1].chain.hex()[:16]
    )
    assert head_fingerprint({"messages": [{"role": "user", "content": "Q"}]}, "chat", cache) == ""
    assert head_key({}, "chat") is None
    long = "y" * 300
    assert head_key({"messages": [{"role": "user", "content": long}]}, "chat") == head_key(
        {"system": long + "different tail"}, "messages"
    )
    assert head_key({"input": "abc"}, "responses") != head_key({"input": "abd"}, "responses")
