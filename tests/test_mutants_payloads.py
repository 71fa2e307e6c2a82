"""Payload analysis details that hand-made changes to the analyzer (mutants) went through unseen."""

from __future__ import annotations

import json

from prefixlint.analysis.payloads.align import align_group, align_pair
from prefixlint.analysis.payloads.documents import read_payload_file
from prefixlint.analysis.payloads.pieces import (
    PieceCache,
    count_pieces,
    pieces_from_request,
    uncounted_pieces,
)
from prefixlint.analysis.payloads.samples import make_sample
from prefixlint.model.tokens import tokenizer_for

SYSTEM = " ".join(["Answer in short plain sentences and cite the manual page for every step."] * 30)


def chat(*turns: tuple[str, str]) -> dict:
    return {"model": "gpt-4.1", "messages": [{"role": r, "content": c} for r, c in turns]}


def test_text_only_later_samples_have_sits_at_the_end_of_the_reference() -> None:
    question = "What is the weather like today in the city?"
    base = chat(("system", SYSTEM), ("user", question))
    longer = chat(("system", SYSTEM), ("user", question), ("assistant", "Sunny and warm, a light breeze."))
    tok = tokenizer_for("openai", "gpt-4.1")
    cache = PieceCache(tok)
    pf = read_payload_file("s.jsonl", "".join(json.dumps(b) + "\n" for b in (base, longer)))
    ref, other = (
        make_sample(p.label, pieces_from_request(p.body, p.api, cache, keep_text=True), tok, p)
        for p in pf.payloads
    )
    (span,) = align_group([(ref, []), (other, align_pair(ref, other))], tok).spans
    assert span.path == "messages[1].content"
    assert (span.char_start, span.char_end) == (len(question), len(question))
    assert span.values == ["", "Sunny and warm, a light breeze."]


def test_pieces_counted_later_equal_pieces_cut_at_once() -> None:
    tok = tokenizer_for("openai", "gpt-4.1")
    body = chat(
        ("system", SYSTEM), ("user", "First question?"), ("assistant", "An answer."), ("user", "More?")
    )
    expected = pieces_from_request(body, "chat", PieceCache(tok, snapshots=False))
    pieces, texts = uncounted_pieces(body, "chat", PieceCache(tok, snapshots=False))
    assert all(p.tokens == 0 for p in pieces)
    count_pieces(pieces, texts, PieceCache(tok, snapshots=False))
    assert pieces == expected
    assert pieces[0].tokens > 100 and pieces[-1].end == sum(p.tokens for p in pieces)


def test_every_table_of_the_piece_cache_is_bounded() -> None:
    tok = tokenizer_for("openai", "gpt-4.1")
    fresh = PieceCache(tok, snapshots=False)
    counted, seeded, hashed = (PieceCache(tok, max_entries=8, snapshots=False) for _ in range(3))
    prev = b""
    for i in range(30):
        text = f"message number {i}"
        assert counted.entry("messages", "user", text) == fresh.entry("messages", "user", text)
        seeded.seed("messages", "assistant", text, i)
        assert hashed.digest("system", None, text) == fresh.digest("system", None, text)
        prev = hashed.chain(prev, hashed.digest("system", None, text))
        if i == 4:  # below the bound, nothing is dropped
            assert [len(counted._entries), len(seeded._entries)] == [5, 5]
            assert [len(hashed._digests), len(hashed._chains)] == [5, 5]
            misses = counted.misses
            counted.entry("messages", "user", "message number 0")
            assert counted.misses == misses
        assert (
            max(len(counted._entries), len(seeded._entries), len(hashed._digests), len(hashed._chains)) <= 8
        )
    assert seeded.entry("messages", "assistant", "message number 29").tokens == 29
    assert hashed.chain(b"", hashed.digest("system", None, "message number 0")) == fresh.chain(
        b"", fresh.digest("system", None, "message number 0")
    )


def _covers(ops: list, a1: int, a2: int, b1: int, b2: int) -> bool:
    """The opcodes run without a gap from ``(a1, b1)`` to ``(a2, b2)``."""
    i, j = a1, b1
    for _tag, x1, x2, y1, y2 in ops:
        if (x1, y1) != (i, j):
            return False
        i, j = x2, y2
    return (i, j) == (a2, b2)


