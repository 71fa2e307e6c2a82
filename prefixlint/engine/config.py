"""Model shapes (named presets or a Hugging Face ``config.json``) and engine settings."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

CL100K_VOCAB = 100277  # tiktoken cl100k_base n_vocab (ids 0..100255 plus specials up to 100276)
CL100K_EOS = 100257  # <|endoftext|>


class EngineConfigError(ValueError):
    """A configuration the engine refuses to start with."""


@dataclass(frozen=True)
class ModelConfig:
    """Shapes of a Llama-style decoder (RMSNorm, RoPE, GQA, SwiGLU)."""

    name: str
    vocab_size: int = CL100K_VOCAB
    hidden_size: int = 128
    intermediate_size: int = 256
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int = 32
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None
    rms_norm_eps: float = 1e-5
    tie_word_embeddings: bool = True
    qkv_bias: bool = False
    eos_token_ids: tuple[int, ...] = (CL100K_EOS,)
    # Hashed-down vocabulary: input id t uses embedding row t % vocab_size, and the model can only
    # emit ids below vocab_size (all ordinary cl100k tokens). Keeps the CPU preset's LM head small.
    fold_input_ids: bool = False
    # Output tokens when a chat request sets no max_tokens (None: up to max_model_len, as vLLM).
    # Random-weight presets set it: they never (tiny: can never) sample their end-of-sequence id.
    default_max_tokens: int | None = None

    @property
    def input_vocab_size(self) -> int:
        """Token ids the model accepts as input."""
        return max(CL100K_VOCAB, self.vocab_size) if self.fold_input_ids else self.vocab_size

    def num_params(self) -> int:
        """Parameter count (embedding counted once when tied)."""
        h, q, kv = self.hidden_size, self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        attn = h * q + 2 * h * kv + q * h + (q + 2 * kv if self.qkv_bias else 0)
        layer = attn + 3 * h * self.intermediate_size + 2 * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.vocab_size * h + self.num_layers * layer + h + head

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """Bytes of K and V for one token across all layers."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * dtype_bytes


# Prompts are always tokenized with cl100k_base, so engine token counts equal the linter's and
# SDK's. Weights are random (seeded); prefill cost does not depend on their values. The timing
# presets carry the full cl100k vocabulary so the LM head costs what it really costs.
RANDOM_PRESET_MAX_TOKENS = 256
PRESETS: dict[str, ModelConfig] = {
    # CPU tests: about 1.3M parameters, with a hashed-down 8192-row vocabulary (see fold_input_ids).
    "tiny": ModelConfig(
        "tiny", vocab_size=8192, fold_input_ids=True, default_max_tokens=RANDOM_PRESET_MAX_TOKENS
    ),
    # The CPU TTFT benchmark's shape (bench/engine_ttft.py): about 28M parameters, 4 narrow layers
    # and the full cl100k vocabulary, so a 4k-token prefill takes long enough to time on a laptop CPU
    # and the LM head costs what it really costs.
    "cpu-bench": ModelConfig(
        "cpu-bench",
        hidden_size=256,
        intermediate_size=704,
        num_layers=4,
        num_heads=8,
        num_kv_heads=2,
        head_dim=32,
        default_max_tokens=RANDOM_PRESET_MAX_TOKENS,
    ),
    # About 0.45B parameters, Qwen2.5-0.5B-like body.
    "small": ModelConfig(
        "small",
        hidden_size=896,
        intermediate_size=4864,
        num_layers=24,
        num_heads=14,
        num_kv_heads=2,
        head_dim=64,
        rope_theta=1e6,
        rms_norm_eps=1e-6,
        default_max_tokens=RANDOM_PRESET_MAX_TOKENS,
    ),
    # About 1.2B parameters, Llama-3.2-1B shapes.
    "1b": ModelConfig(
        "1b",
        hidden_size=2048,
        intermediate_size=8192,
        num_layers=16,
        num_heads=32,
        num_kv_heads=8,
        head_dim=64,
        rope_theta=500000.0,
        default_max_tokens=RANDOM_PRESET_MAX_TOKENS,
    ),
}


ROPE_TYPES = ("default", "linear", "llama3")  # the rope types layers/rotary.py implements


