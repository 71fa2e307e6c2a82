"""The engine against Hugging Face ``transformers`` itself: tiny random Llama and Qwen2 models saved
by ``save_pretrained``, in transformers 5.x's ``rope_parameters`` layout and in the older
``rope_theta`` + ``rope_scaling`` layout, give the same logits (within 1e-5) as the transformers
model; rope types the engine does not implement are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")
transformers = pytest.importorskip(
    "transformers", reason="the reference model comes from transformers (dev extra)"
)
torch.set_num_threads(1)

from prefixlint.engine import EngineConfig, EngineConfigError, LLMEngine, SamplingParams  # noqa: E402
from prefixlint.engine.config import model_config_from_hf  # noqa: E402

pytestmark = pytest.mark.engine
TOL = 1e-5
SHAPE = {
    "vocab_size": 320,
    "hidden_size": 64,
    "intermediate_size": 112,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-6,
    "eos_token_id": 2,
}
# Rope settings chosen so that reading them wrongly changes the logits: a theta far from the
# 10000 fallback, and for Llama a llama3 scaling whose original context is short enough to matter.
LLAMA_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 64,
}
QWEN2_ROPE = {"rope_type": "default", "rope_theta": 1000000.0}


def hf_model(family: str, rope: dict):
    """A seeded random transformers model in float32 with eager-free SDPA attention."""
    torch.manual_seed(7)
    if family == "llama":
        config = transformers.LlamaConfig(**SHAPE, rope_parameters=dict(rope), tie_word_embeddings=False)
        model = transformers.LlamaForCausalLM(config)
    else:
        config = transformers.Qwen2Config(**SHAPE, rope_parameters=dict(rope), tie_word_embeddings=True)
        model = transformers.Qwen2ForCausalLM(config)
    with torch.no_grad():  # random norms too, so a wrongly loaded norm weight shows
        for name, param in model.named_parameters():
            if "norm" in name:
                param.uniform_(0.5, 1.5)
    return model.eval()


def to_old_layout(model_dir: Path) -> dict:
    """Rewrite ``config.json`` as transformers 4.x wrote it: top-level ``rope_theta`` and a
    ``rope_scaling`` dict (null for plain RoPE)."""
    path = model_dir / "config.json"
    cfg = json.loads(path.read_text())
    params = dict(cfg.pop("rope_parameters"))
    cfg["rope_theta"] = params.pop("rope_theta")
    cfg["rope_scaling"] = None if params.get("rope_type") == "default" else params
    path.write_text(json.dumps(cfg))
    return cfg


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    family = request.param
    model = hf_model(family, LLAMA_ROPE if family == "llama" else QWEN2_ROPE)
    new_dir, old_dir = tmp_path_factory.mktemp(f"{family}-new"), tmp_path_factory.mktemp(f"{family}-old")
    model.save_pretrained(new_dir)
    model.save_pretrained(old_dir)
    to_old_layout(old_dir)
    return family, model, {"rope_parameters": new_dir, "rope_scaling": old_dir}


def test_save_pretrained_writes_the_new_layout(saved) -> None:
    _, _, dirs = saved
    cfg = json.loads((dirs["rope_parameters"] / "config.json").read_text())
    assert "rope_parameters" in cfg and "rope_scaling" not in cfg  # what transformers 5.x writes
    old = json.loads((dirs["rope_scaling"] / "config.json").read_text())
    assert "rope_parameters" not in old and "rope_theta" in old


@pytest.mark.parametrize("layout", ["rope_parameters", "rope_scaling"])
def test_logits_match_transformers(saved, layout: str) -> None:
    family, model, dirs = saved
    mc = model_config_from_hf(dirs[layout])
    want_theta = (LLAMA_ROPE if family == "llama" else QWEN2_ROPE)["rope_theta"]
    assert mc.rope_theta == want_theta
    assert (mc.rope_scaling or {}).get("rope_type", "default") == (
        "llama3" if family == "llama" else "default"
    )
    ids = torch.randint(3, SHAPE["vocab_size"], (96,), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want = model(ids[None]).logits[0].float()
    eng = LLMEngine(
        EngineConfig(
            model_dir=str(dirs[layout]), device="cpu", num_blocks=64, block_size=8, max_model_len=256
        )
    )
    dense = eng.runner.model.forward_dense(ids, all_logits=True)
    torch.testing.assert_close(dense, want, atol=TOL, rtol=0)
    # The served path too: paged, chunked prefill; its next-token logits equal transformers' last row.
    out = eng.generate(ids.tolist(), SamplingParams(max_tokens=1, temperature=0.0, return_logits=True))
    torch.testing.assert_close(out.logits[0], want[-1], atol=TOL, rtol=0)


def test_the_fallback_would_have_been_caught(saved) -> None:
    """Guard for the test itself: ignoring the rope settings moves the logits far past TOL."""
    _, model, dirs = saved
    path = dirs["rope_parameters"] / "config.json"
    cfg = json.loads(path.read_text())
    broken = tmp = path.parent.parent / f"{path.parent.name}-ignored"
    tmp.mkdir(exist_ok=True)
    for f in path.parent.iterdir():
        (tmp / f.name).write_bytes(f.read_bytes())
    cfg.pop("rope_parameters")
    (broken / "config.json").write_text(json.dumps(cfg))
    ids = torch.arange(3, 99)
    with torch.no_grad():
        want = model(ids[None]).logits[0].float()
    eng = LLMEngine(
        EngineConfig(model_dir=str(broken), device="cpu", num_blocks=64, block_size=8, max_model_len=256)
    )
    assert (eng.runner.model.forward_dense(ids, all_logits=True) - want).abs().max() > 100 * TOL


@pytest.mark.parametrize("layout", ["rope_parameters", "rope_scaling"])
@pytest.mark.parametrize("rope_type", ["yarn", "dynamic", "longrope"])
def test_unimplemented_rope_types_are_refused(tmp_path: Path, layout: str, rope_type: str) -> None:
    cfg = {"model_type": "llama", **SHAPE}
    scaling = {"rope_type": rope_type, "factor": 4.0, "original_max_position_embeddings": 64}
    if layout == "rope_parameters":
        cfg["rope_parameters"] = {**scaling, "rope_theta": 10000.0}
    else:
        cfg["rope_theta"], cfg["rope_scaling"] = 10000.0, {"type": rope_type, "factor": 4.0}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(EngineConfigError, match=rf"rope type '{rope_type}' is not implemented"):
        model_config_from_hf(tmp_path)


def test_linear_rope_scaling_matches_transformers(tmp_path: Path) -> None:
    model = hf_model("llama", {"rope_type": "linear", "rope_theta": 20000.0, "factor": 4.0})
    model.save_pretrained(tmp_path)
    ids = torch.arange(5, 85)
    with torch.no_grad():
        want = model(ids[None]).logits[0].float()
    eng = LLMEngine(
        EngineConfig(model_dir=str(tmp_path), device="cpu", num_blocks=32, block_size=8, max_model_len=128)
    )
    torch.testing.assert_close(eng.runner.model.forward_dense(ids, all_logits=True), want, atol=TOL, rtol=0)
