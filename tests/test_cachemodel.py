"""The provider cache simulator."""

from __future__ import annotations

from prefixlint.analysis.payloads import PieceCache, pieces_from_request
from prefixlint.model.layout import Layout, Section, Segment
from prefixlint.model.prefix_cache import CacheModel, pieces_from_ids, pieces_from_layout
from prefixlint.model.tokens import tokenizer_for

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
        body = {
            "system": [{"type": "text", "text": WORDS, "cache_control": cc}],
            "messages": [{"role": "user", "content": f"m{i}"} for i in range(n_msgs)],
        }
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
    body = {
        "system": [{"type": "text", "text": WORDS, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": f"m{i}"} for i in range(25)],
    }
    lb = CacheModel.for_provider("anthropic", "claude-sonnet-4-5")
    lb.observe(pieces_from_request(body, "messages", cache), 0)
    body["system"] = WORDS
    body["cache_control"] = {"type": "ephemeral"}
    assert lb.predict(pieces_from_request(body, "messages", cache), 1).cached == 0


def test_anthropic_below_minimum_writes_nothing() -> None:
    model = CacheModel.for_provider("anthropic", "claude-haiku-4-5")  # 4096 minimum
    cache = PieceCache(tokenizer_for("anthropic", None))
    short = WORDS[: len(WORDS) // 4]
    body = {
        "system": [{"type": "text", "text": short, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "q"}],
    }
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
    segs = [
        Segment(Section.SYSTEM, "static " * 300, tokens=600),
        Segment(Section.SYSTEM, "now", static=False, tokens=8),
    ]
    model = CacheModel.for_provider("sglang")
    model.observe(pieces_from_layout(Layout(segs)), 0)
    pred = model.predict(pieces_from_layout(Layout(list(segs))), 1)
    assert pred.cached == 600


def test_growing_conversations_match_an_eagerly_refreshed_model() -> None:
    """A conversation that extends the last recorded request costs only its new pieces (the prefix's
    refreshed expiry is written lazily); predictions and the final state equal a model that writes
    every expiry at once, through TTL expiry, per-call TTLs, rewritten history and eviction."""
    import random

    rng = random.Random(7)
    cache = PieceCache(tokenizer_for("openai", "gpt-4o"))
    for max_nodes in (12, 200_000):
        lazy = CacheModel.for_provider("vllm", "m", max_nodes=max_nodes)
        eager = CacheModel.for_provider("vllm", "m", max_nodes=max_nodes)
        convs = [
            [{"role": "system", "content": f"system {c} " + WORDS[: rng.randint(40, 400)]}] for c in range(3)
        ]
        now = 0.0
        for _ in range(150):
            conv = rng.choice(convs)
            if rng.random() < 0.7 or len(conv) < 3:
                conv.append({"role": "user", "content": WORDS[rng.randint(0, 500) :][: rng.randint(4, 80)]})
            else:
                conv[rng.randrange(1, len(conv))] = {"role": "user", "content": f"rewritten {rng.random()}"}
            pieces = pieces_from_request({"messages": conv}, "chat", cache)
            now += rng.choice([0.0, 1.0, 50.0, 400.0])
            assert lazy.predict(pieces, now) == eager.predict(pieces, now)
            ttl = rng.choice([None, None, 30.0])
            lazy.record(pieces, now, ttl)
            eager.record(pieces, now, ttl)
            eager._flush()  # the eager model keeps nothing pending
        lazy._flush()
        state = {k: (n.end, n.expires, n.sketch) for k, n in lazy._nodes.items()}
        assert state == {k: (n.end, n.expires, n.sketch) for k, n in eager._nodes.items()}
        assert lazy._children == eager._children
