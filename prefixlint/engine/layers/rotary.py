"""Rotary position embedding (rotate-half convention, as Hugging Face Llama/Qwen2), with linear
and Llama 3 frequency scaling (``config.rope_settings`` refuses any other rope type)."""

from __future__ import annotations

import math

import torch
from torch import nn


def _llama3_scale(inv_freq: torch.Tensor, scaling: dict) -> torch.Tensor:
    factor = scaling["factor"]
    low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    old_len = scaling.get("original_max_position_embeddings", 8192)
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old_len / high) & (wavelen <= old_len / low)
    return torch.where(medium, smoothed, scaled)


class RotaryEmbedding(nn.Module):
    """Applies RoPE to ``[tokens, heads, head_dim]`` tensors at explicit positions."""

    def __init__(self, head_dim: int, theta: float, scaling: dict | None = None) -> None:
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
        kind = (scaling or {}).get("rope_type", "default")
        if kind == "llama3":
            inv_freq = _llama3_scale(inv_freq, scaling)  # type: ignore[arg-type]
        elif kind == "linear":
            inv_freq = inv_freq / scaling["factor"]  # type: ignore[index]
        elif kind != "default":
            raise ValueError(f"rope type {kind!r} is not implemented")
        # A plain attribute, not a buffer: it stays float32 when the model is cast to bf16.
        self.inv_freq = inv_freq.float().to(torch.get_default_device())

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``cos`` and ``sin`` at ``positions``, ``[tokens, 1, head_dim / 2]`` in float32: computed
        once per forward and shared by every layer."""
        freqs = positions.float()[:, None] * self.inv_freq.to(positions.device)[None, :]
        return freqs.cos()[:, None, :], freqs.sin()[:, None, :]

    def forward(
        self, positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return apply_rotary(self.cos_sin(positions), q, k)


def apply_rotary(
    cos_sin: tuple[torch.Tensor, torch.Tensor], q: torch.Tensor, k: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE on ``q`` and ``k`` with precomputed :meth:`RotaryEmbedding.cos_sin`."""
    cos, sin = cos_sin
    return _rotate(q, cos, sin), _rotate(k, cos, sin)


def rotate_heads(cos_sin: tuple[torch.Tensor, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """RoPE on ``x [tokens, heads, head_dim]``: query and key heads side by side take one pass."""
    return _rotate(x, *cos_sin)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.float().chunk(2, dim=-1)
    out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return out.to(x.dtype)
