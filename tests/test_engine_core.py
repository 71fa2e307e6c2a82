"""Engine behaviour on CPU with the tiny preset: cached vs uncached equality, salt isolation,
pool boundaries, admission, startup refusal, preemption, scrubbing, model loading, async."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

torch = pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")
torch.set_num_threads(1)  # tiny matrices: extra threads only contend on a busy CI box

from prefixlint.engine import (  # noqa: E402
    AdmissionError,
    EngineConfig,
    EngineConfigError,
    LLMEngine,
    ModelConfig,
    SamplingParams,
)
from prefixlint.engine.models.llama import build_model  # noqa: E402

pytestmark = pytest.mark.engine
GREEDY = SamplingParams(max_tokens=6, temperature=0.0, return_logits=True)
TEXT = (
    "You are a careful assistant for the prefixlint project. Answer briefly, cite sources, and "
    "never invent facts. The user asks about caching."
)


def engine(**kw: object) -> LLMEngine:
    base = {"preset": "tiny", "device": "cpu", "num_blocks": 128, "block_size": 4, "max_model_len": 256}
    return LLMEngine(EngineConfig(**{**base, **kw}))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def eng() -> LLMEngine:
    return engine()


def assert_no_leak(e: LLMEngine) -> None:
    stats = e.stats()
    assert stats["blocks_free"] == stats["blocks_total"], stats
    assert stats["running"] == stats["waiting"] == 0
    assert all(b.ref_count == 0 for b in e.block_manager.blocks)
    for h, bid in e.block_manager.hash_to_block.items():
        assert e.block_manager.blocks[bid].hash == h


def test_cached_and_uncached_prefill_give_the_same_tokens_and_close_logits() -> None:
    cached, uncached = engine(), engine(enable_prefix_caching=False)
    prompt = cached.tokenizer.encode(TEXT)
    first = cached.generate(prompt, GREEDY)
    second = cached.generate(prompt, GREEDY)
    plain = uncached.generate(prompt, GREEDY)
    assert first.num_cached_tokens == 0 and plain.num_cached_tokens == 0
    assert second.num_cached_tokens == (len(prompt) - 1) // 4 * 4 > 0
    assert second.token_ids == first.token_ids == plain.token_ids
    valid = torch.isfinite(first.logits)
    # Stated tolerance: float32 on CPU, the cached run computes only the suffix.
    torch.testing.assert_close(second.logits[valid], first.logits[valid], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(plain.logits[valid], first.logits[valid], atol=1e-4, rtol=1e-4)


def test_same_salt_hits_and_different_salt_misses(eng: LLMEngine) -> None:
    """Paired, so the test fails if caching is simply off."""
    prompt = eng.tokenizer.encode(TEXT + " salt pairing")
    eng.generate(prompt, GREEDY, salt=LLMEngine.namespace("alice"))
    same = eng.generate(prompt, GREEDY, salt=LLMEngine.namespace("alice"))
    other = eng.generate(prompt, GREEDY, salt=LLMEngine.namespace("bob"))
    anon = eng.generate(prompt, GREEDY)
    assert same.num_cached_tokens > 0
    assert other.num_cached_tokens == 0 and anon.num_cached_tokens == 0
    assert same.token_ids == other.token_ids  # the salt changes caching, not the answer
    assert LLMEngine.namespace("a", "bc") != LLMEngine.namespace("ab", "c")


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_pool_boundaries(delta: int) -> None:
    e = engine(num_blocks=8, block_size=4, max_model_len=32)  # capacity: 32 tokens
    prompt = [1000 + i for i in range(32 + delta)]
    calls_before = e.stats()["allocation_calls"]
    if delta > 0:
        with pytest.raises(AdmissionError, match="max_model_len"):
            e.generate(prompt, GREEDY)
        assert e.stats()["allocation_calls"] == calls_before and e.stats()["rejected"] == 1
    else:
        out = e.generate(prompt, GREEDY)
        assert len(out.token_ids) == 1 and out.finish_reason == "length"  # the pool is full
        again = e.generate(prompt, GREEDY)
        assert again.token_ids == out.token_ids and again.num_cached_tokens > 0
    assert_no_leak(e)


def test_admission_rejects_before_any_block_is_allocated(eng: LLMEngine) -> None:
    before = eng.stats()
    cases = [
        ([], "empty"),
        ([5] * 300, "max_model_len"),
        ([7, 10**6, 8], r"token id 1000000 is outside"),
        ([7, 8, -3], r"token id -3 is outside"),
    ]
    for prompt, message in cases:
        with pytest.raises(AdmissionError, match=message):
            eng.add_request(prompt, GREEDY)
        eng.step()  # nothing was queued either: a step allocates nothing
        assert eng.stats()["allocation_calls"] == before["allocation_calls"]
    assert eng.stats()["rejected"] == before["rejected"] + len(cases)
    assert eng.stats()["requests"] == before["requests"]


def test_default_max_tokens_comes_from_the_preset_or_the_config() -> None:
    assert engine().default_max_tokens == 256  # random weights: a preset never reaches its EOS
    assert engine(default_max_tokens=5).default_max_tokens == 5
    with pytest.raises(EngineConfigError, match="default_max_tokens"):
        engine(default_max_tokens=0)


def test_startup_refuses_a_pool_smaller_than_max_model_len() -> None:
    with pytest.raises(EngineConfigError, match=r"holds 64 tokens.*max_model_len=65.*lower max_model_len"):
        engine(num_blocks=16, block_size=4, max_model_len=65)
    assert engine(num_blocks=16, block_size=4, max_model_len=64).block_manager.num_blocks == 16
    with pytest.raises(EngineConfigError, match="max_model_len"):  # derived from a tiny memory budget
        LLMEngine(EngineConfig(preset="tiny", device="cpu", cpu_kv_cache_gib=1e-5, max_model_len=4096))


def test_chunked_prefill_and_batching_match_solo_runs() -> None:
    solo = engine()
    batched = engine(max_num_batched_tokens=8)
    prompts = [solo.tokenizer.encode(f"{TEXT} Question number {i}?") for i in range(6)]
    alone = [solo.generate(p, GREEDY).token_ids for p in prompts]
    together = batched.generate_many(prompts, GREEDY)
    assert [o.token_ids for o in together] == alone
    assert_no_leak(batched)


def test_the_lm_head_runs_only_for_positions_that_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 50-token prompt in 16-token chunks, then two decodes: the head sees one row per sampled
    token, never a prompt position (nor a chunk that does not end the prompt)."""
    e = engine(max_num_batched_tokens=16)
    rows: list[int] = []
    head = e.runner.model.compute_logits

    def counting(hidden: torch.Tensor) -> torch.Tensor:
        rows.append(hidden.shape[0])
        return head(hidden)

    monkeypatch.setattr(e.runner.model, "compute_logits", counting)
    out = e.generate([1000 + i for i in range(50)], SamplingParams(max_tokens=3, temperature=0.0))
    assert len(out.token_ids) == 3 and rows == [1, 1, 1]
    rows.clear()
    e.runner.model.forward_dense(torch.arange(1000, 1050))
    assert rows == [1]  # the dense floor too


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("threads", [1, 3])
def test_the_lm_head_follows_its_weight(tied: bool, threads: int) -> None:
    """The CPU head multiplies by a packed copy of its weight (split across threads, the last
    slice padded: 509 = 3 x 170 - 1); every row count gives what ``hidden @ W.T`` gives, and the
    copy is rebuilt when the weight changes in place or is replaced."""
    cfg = ModelConfig("x", vocab_size=509, hidden_size=32, intermediate_size=64, num_layers=1,
                      num_heads=2, num_kv_heads=1, head_dim=16, tie_word_embeddings=tied)  # fmt: skip
    model = build_model(cfg)
    weight = model.model.embed_tokens.weight if tied else model.lm_head.weight
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for rows in (1, 3, 65):  # 65: past the split, one GEMM
            hidden = torch.randn(rows, 32)
            with torch.inference_mode():
                torch.testing.assert_close(model.compute_logits(hidden), hidden @ weight.t())
        with torch.no_grad():
            weight.mul_(-2.0)  # in place: the version counter moves
        with torch.inference_mode():
            torch.testing.assert_close(model.compute_logits(hidden[:2]), hidden[:2] @ weight.t())
        replaced = torch.randn_like(weight)
        name = "model.embed_tokens.weight" if tied else "lm_head.weight"
        model.load_state_dict({**model.state_dict(), name: replaced})
        with torch.inference_mode():
            torch.testing.assert_close(model.compute_logits(hidden[:1]), hidden[:1] @ replaced.t())
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_is_hugging_face_s(dtype: torch.dtype) -> None:
    """Normalise in float32, cast back, scale: float32 through the fused kernel, other types by
    hand, the same values either way."""
    from prefixlint.engine.layers.norm import RMSNorm

    norm = RMSNorm(64, 1e-5).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(64))
    x = (torch.randn(7, 64) * 3).to(dtype)
    wide = x.float()
    want = norm.weight * (wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dtype)
    torch.testing.assert_close(norm(x), want, atol=0, rtol=0)


