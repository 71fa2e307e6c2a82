"""Payload analysis: request dicts to pieces and layouts."""

from __future__ import annotations

from prefixlint.analysis.payloads import PieceCache, layout_from_request, pieces_from_request
from prefixlint.analysis.payloads.markers import VolatileText
from prefixlint.model.layout import Section
from prefixlint.model.tokens import tokenizer_for

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}


def test_chat_layout_is_in_prefix_order_with_last_user_flagged() -> None:
    body = {
        "model": "gpt-4o",
        "tools": [TOOL],
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ],
    }
    layout = layout_from_request(body)
    expected = [Section.TOOLS, Section.TOOLS, Section.SYSTEM] + [Section.MESSAGES] * 3
    assert [s.section for s in layout] == expected
    assert [s.label for s in layout][:3] == ["tools[0]", "response_format", "messages[0].content"]
    assert [s.is_last_user_message for s in layout] == [False] * 5 + [True]
    assert all(s.tokens > 0 for s in layout)
    assert layout.tokens_exact


def test_anthropic_and_responses_shapes() -> None:
    msgs = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 5,
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }
    layout = layout_from_request(msgs)
    assert layout.sink_name == "messages"
    assert [s.label for s in layout] == ["system[0]", "messages[0].content[0]"]
    assert layout.segments[0].cache_control is not None and layout.segments[0].cache_control.ttl == "1h"
    assert not layout.tokens_exact  # no public Anthropic tokenizer
    resp = layout_from_request({"model": "gpt-4o", "instructions": "sys", "input": "hello"})
    assert [s.label for s in resp] == ["instructions", "input"]


def test_volatile_values_are_dynamic_segments() -> None:
    body = {
        "model": "gpt-4o",
        "messages": [
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": "static"},
                    {"type": "text", "text": VolatileText("2026-11-29", "date")},
                ],
            },
            {"role": "user", "content": "q"},
        ],
    }
    layout = layout_from_request(body)
    assert [s.static for s in layout] == [True, False, True]
    assert layout.first_breaking_index() == 1


def test_piece_cache_only_tokenizes_new_content() -> None:
    cache = PieceCache(tokenizer_for("openai", "gpt-4o"))
    history = [{"role": "system", "content": "x " * 500}, {"role": "user", "content": "first"}]
    first = pieces_from_request({"messages": history}, "chat", cache)
    assert cache.misses == 2
    history += [{"role": "assistant", "content": "answer"}, {"role": "user", "content": "second"}]
    second = pieces_from_request({"messages": history}, "chat", cache)
    assert cache.misses == 4  # only the two new messages
    assert [p.chain for p in second[:2]] == [p.chain for p in first]
    assert second[-1].end == sum(p.tokens for p in second)


def test_cache_control_does_not_change_hashes() -> None:
    cache = PieceCache(tokenizer_for("anthropic", None))
    plain = {
        "system": "s",
        "tools": [{"name": "t", "input_schema": {}}],
        "messages": [{"role": "user", "content": "u"}],
    }
    marked = {
        "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "t", "input_schema": {}, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "u"}],
        "cache_control": {"type": "ephemeral"},
    }
    a = pieces_from_request(plain, "messages", cache)
    b = pieces_from_request(marked, "messages", cache)
    assert [p.chain for p in a] == [p.chain for p in b]
    assert [p.ttl for p in b] == ["5m", "5m", "5m"]


def test_key_order_changes_the_hash() -> None:
    cache = PieceCache(tokenizer_for("openai", "gpt-4o"))
    a = pieces_from_request({"tools": [{"a": 1, "b": 2}]}, "chat", cache)
    b = pieces_from_request({"tools": [{"b": 2, "a": 1}]}, "chat", cache)
    assert a[0].digest != b[0].digest


def test_appended_history_reuses_pieces_and_matches_a_fresh_computation() -> None:
    tok = tokenizer_for("openai", "gpt-4o")
    cache = PieceCache(tok)
    history = [{"role": "system", "content": "s " * 200}, {"role": "user", "content": "u1"}]
    pieces_from_request({"messages": history}, "chat", cache)
    history += [{"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"}]
    reused = pieces_from_request({"messages": history}, "chat", cache)
    fresh = pieces_from_request({"messages": [dict(m) for m in history]}, "chat", PieceCache(tok))
    assert [(p.path, p.chain, p.end) for p in reused] == [(p.path, p.chain, p.end) for p in fresh]
    # a message whose content was replaced is recomputed, not reused
    history[1]["content"] = "edited"
    edited = pieces_from_request({"messages": history}, "chat", cache)
    assert edited[1].digest != reused[1].digest and edited[0].chain == reused[0].chain
    # new tools invalidate the reuse: the chain starts with them
    with_tools = pieces_from_request({"messages": history, "tools": [TOOL]}, "chat", cache)
    assert with_tools[0].path == "tools[0]" and with_tools[1].chain != edited[0].chain


def test_a_piece_digest_is_the_same_from_the_cache_and_fresh() -> None:
    """The digest of a piece already tokenized (a cache hit) is the one a fresh cache computes, and
    differs from another text's: two requests compare by it."""
    tok = tokenizer_for("openai", "gpt-4o")
    warm, cold = PieceCache(tok), PieceCache(tok)
    warm.entry("system", "system", "Be brief.")
    hit = warm.digest("system", "system", "Be brief.")
    assert isinstance(hit, bytes) and hit == cold.digest("system", "system", "Be brief.")
    assert hit != warm.digest("system", "system", "Be long.")


def test_a_key_that_is_not_an_identifier_is_quoted_as_written() -> None:
    """A path into a payload names a non-identifier key as JSON, with its characters as written."""
    from prefixlint.analysis.payloads.json_reader import child_path

    assert child_path("metadata", "café menu") == 'metadata["café menu"]'
    assert child_path("", "tenant") == "tenant"


def test_shared_tokens_of_an_estimating_tokenizer_stop_at_the_first_difference() -> None:
    """Without a real encoding, the shared prefix is the estimate of the common characters."""
    from prefixlint.analysis.payloads.divergence import shared_tokens
    from prefixlint.model.tokens import Tokenizer

    est = Tokenizer("o200k_base", exact=False, source="estimate")
    head = "You plan train journeys across Europe and list the changes. "
    a, b = head + "Alpha " * 40, head + "Beta " * 40
    assert shared_tokens(est, a, b) == est.count(head) < est.count(a)
    assert shared_tokens(est, a, a) == est.count(a)


def test_a_message_with_null_content_is_one_piece_of_its_other_fields() -> None:
    """``{"role": "assistant", "content": null}`` (a turn that only called tools, logged without its
    calls) is one piece of what it holds besides its role, labelled with the message's path."""
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "S"},
            {"role": "assistant", "content": None},
            {"role": "user", "content": "c"},
        ],
    }
    assert [(s.label, s.text) for s in layout_from_request(body)] == [
        ("messages[0].content", "S"),
        ("messages[1]", '{"content":null}'),
        ("messages[2].content", "c"),
    ]
