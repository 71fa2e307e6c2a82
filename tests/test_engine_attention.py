"""Attention over paged KV: the lower-right causal mask, GQA, gather from shuffled pages, and the
whole paged model against the dense forward (including chunked prefill)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")
torch.set_num_threads(1)  # tiny matrices: extra threads only contend on a busy CI box

import torch.nn.functional as F  # noqa: E402

from prefixlint.engine import EngineConfig, LLMEngine, SamplingParams  # noqa: E402
from prefixlint.engine.layers import attention  # noqa: E402
from prefixlint.engine.layers.attention import (  # noqa: E402
    PagedBatch,
    SeqSlice,
    causal_attention,
    lower_right_causal_mask,
    paged_attention,
    prefix_suffix_attention,
)
from prefixlint.engine.model_runner import consecutive_run  # noqa: E402

pytestmark = pytest.mark.engine
ATOL = 1e-5  # float32 on CPU


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Plain loops: query i (absolute position S-L+i) attends to keys 0..S-L+i."""
    q_len, heads, dim = q.shape
    kv_len, kv_heads = k.shape[0], k.shape[1]
    out = torch.empty_like(q)
    for h in range(heads):
        kh, vh = k[:, h // (heads // kv_heads)], v[:, h // (heads // kv_heads)]
        for i in range(q_len):
            visible = kv_len - q_len + i + 1
            scores = (kh[:visible] @ q[i, h]) / math.sqrt(dim)
            out[i, h] = torch.softmax(scores, 0) @ vh[:visible]
    return out


def test_lower_right_mask_shape() -> None:
    mask = lower_right_causal_mask(2, 5)
    assert mask.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    assert torch.equal(lower_right_causal_mask(4, 4), torch.ones(4, 4, dtype=torch.bool).tril())


@pytest.mark.parametrize(("q_len", "kv_len"), [(5, 5), (1, 7), (3, 11), (6, 9)])
def test_causal_attention_matches_reference_with_gqa(q_len: int, kv_len: int) -> None:
    g = torch.Generator().manual_seed(q_len * 100 + kv_len)
    q = torch.randn(q_len, 4, 8, generator=g)
    k, v = torch.randn(kv_len, 2, 8, generator=g), torch.randn(kv_len, 2, 8, generator=g)
    got = causal_attention(q, k, v, 8**-0.5)
    torch.testing.assert_close(got, reference_attention(q, k, v), atol=ATOL, rtol=0)


def test_is_causal_true_would_be_wrong_with_a_cached_prefix() -> None:
    """The pitfall: SDPA's is_causal=True is upper-left aligned, so with L < S it hides keys the
    queries must see. Our result differs from it and matches the reference."""
    g = torch.Generator().manual_seed(1)
    q = torch.randn(3, 2, 8, generator=g)
    k, v = torch.randn(8, 2, 8, generator=g), torch.randn(8, 2, 8, generator=g)
    upper_left = F.scaled_dot_product_attention(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), is_causal=True
    ).transpose(0, 1)
    ours = causal_attention(q, k, v, 8**-0.5)
    assert (ours - upper_left).abs().max() > 1e-2
    torch.testing.assert_close(ours, reference_attention(q, k, v), atol=ATOL, rtol=0)


