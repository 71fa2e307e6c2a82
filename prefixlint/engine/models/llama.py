"""Llama-style decoder (RMSNorm, RoPE, GQA, SwiGLU; Qwen2 adds q/k/v biases).

Parameter names follow Hugging Face (``model.layers.N.self_attn.q_proj.weight`` ...), so a local
safetensors directory loads without renaming. ``forward`` runs over the paged KV cache;
``forward_dense`` is a plain causal forward without paging (the TTFT floor, and the reference
that paged attention is tested against).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from prefixlint.engine.config import EngineConfigError, ModelConfig
from prefixlint.engine.layers.activation import silu_and_mul
from prefixlint.engine.layers.attention import PagedBatch, causal_attention, paged_attention
from prefixlint.engine.layers.embed_head import LMHead
from prefixlint.engine.layers.merged import MergedLinear
from prefixlint.engine.layers.norm import RMSNorm
from prefixlint.engine.layers.rotary import RotaryEmbedding, apply_rotary, rotate_heads

KVCache = tuple[torch.Tensor, torch.Tensor]
CosSin = tuple[torch.Tensor, torch.Tensor]  # RoPE at this step's positions, shared by all layers


class LlamaAttention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        self.scale = cfg.head_dim**-0.5
        q_size, kv_size = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, q_size, bias=cfg.qkv_bias)
        self.k_proj = nn.Linear(cfg.hidden_size, kv_size, bias=cfg.qkv_bias)
        self.v_proj = nn.Linear(cfg.hidden_size, kv_size, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(q_size, cfg.hidden_size, bias=False)
        self.qkv: MergedLinear | None = None  # set by merge_projections()

    def merge_projections(self) -> None:
        self.qkv = MergedLinear(self.q_proj, self.k_proj, self.v_proj)

    def _qkv(self, x: torch.Tensor, rope: CosSin) -> tuple[torch.Tensor, ...]:
        t = x.shape[0]
        whole = self.qkv.product(x) if self.qkv is not None else None
        if whole is not None:  # q and k heads are adjacent columns: one RoPE pass for both
            qk_heads = self.num_heads + self.num_kv_heads
            qk = rotate_heads(rope, whole[:, : qk_heads * self.head_dim].view(t, qk_heads, self.head_dim))
            q, k = qk.split([self.num_heads, self.num_kv_heads], dim=1)
            return q, k, whole[:, qk_heads * self.head_dim :].view(t, self.num_kv_heads, self.head_dim)
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.view(t, self.num_heads, self.head_dim)
        k = k.view(t, self.num_kv_heads, self.head_dim)
        v = v.view(t, self.num_kv_heads, self.head_dim)
        q, k = apply_rotary(rope, q, k)
        return q, k, v

    def forward(self, x: torch.Tensor, rope: CosSin, kv: KVCache, batch: PagedBatch) -> torch.Tensor:
        q, k, v = self._qkv(x, rope)
        out = paged_attention(q, k, v, kv[0], kv[1], batch, self.scale)
        return self.o_proj(out.flatten(1))

    def forward_dense(self, x: torch.Tensor, rope: CosSin) -> torch.Tensor:
        q, k, v = self._qkv(x, rope)
        return self.o_proj(causal_attention(q, k, v, self.scale).flatten(1))


class LlamaMLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)
        self.gate_up: MergedLinear | None = None  # set by merge_projections()

    def merge_projections(self) -> None:
        self.gate_up = MergedLinear(self.gate_proj, self.up_proj)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x) if self.gate_up is not None else (self.gate_proj(x), self.up_proj(x))
        return self.down_proj(silu_and_mul(gate, up))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = LlamaAttention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = LlamaMLP(cfg)

    def forward(
        self, x: torch.Tensor, rope: CosSin, kv: KVCache | None, batch: PagedBatch | None
    ) -> torch.Tensor:
        h = self.input_layernorm(x)
        if batch is None:
            x = x + self.self_attn.forward_dense(h, rope)
        else:
            x = x + self.self_attn(h, rope, kv, batch)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.rotary = RotaryEmbedding(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling)
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(LlamaDecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class LlamaForCausalLM(nn.Module):
    """The decoder plus LM head."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.config = cfg
        self.model = LlamaModel(cfg)
        self.lm_head = LMHead(self.model.embed_tokens, cfg.tie_word_embeddings)

    @torch.inference_mode()
    def forward(
        self, input_ids: torch.Tensor, positions: torch.Tensor, kv_caches: list[KVCache], batch: PagedBatch
    ) -> torch.Tensor:
        """Hidden states ``[T, hidden]`` for a flat batch of new tokens over the paged cache."""
        x = self.embed(input_ids)
        rope = self.model.rotary.cos_sin(positions)
        for layer, kv in zip(self.model.layers, kv_caches, strict=False):
            x = layer(x, rope, kv, batch)
        return self.model.norm(x)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.config.fold_input_ids:
            input_ids = input_ids % self.config.vocab_size
        return self.model.embed_tokens(input_ids)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden)

    @torch.inference_mode()
    def forward_dense(self, input_ids: torch.Tensor, all_logits: bool = False) -> torch.Tensor:
        """Plain dense causal forward of ``[T]`` or ``[B, T]`` ids, no paging and no cache.

        Returns last-position logits (``[V]`` or ``[B, V]``), or every position's with
        ``all_logits=True``."""
        squeeze = input_ids.dim() == 1
        ids = input_ids[None] if squeeze else input_ids
        rope = self.model.rotary.cos_sin(torch.arange(ids.shape[1], device=ids.device))
        outs = []
        for row in ids:
            x = self.embed(row)
            for layer in self.model.layers:
                x = layer(x, rope, None, None)
            x = self.model.norm(x)
            outs.append(self.compute_logits(x if all_logits else x[-1:]))
        logits = torch.stack(outs)
        if not all_logits:
            logits = logits[:, 0]
        return logits[0] if squeeze else logits


