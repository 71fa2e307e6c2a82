"""The live tools' small parts: server facts, leak evidence, prompt sizing and tenants."""

from __future__ import annotations

import pytest

from prefixlint.live.client import BenchClient, Completion, _read_logprobs
from prefixlint.live.leaks import canary_marker, compare_greedy, markers_in, shared_ngrams
from prefixlint.live.server_info import pool_from_health, pool_from_metrics, server_root
from prefixlint.live.sizing import Sizing, fit_lengths
from prefixlint.live.tenants import TenantError, make_tenants

VLLM_METRICS = (
    "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
    "# TYPE vllm:cache_config_info gauge\n"
    'vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",'
    'gpu_memory_utilization="0.9",num_cpu_blocks="None",num_gpu_blocks="42581",'
    'num_gpu_blocks_override="None"} 1.0\n'
    'vllm:num_requests_running{model_name="m"} 0.0\n'
)
ENGINE_METRICS = (
    "prefixlint_engine_kv_blocks_total 64.0\n"
    "prefixlint_engine_kv_block_size 16.0\n"
    'prefixlint_engine_cache_config_info{block_size="16",enable_prefix_caching="True",max_model_len="512",'
    'num_blocks="64",pool_tokens="1024"} 1.0\n'
)


def test_pool_size_from_each_server_flavour() -> None:
    assert pool_from_metrics(VLLM_METRICS) == (42581 * 16, 16)
    assert pool_from_metrics(ENGINE_METRICS) == (1024, 16)
    assert pool_from_metrics("prefixlint_engine_kv_blocks_total 8\nprefixlint_engine_kv_block_size 4\n") == (
        32,
        4,
    )
    assert pool_from_metrics("vllm:num_requests_running 0\n") == (None, None)
    engine_health = {"status": "ok", "block_size": 16, "num_blocks": 64, "kv_pool_tokens": 1024}
    assert pool_from_health(engine_health) == (1024, 16)
    assert pool_from_health({"max_total_num_tokens": 681280, "page_size": 1}) == (681280, None)  # SGLang
    assert pool_from_health({"status": "ok"}) == (None, None)
    assert pool_from_health(["not", "a", "dict"]) == (None, None)
    assert server_root("http://h:8000/v1/") == "http://h:8000"
    assert server_root("https://h/api/v1") == "https://h/api"


def test_markers_and_copied_words() -> None:
    marker = canary_marker()
    assert marker.startswith("canary") and len(marker) == len("canary") + 12
    tail = marker.removeprefix("canary")
    assert markers_in([f"... {tail[:4]} {tail[4:9]} ..."], [marker]) == [marker]  # split by the tokenizer
    assert markers_in([tail[:7]], [marker]) == []  # 7 hex digits are not enough
    words = "a B c D e F g H i J"
    assert shared_ngrams("x y " + words + " z", [words], n=8) != []
    assert shared_ngrams("a B c D e F g", [words], n=8) == []


def _greedy(tokens: list[str], lps: list[float], tops: list[dict[str, float]] | None = None) -> Completion:
    return Completion(status=200, text="".join(tokens), tokens=tokens, logprobs=lps, top_logprobs=tops or [])


def test_compare_greedy_tokens_logprobs_and_near_ties() -> None:
    ref = _greedy(["a", "b"], [-0.1, -0.2], [{"a": -0.1, "z": -3.0}, {"b": -0.2, "c": -0.2003}])
    assert compare_greedy(ref, _greedy(["a", "b"], [-0.1, -0.2004]), 1e-3).kind == "same"
    assert compare_greedy(ref, _greedy(["a", "b"], [-0.1, -0.25]), 1e-3).kind == "logprob"
    assert compare_greedy(ref, _greedy(["q", "b"], [-0.1, -0.2]), 1e-3).kind == "token"
    # Position 1: "b" and "c" were 0.0003 apart and both answers saw that same distribution, so
    # the flip is numeric noise ...
    flip = _greedy(["a", "c"], [-0.1, -0.2001], [{"a": -0.1}, {"c": -0.2001, "b": -0.2002}])
    tie = compare_greedy(ref, flip, 1e-3)
    assert tie.kind == "near-tie" and not tie.differs
    # ... but when the distribution itself moved, the same flip is a real divergence.
    moved = _greedy(["a", "c"], [-0.1, -0.05], [{"a": -0.1}, {"c": -0.05, "b": -3.0}])
    assert compare_greedy(ref, moved, 1e-3).kind == "token"
    assert compare_greedy(ref, _greedy(["a", "c"], [-0.1, -0.2001]), 1e-3).kind == "token"  # no top logprobs
    assert compare_greedy(ref, _greedy(["a"], [-0.1]), 1e-3).kind == "length"
    text_only = compare_greedy(
        Completion(status=200, text="hello"), Completion(status=200, text="help!"), 0.0
    )
    assert text_only.kind == "token" and text_only.position == 3