def test_preemption_recomputes_and_still_matches() -> None:
    roomy = engine()
    tight = engine(num_blocks=16, block_size=4, max_model_len=64, max_num_batched_tokens=64)
    prompts = [[2000 + 7 * i + j for j in range(20)] for i in range(3)]
    params = SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True)
    want = [roomy.generate(p, params).token_ids for p in prompts]
    got = tight.generate_many(prompts, params)
    assert tight.stats()["preemptions"] > 0
    assert [o.token_ids for o in got] == want
    assert_no_leak(tight)


def test_scrub_on_free_zeroes_freed_blocks() -> None:
    e = engine(scrub_on_free=True)
    e.generate([3000 + i for i in range(30)], GREEDY)
    assert_no_leak(e)
    assert all(float(k.abs().sum()) == 0 and float(v.abs().sum()) == 0 for k, v in e.runner.kv_caches)
    assert e.generate([3000 + i for i in range(30)], GREEDY).num_cached_tokens == 0
    plain = engine()
    plain.generate([3000 + i for i in range(30)], GREEDY)
    assert any(float(k.abs().sum()) > 0 for k, _ in plain.runner.kv_caches)  # the check can fail


def test_sampling_with_a_seed_is_reproducible(eng: LLMEngine) -> None:
    params = SamplingParams(max_tokens=8, temperature=0.8, top_p=0.9, seed=7)
    a, b = eng.generate(TEXT, params), eng.generate(TEXT, params)
    assert a.token_ids == b.token_ids and a.ttft_s is not None and a.ttft_s > 0