def _init_random(model: LlamaForCausalLM, seed: int, device: torch.device) -> None:
    """Deterministic random weights: ones for norms, N(0, 1/fan_in) for projections (so every
    layer moves the residual stream and outputs depend on context), N(0, 0.02) otherwise."""
    gen = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if "norm" in name:
                param.fill_(1.0)
            elif "proj.weight" in name:
                param.normal_(0.0, param.shape[1] ** -0.5, generator=gen)
            else:
                param.normal_(0.0, 0.02, generator=gen)


def load_hf_weights(model: LlamaForCausalLM, model_dir: str | Path) -> None:
    """Copy tensors from ``*.safetensors`` in ``model_dir`` into ``model`` (names as Hugging Face)."""
    from safetensors import safe_open

    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        raise EngineConfigError(f"no *.safetensors files in {model_dir}")
    params = dict(model.named_parameters())
    loaded: set[str] = set()
    for path in files:
        with safe_open(str(path), framework="pt") as fh:
            for name in fh.keys():  # noqa: SIM118 - safe_open is not a dict
                if name not in params:
                    continue  # e.g. rotary inv_freq buffers, or lm_head when tied
                tensor = fh.get_tensor(name)
                if tensor.shape != params[name].shape:
                    raise EngineConfigError(
                        f"{name}: shape {tuple(tensor.shape)} in {path.name}, "
                        f"model expects {tuple(params[name].shape)}"
                    )
                with torch.no_grad():
                    params[name].copy_(tensor)
                loaded.add(name)
    missing = sorted(set(params) - loaded)
    if missing:
        more = "..." if len(missing) > 5 else ""
        raise EngineConfigError(f"{model_dir}: missing weights {missing[:5]}{more}")


def build_model(
    model_config: ModelConfig,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    model_dir: str | Path | None = None,
) -> LlamaForCausalLM:
    """The model on ``device``/``dtype``: seeded random weights, or those in ``model_dir``."""
    device = torch.device(device)
    with torch.device(device):
        model = LlamaForCausalLM(model_config).to(dtype)
    for layer in model.model.layers:  # before the weights are set: they are set in place
        layer.self_attn.merge_projections()
        layer.mlp.merge_projections()
    if model_dir is not None:
        load_hf_weights(model, model_dir)
    else:
        _init_random(model, seed, device)
    if device.type == "cpu":
        model.lm_head.packed()  # built now, not on the first request
    return model.eval()
