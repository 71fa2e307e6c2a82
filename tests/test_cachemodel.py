"""The provider cache simulator."""

from __future__ import annotations

from prefixlint.analysis.payloads import PieceCache, pieces_from_request
from prefixlint.cachemodel import CacheModel, pieces_from_ids, pieces_from_layout
from prefixlint.layout import Layout, Section, Segment
from prefixlint.tokens import tokenizer_for

WORDS = " ".join(f"w{i}" for i in range(3000))


def _chat(system: str, user: str, cache: PieceCache) -> list:
    body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
    return pieces_from_request(body, "chat", cache)


def test_openai_minimum_increments_and_ttl() -> None:
    model = CacheModel.for_provider("openai", "gpt-4o")
    cache = PieceCache(tokenizer_for("openai", "gpt-4o"))
    first = _chat(WORDS, "q1", cache)
    assert model.observe(first, now=0).cached == 0
    again = model.observe(_chat(WORDS, "q2", cache), now=10)
    shared = first[0].end
    assert again.cached == 1024 + (shared - 1024) // 128 * 128
    assert again.cached <= again.upper
    late = model.predict(_chat(WORDS, "q3", cache), now=10 + 601)
    assert late.cached == 0 and late.expired
    small = CacheModel.for_provider("openai", "gpt-4o")
    p = _chat("short system", "q", cache)
    small.observe(p, 0)
    pred = small.predict(_chat("short system", "r", cache), 1)
    assert pred.cached == 0 and pred.below_minimum


def test_partial_match_inside_a_piece_uses_block_sketches() -> None:
    model = CacheModel.for_provider("openai", "gpt-4o")
    cache = PieceCache(tokenizer_for("openai", "gpt-4o"))
    model.observe(_chat(WORDS + " date 2026-01-01", "q", cache), 0)
    pred = model.predict(_chat(WORDS + " date 2026-06-30", "q", cache), 1)
    assert pred.shared > 2000  # the system prompts share everything up to the date
    assert pred.cached >= 1024


def test_anthropic_breakpoints_lookback_and_ttls() -> None:
    model = CacheModel.for_provider("anthropic", "claude-sonnet-4-5")  # 1024 minimum
    cache = PieceCache(tokenizer_for("anthropic", "claude-sonnet-4-5"))

    def req(n_msgs: int, ttl: str = "5m") -> list:
        cc = {"type": "ephemeral", "ttl": ttl}
        body = {"system": [{"type": "text", "text": WORDS, "cache_control": cc}],
                "messages": [{"role": "user", "content": f"m{i}"} for i in range(n_msgs)]}
        return pieces_from_request(body, "messages", cache)

    first = model.observe(req(1), 0)
    assert first.cached == 0 and first.written > 0
    # no breakpoint on the new message, but the system breakpoint is read
    assert model.predict(req(3), 60).cached == req(1)[0].end
    assert model.predict(req(3), 60 + 301).cached == 0  # 5m TTL gone
    model_1h = CacheModel.for_provider("anthropic", "claude-sonnet-4-5")
    model_1h.observe(req(1, "1h"), 0)
    assert model_1h.predict(req(2, "1h"), 1800).cached > 0
    # a breakpoint more than 20 blocks after the cached one does not find it
    body = {"system": [{"type": "text", "text": WORDS, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": f"m{i}"} for i in range(25)]}
    lb = CacheModel.for_provider("anthropic", "claude-sonnet-4-5")
    lb.observe(pieces_from_request(body, "messages", cache), 0)
    body["system"] = WORDS
    body["cache_control"] = {"type": "ephemeral"}
    assert lb.predict(pieces_from_request(body, "messages", cache), 1).cached == 0


def test_anthropic_below_minimum_writes_nothing() -> None:
    model = CacheModel.for_provider("anthropic", "claude-haiku-4-5")  # 4096 minimum
    cache = PieceCache(tokenizer_for("anthropic", None))
    short = WORDS[: len(WORDS) // 4]
    body = {"system": [{"type": "text", "text": short, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "q"}]}
    pieces = pieces_from_request(body, "messages", cache)
    assert 1024 < pieces[-1].end < 4096
    pred = model.observe(pieces, 0)
    assert pred.written == 0 and pred.below_minimum
    assert model.predict(pieces, 1).cached == 0


def test_engine_blocks_and_hit_cap_from_token_ids() -> None:
    model = CacheModel.for_provider("vllm")
    ids = list(range(64))
    model.observe(pieces_from_ids(ids), 0)
    assert model.predict(pieces_from_ids(ids), 1).cached == 48  # last token recomputed -> 63 -> 3 blocks
    assert model.predict(pieces_from_ids(ids[:40] + [999] * 24), 1).cached == 32


def test_pieces_from_layout_dynamic_segments_never_match() -> None:
    segs = [Segment(Section.SYSTEM, "static " * 300, tokens=600),
            Segment(Section.SYSTEM, "now", static=False, tokens=8)]
    model = CacheModel.for_provider("sglang")
    model.observe(pieces_from_layout(Layout(segs)), 0)
    pred = model.predict(pieces_from_layout(Layout(list(segs))), 1)
    assert pred.cached == 600