def test_paged_attention_gathers_shuffled_pages() -> None:
    g = torch.Generator().manual_seed(2)
    bs, num_blocks, kv_heads, dim = 4, 10, 2, 8
    k_cache, v_cache = torch.zeros(num_blocks, bs, kv_heads, dim), torch.zeros(num_blocks, bs, kv_heads, dim)
    # Sequence A: 7 cached tokens in blocks [6, 2], 3 new; sequence B: 5 new tokens in blocks [9, 0].
    ka, va = torch.randn(10, kv_heads, dim, generator=g), torch.randn(10, kv_heads, dim, generator=g)
    kb, vb = torch.randn(5, kv_heads, dim, generator=g), torch.randn(5, kv_heads, dim, generator=g)
    table_a, table_b = [6, 2, 4], [9, 0]
    for p in range(7):
        k_cache[table_a[p // bs], p % bs], v_cache[table_a[p // bs], p % bs] = ka[p], va[p]
    k_cache[3], v_cache[3] = 7.0, 7.0  # garbage in a block nobody owns
    qa, qb = torch.randn(3, 4, dim, generator=g), torch.randn(5, 4, dim, generator=g)
    slots = [table_a[p // bs] * bs + p % bs for p in range(7, 10)] + [
        table_b[p // bs] * bs + p % bs for p in range(5)
    ]
    batch = PagedBatch(
        torch.tensor(slots),
        [SeqSlice(0, 3, 10, torch.tensor(table_a)), SeqSlice(3, 5, 5, torch.tensor(table_b))],
    )
    out = paged_attention(
        torch.cat([qa, qb]),
        torch.cat([ka[7:], kb]),
        torch.cat([va[7:], vb]),
        k_cache,
        v_cache,
        batch,
        dim**-0.5,
    )
    torch.testing.assert_close(out[:3], reference_attention(qa, ka, va), atol=ATOL, rtol=0)
    torch.testing.assert_close(out[3:], reference_attention(qb, kb, vb), atol=ATOL, rtol=0)
    assert torch.equal(k_cache[6, 3], ka[3]) and torch.equal(k_cache[4, 1], ka[9])  # new KV stored


@pytest.mark.parametrize(
    ("table", "run"), [([], 0), ([5], 1), ([2, 3, 4], 3), ([2, 3, 5, 6], 2), ([7, 6], 1), ([0, 2], 1)]
)
def test_consecutive_run_counts_the_leading_run(table: list[int], run: int) -> None:
    assert consecutive_run(table) == run


def test_consecutive_pages_are_read_in_place_and_others_gathered() -> None:
    """Pages [3, 4, 5, 9]: 12 tokens (pages 3-5) are a view of the pool, 13 need page 9 too and
    are gathered; both hold what the pages hold."""
    cache = torch.randn(10, 4, 2, 8)
    table = [3, 4, 5, 9]
    s = SeqSlice(0, 1, 14, torch.tensor(table), consecutive_run(table), table[0])
    for tokens, in_place in [(12, True), (13, False), (5, True)]:
        got = attention._gather(cache, s, tokens)
        want = cache[torch.tensor(table)].flatten(0, 1)[:tokens]
        assert torch.equal(got, want)
        shares = got.untyped_storage().data_ptr() == cache.untyped_storage().data_ptr()
        assert shares is in_place


@pytest.mark.parametrize("chunk", [2048, 7])
def test_paged_engine_matches_dense_forward(chunk: int) -> None:
    """Prefill (whole or in chunks of 7) and decode over paged KV give the dense model's logits."""
    eng = LLMEngine(
        EngineConfig(
            preset="tiny",
            device="cpu",
            num_blocks=64,
            block_size=4,
            max_model_len=256,
            max_num_batched_tokens=chunk,
        )
    )
    prompt = eng.tokenizer.encode("The quick brown fox jumps over the lazy dog, again and again.")
    out = eng.generate(prompt, SamplingParams(max_tokens=4, temperature=0.0, return_logits=True))
    dense = eng.runner.model.forward_dense(torch.tensor(prompt + out.token_ids), all_logits=True)
    n = len(prompt)
    valid = torch.isfinite(out.logits)  # ids the tokenizer cannot decode are masked to -inf
    torch.testing.assert_close(out.logits[valid], dense[n - 1 : n + 3][valid], atol=1e-4, rtol=1e-4)
    assert out.token_ids == dense[n - 1 : n + 3].masked_fill(~valid, -torch.inf).argmax(-1).tolist()


@pytest.mark.parametrize(("prefix", "new"), [(1, 1), (1, 6), (13, 5), (40, 17), (3, 64)])
def test_prefix_suffix_split_matches_the_reference_and_the_masked_path(
    prefix: int, new: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = torch.Generator().manual_seed(prefix * 1000 + new)
    q = torch.randn(new, 8, 16, generator=g)
    k, v = torch.randn(prefix + new, 2, 16, generator=g), torch.randn(prefix + new, 2, 16, generator=g)
    split = prefix_suffix_attention(q, k[:prefix], v[:prefix], k[prefix:], v[prefix:], 16**-0.5)
    torch.testing.assert_close(split, reference_attention(q, k, v), atol=ATOL, rtol=0)
    monkeypatch.setattr(attention, "_CPU_FLASH_WITH_LSE", None)  # a torch without the kernel
    masked = prefix_suffix_attention(q, k[:prefix], v[:prefix], k[prefix:], v[prefix:], 16**-0.5)
    torch.testing.assert_close(masked, split, atol=ATOL, rtol=0)


def test_chunked_prefill_builds_no_dense_mask_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The served path (chunked prefill over an earlier chunk, and a cache hit) never falls back to
    the boolean mask on this torch, and still equals the dense forward."""
    assert attention._CPU_FLASH_WITH_LSE is not None, "this torch lacks the CPU flash kernel with lse"
    assert attention.attention_backend(torch.device("cpu"), torch.float32) == "sdpa, prefix/suffix split"

    def no_mask(*args: object, **kw: object) -> None:
        raise AssertionError("a dense boolean mask was built")

    monkeypatch.setattr(attention, "lower_right_causal_mask", no_mask)
    eng = LLMEngine(
        EngineConfig(
            preset="tiny",
            device="cpu",
            num_blocks=64,
            block_size=4,
            max_model_len=256,
            max_num_batched_tokens=9,
        )
    )
    prompt = eng.tokenizer.encode("Chunked prefill over a prefix is split, not masked: " * 3)
    greedy = SamplingParams(max_tokens=3, temperature=0.0, return_logits=True)
    first, hit = eng.generate(prompt, greedy), eng.generate(prompt, greedy)
    assert hit.num_cached_tokens > 9 and hit.token_ids == first.token_ids
    dense = eng.runner.model.forward_dense(torch.tensor(prompt + first.token_ids), all_logits=True)
    n = len(prompt)
    valid = torch.isfinite(first.logits)
    for out in (first, hit):
        torch.testing.assert_close(out.logits[valid], dense[n - 1 : n + 2][valid], atol=1e-4, rtol=1e-4)