def rope_settings(cfg: dict, where: Path | str) -> tuple[float, dict | None]:
    """``(theta, scaling)`` from a ``config.json`` in either layout: ``rope_parameters`` (written by
    transformers 5.x: ``rope_type``, ``rope_theta`` and the scaling fields in one dict), or the
    older top-level ``rope_theta`` plus ``rope_scaling``. ``scaling`` is None for plain RoPE, else
    the scaling fields with ``rope_type`` set. Raises for a rope type that is not implemented."""
    params = cfg.get("rope_parameters")
    if isinstance(params, dict):
        if params and all(isinstance(v, dict) for v in params.values()):
            raise EngineConfigError(f"{where}: per-layer-type rope_parameters are not supported")
        scaling = dict(params)
        theta = scaling.pop("rope_theta", cfg.get("rope_theta", 10000.0))
    else:
        theta = cfg.get("rope_theta", 10000.0)
        scaling = dict(cfg.get("rope_scaling") or {})
    rope_type = scaling.pop("rope_type", scaling.pop("type", "default"))
    if rope_type not in ROPE_TYPES:
        raise EngineConfigError(
            f"{where}: rope type {rope_type!r} is not implemented (supported: {', '.join(ROPE_TYPES)}); "
            "its positions would be encoded wrongly"
        )
    partial = float(scaling.pop("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0)))
    if partial != 1.0:
        raise EngineConfigError(f"{where}: partial_rotary_factor {partial} is not supported (only 1.0)")
    if rope_type != "default" and "factor" not in scaling:
        raise EngineConfigError(f"{where}: rope type {rope_type!r} needs a 'factor'")
    return float(theta), (None if rope_type == "default" else {"rope_type": rope_type, **scaling})


def model_config_from_hf(model_dir: str | Path) -> ModelConfig:
    """Read a Llama or Qwen2 ``config.json`` from a local Hugging Face directory."""
    path = Path(model_dir) / "config.json"
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise EngineConfigError(f"cannot read {path}: {exc}") from exc
    mtype = cfg.get("model_type", "")
    if mtype not in ("llama", "qwen2"):
        raise EngineConfigError(f"{path}: model_type {mtype!r} is not supported (llama, qwen2)")
    heads = cfg["num_attention_heads"]
    eos = cfg.get("eos_token_id")
    eos_ids = tuple(eos) if isinstance(eos, list) else ((eos,) if eos is not None else ())
    theta, scaling = rope_settings(cfg, path)
    return ModelConfig(
        name=Path(model_dir).name,
        vocab_size=cfg["vocab_size"],
        hidden_size=cfg["hidden_size"],
        intermediate_size=cfg["intermediate_size"],
        num_layers=cfg["num_hidden_layers"],
        num_heads=heads,
        num_kv_heads=cfg.get("num_key_value_heads", heads),
        head_dim=cfg.get("head_dim") or cfg["hidden_size"] // heads,
        rope_theta=theta,
        rope_scaling=scaling,
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=mtype == "qwen2",
        eos_token_ids=eos_ids,
    )


@dataclass
class EngineConfig:
    """Everything the engine needs to start.

    ``num_blocks=None`` derives the pool from memory: ``gpu_memory_utilization`` of free CUDA
    memory after the weights, or ``cpu_kv_cache_gib`` on CPU. Startup refuses a pool that holds
    fewer tokens than ``max_model_len``; lower ``max_model_len`` explicitly to run with it.
    """

    preset: str = "tiny"
    model_dir: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    block_size: int = 16
    num_blocks: int | None = None
    max_model_len: int = 4096
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 2048
    enable_prefix_caching: bool = True
    integrity_checks: bool = True
    scrub_on_free: bool = False
    allow_client_salt: bool = False
    default_max_tokens: int | None = None  # chat output cap without max_tokens (None: the model's)
    seed: int = 0
    gpu_memory_utilization: float = 0.8
    cpu_kv_cache_gib: float = 0.25
    model: ModelConfig | None = field(default=None, repr=False)  # overrides preset when given

    def model_config(self) -> ModelConfig:
        """The model shapes: explicit ``model``, else ``model_dir``'s config, else the preset."""
        if self.model is not None:
            return self.model
        if self.model_dir:
            return model_config_from_hf(self.model_dir)
        if self.preset not in PRESETS:
            raise EngineConfigError(f"unknown preset {self.preset!r}; choose from {sorted(PRESETS)}")
        return PRESETS[self.preset]

    def validate(self) -> None:
        """Reject settings that can never work, before any memory is allocated."""
        if self.block_size < 1:
            raise EngineConfigError("block_size must be at least 1")
        if self.max_model_len < 2:
            raise EngineConfigError("max_model_len must be at least 2")
        if self.max_num_seqs < 1 or self.max_num_batched_tokens < 1:
            raise EngineConfigError("max_num_seqs and max_num_batched_tokens must be positive")
        if self.num_blocks is not None and self.num_blocks < 1:
            raise EngineConfigError("num_blocks must be at least 1")
        if self.default_max_tokens is not None and self.default_max_tokens < 1:
            raise EngineConfigError("default_max_tokens must be at least 1")

    def with_(self, **changes: object) -> EngineConfig:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)  # type: ignore[arg-type]