def test_token_opcodes_cover_both_ranges_with_common_ends_equal() -> None:
    from prefixlint.analysis.payloads.align import MAX_DIFF_UNITS, _token_opcodes

    a = [0, 1, 2, 3, 4, 5, 6]
    b = [9, 1, 2, 7, 4, 5, 8]
    ops = _token_opcodes(a, b, 1, 6, 1, 6)
    assert ops[0] == ("equal", 1, 3, 1, 3) and ops[-1] == ("equal", 4, 6, 4, 6)
    assert _covers(ops, 1, 6, 1, 6)
    n = MAX_DIFF_UNITS + 5  # middles too long to diff: one replace between the common ends
    a, b = [0, *range(100, 100 + n), 1], [0, *range(500, 500 + n), 1]
    ops = _token_opcodes(a, b, 0, len(a), 0, len(b))
    end = n + 1
    assert ops == [("equal", 0, 1, 0, 1), ("replace", 1, end, 1, end), ("equal", end, end + 1, end, end + 1)]


def test_a_value_grows_to_the_start_of_the_text() -> None:
    from prefixlint.analysis.payloads.kinds import value_around

    assert value_around("ab-cd done", 3, 4) == (0, 5)
    assert value_around("x ab-cd done", 5, 6) == (2, 7)


def test_an_empty_first_prompt_aligns_as_text_the_others_add() -> None:
    from prefixlint.analysis.payloads.compare import Input, compare, read_samples
    from prefixlint.model.settings import Settings

    inputs = [Input("a.txt", ""), Input("b.txt", "hello world"), Input("c.txt", "hello there")]
    samples, cache, texts = read_samples(inputs, Settings(), as_text=True)
    (span,) = compare(samples, cache, "openai", "gpt-4.1", texts).to_dict()["alignment"]["varying_spans"]
    assert span["path"] == "prompt" and span["token"] == 0
    assert span["values"] == ["", "hello world", "hello there"]


def test_a_top_level_cache_control_is_located_at_its_key() -> None:
    from prefixlint.analysis.payloads.analyze import analyze_payload_file
    from prefixlint.model.settings import Settings

    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "cache_control": {"type": "ephemeral"},
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "Hi there"}],
    }
    (layout,) = analyze_payload_file("req.json", json.dumps(body, indent=2), Settings()).layouts
    cc = layout.segments[-1].cache_control
    assert cc is not None and cc.ttl == "5m"
    assert cc.location is not None and (cc.location.path, cc.location.line) == ("req.json", 4)


def test_inputs_are_read_in_order_with_standard_input_once(tmp_path) -> None:
    import pytest

    from prefixlint.analysis.payloads.compare import InputError, load_inputs

    a, b = tmp_path / "a.json", tmp_path / "b.txt"
    a.write_text('{"messages": []}', encoding="utf-8")
    b.write_text("plain prompt", encoding="utf-8")
    got = load_inputs([str(a), "-", str(b)], lambda: "from stdin")
    assert [(i.name, i.text) for i in got] == [
        (str(a), '{"messages": []}'),
        ("-", "from stdin"),
        (str(b), "plain prompt"),
    ]
    with pytest.raises(InputError, match="standard input can be given once"):
        load_inputs(["-", "-"], lambda: "x")


def test_head_fingerprint_hashes_the_leading_system_messages_of_each_api() -> None:
    from prefixlint.analysis.payloads.pieces import head_fingerprint, head_pieces

    cache = PieceCache(tokenizer_for("openai", "gpt-4.1"), snapshots=False)
    for api, key in (("chat", "messages"), ("responses", "input")):
        body = {
            "model": "gpt-4.1",
            key: [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}],
        }
        other = {**body, key: [{"role": "system", "content": SYSTEM + " Be brief."}, body[key][1]]}
        fp = head_fingerprint(body, api, cache)
        assert fp == head_pieces(body, api, cache)[-1].chain.hex()[:16]
        assert fp != head_fingerprint(other, api, cache)


def test_a_text_block_with_cache_control_means_anthropic_messages() -> None:
    from prefixlint.analysis.payloads.shapes import detect_api

    block = {"type": "text", "text": "Summarise the report.", "cache_control": {"type": "ephemeral"}}
    assert (
        detect_api({"model": "some-model", "messages": [{"role": "user", "content": [block]}]}) == "messages"
    )
    plain = {"type": "text", "text": "Summarise the report."}
    assert detect_api({"model": "some-model", "messages": [{"role": "user", "content": [plain]}]}) == "chat"
