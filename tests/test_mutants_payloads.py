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