def test_logprobs_in_both_shapes() -> None:
    chat = Completion(status=200)
    _read_logprobs(
        {"content": [{"token": "hi", "logprob": -0.5, "top_logprobs": [{"token": "hi", "logprob": -0.5}]}]},
        chat,
    )
    assert chat.tokens == ["hi"] and chat.logprobs == [-0.5] and chat.top_logprobs == [{"hi": -0.5}]
    legacy = Completion(status=200)
    _read_logprobs(
        {"tokens": ["a", "b"], "token_logprobs": [None, -1.0], "top_logprobs": [{"a": -0.1}, None]}, legacy
    )
    assert (
        legacy.tokens == ["a", "b"]
        and legacy.logprobs == [0.0, -1.0]
        and legacy.top_logprobs == [{"a": -0.1}, {}]
    )


def test_complete_asks_for_logprobs_in_each_endpoints_shape() -> None:
    pytest.importorskip("uvicorn")
    from prefixlint.live.fake_server import FakeServerConfig, fake_server

    with fake_server(FakeServerConfig(base_s=0.0, per_token_s=0.0)) as (url, state):
        with BenchClient(url, "fake-model") as chat:
            got = chat.complete("a b c", max_tokens=3, logprobs=2)
        with BenchClient(url, "fake-model", endpoint="completions") as comp:
            legacy = comp.complete("a b c", max_tokens=3, logprobs=2)
    assert state.bodies[0]["logprobs"] is True and state.bodies[0]["top_logprobs"] == 2
    assert state.bodies[1]["logprobs"] == 2 and "top_logprobs" not in state.bodies[1]
    assert not state.bodies[0]["stream"] and "stream_options" not in state.bodies[0]
    for c in (got, legacy):
        assert c.ok and len(c.tokens) == len(c.logprobs) == len(c.top_logprobs) == 3
        assert c.text == "".join(c.tokens) and c.prompt_tokens is not None and c.cached_tokens == 0


def test_fit_lengths_keeps_prompt_template_and_output_inside_the_limit() -> None:
    sizing = Sizing(overhead=22, per_word=1.0, measured=True)
    lengths, notes = fit_lengths([1024, 4096, 8192], 4096, sizing, 1)
    assert lengths == [1024, 4073]  # 8192 and 4096 both become 4073, listed once
    assert len(notes) == 2 and notes[0].startswith("4096-token prompts sent as 4073 tokens")
    assert fit_lengths([4096], None, sizing, 1) == ([4096], [])
    assert sizing.tokens_for(4073) + 1 == 4096 and sizing.words_for(4096) == 4074
    coarse = Sizing(overhead=3, per_word=1.5, measured=True)
    (fitted,), _ = fit_lengths([4096], 1000, coarse, 16)
    assert coarse.tokens_for(fitted) + 16 <= 1000 and not coarse.exact


def test_tenants_from_options() -> None:
    default = make_tenants()
    assert [t.name for t in default] == ["random-1", "random-2"]
    assert all(t.api_key and t.api_key.startswith("sk-prefixlint-") for t in default)
    assert default[0].api_key != default[1].api_key and "api_key" not in default[0].public()
    salts = make_tenants(["sk-1"], ["a", "b"])
    assert [(t.api_key, t.cache_salt, t.kind) for t in salts] == [
        ("sk-1", "a", "salt"),
        ("sk-1", "b", "salt"),
    ]
    orgs = make_tenants(["k1", "k2"], orgs=["acme", "acme"])
    assert [t.org for t in orgs] == ["acme", "acme"]
    assert [t.name for t in make_tenants(["k1"], minimum=1)] == ["key-1"]
    for bad in (
        dict(api_keys=["k1"]),
        dict(salts=["a"]),
        dict(api_keys=["k", "k"]),
        dict(api_keys=["a", "b"], salts=["x", "y"]),
    ):
        with pytest.raises(TenantError):
            make_tenants(**bad)  # type: ignore[arg-type]
    with pytest.raises(TenantError, match="--org"):
        make_tenants(["k1", "k2"], orgs=["acme"])