@pytest.mark.parametrize("family", ["qwen2", "llama"])
def test_loads_a_hugging_face_safetensors_directory(tmp_path: object, family: str) -> None:
    from safetensors.torch import save_file

    cfg = ModelConfig(
        "src",
        vocab_size=512,
        hidden_size=64,
        intermediate_size=96,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        head_dim=16,
        qkv_bias=family == "qwen2",
        tie_word_embeddings=family == "qwen2",
        eos_token_ids=(1,),
        rope_scaling={
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        }
        if family == "llama"
        else None,
    )
    src = build_model(cfg, seed=11)
    save_file({k: v.contiguous() for k, v in src.state_dict().items()}, str(tmp_path / "model.safetensors"))
    hf = {
        "model_type": family,
        "vocab_size": 512,
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": cfg.tie_word_embeddings,
        "eos_token_id": 1,
        "rope_scaling": cfg.rope_scaling,
    }
    (tmp_path / "config.json").write_text(json.dumps(hf))
    e = LLMEngine(
        EngineConfig(model_dir=str(tmp_path), device="cpu", num_blocks=64, block_size=4, max_model_len=128)
    )
    assert e.model_config.qkv_bias == (family == "qwen2") and e.model_name == tmp_path.name
    prompt = [5, 17, 99, 300, 42, 7, 8, 9, 10]
    out = e.generate(prompt, SamplingParams(max_tokens=1, temperature=0.0, return_logits=True))
    want = src.forward_dense(torch.tensor(prompt))
    torch.testing.assert_close(out.logits[0], want, atol=1e-4, rtol=1e-4)
    if family == "llama":  # the scaling really changed the frequencies
        assert not torch.allclose(
            e.runner.model.model.rotary.inv_freq,
            build_model(ModelConfig("x", head_dim=16)).model.rotary.inv_freq,
        )


def test_async_stream_and_cancellation_free_blocks() -> None:
    e = engine()

    async def run() -> tuple[list[int], object]:
        tokens: list[int] = []
        final = None
        async for delta in e.generate_stream(TEXT, SamplingParams(max_tokens=5, temperature=0.0)):
            tokens += delta.token_ids
            final = delta.output or final
        agen = e.generate_stream(TEXT, SamplingParams(max_tokens=10_000, temperature=0.0, ignore_eos=True))
        await agen.__anext__()
        assert e.stats()["blocks_free"] < e.stats()["blocks_total"]
        await agen.aclose()  # what a client disconnect does
        return tokens, final

    try:
        tokens, final = asyncio.run(run())
        assert len(tokens) == 5 and final.token_ids == tokens and final.num_cached_tokens == 0
        deadline = time.monotonic() + 10
        while e.stats()["blocks_free"] != e.stats()["blocks_total"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert_no_leak(e)
        assert e.counters.finished.get("abort") == 1
        # The sync API also works while the background loop runs.
        assert e.generate(TEXT, SamplingParams(max_tokens=2, temperature=0.0)).num_cached_tokens > 0
    finally:
        e.shutdown()


def test_a_crashing_step_fails_requests_instead_of_hanging_them() -> None:
    e = engine()
    e.start()
    try:

        def boom(seq, bm) -> None:
            raise RuntimeError("scheduler bug")

        e.fault_hook = boom
        out = e.generate(TEXT, GREEDY)
        assert out.finish_reason == "error" and out.error == "engine step failed" and out.token_ids == []
        e.fault_hook = None
        assert e.generate(TEXT, GREEDY).finish_reason == "length"  # the loop survived
        assert_no_leak(e)
    finally:
        e.shutdown()
