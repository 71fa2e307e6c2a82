"""Attention over a paged KV cache: write the new K/V into their slots, gather each sequence's
pages, then scaled-dot-product attention with a lower-right causal mask.

Pitfall this module exists to avoid: ``scaled_dot_product_attention(is_causal=True)`` builds an
upper-left aligned mask (``tril(ones(L, S))``). With a cached prefix the query (L new tokens) is
shorter than the keys (S = cached + new), and query row ``i`` sits at absolute position
``S - L + i``; it must see keys ``0..S-L+i``, i.e. ``tril(ones(L, S), diagonal=S-L)``. We only use
``is_causal=True`` when ``L == S``, where both alignments agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

try:  # optional fast kernel on CUDA; its causal mask is bottom-right aligned (flash-attn >= 2.1)
    from flash_attn import flash_attn_func as _flash_attn_func
except Exception:
    _flash_attn_func = None


@dataclass
class SeqSlice:
    """Where one sequence's new tokens sit in the flat batch, and which pages hold its KV."""

    q_start: int
    q_len: int
    ctx_len: int  # cached + new tokens, i.e. keys visible to the last query
    block_ids: torch.Tensor  # physical block ids covering [0, ctx_len)


@dataclass
class PagedBatch:
    """Attention metadata for one engine step (shared by all layers)."""

    slot_mapping: torch.Tensor  # [num_new_tokens] flat slot = block_id * block_size + offset
    seqs: list[SeqSlice] = field(default_factory=list)


def lower_right_causal_mask(q_len: int, kv_len: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Boolean mask ``[q_len, kv_len]``: query ``i`` sees keys ``0..kv_len-q_len+i``."""
    return torch.ones(q_len, kv_len, dtype=torch.bool, device=device).tril(diagonal=kv_len - q_len)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal GQA attention, ``q [L, Hq, D]``, ``k, v [S, Hkv, D]`` with ``S >= L``; the queries
    are the last ``L`` positions of the keys. Returns ``[L, Hq, D]``."""
    q_len, kv_len = q.shape[0], k.shape[0]
    if kv_len < q_len:
        raise ValueError(f"fewer keys ({kv_len}) than queries ({q_len})")
    if _flash_attn_func is not None and q.is_cuda and q.dtype in (torch.float16, torch.bfloat16):
        return _flash_attn_func(q[None], k[None], v[None], softmax_scale=scale, causal=True)[0]
    qt, kt, vt = q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None]
    if q_len == kv_len:
        out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, scale=scale, enable_gqa=True)
    elif q_len == 1:  # one query at the last position sees every key
        out = F.scaled_dot_product_attention(qt, kt, vt, scale=scale, enable_gqa=True)
    else:
        mask = lower_right_causal_mask(q_len, kv_len, q.device)
        out = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale, enable_gqa=True)
    return out[0].transpose(0, 1)


def paged_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    batch: PagedBatch,
    scale: float,
) -> torch.Tensor:
    """Store ``k, v [T, Hkv, D]`` into the caches ``[num_blocks, block_size, Hkv, D]``, then attend
    each sequence's queries to its gathered pages. Returns ``[T, Hq, D]``."""
    num_kv_heads, head_dim = k_cache.shape[2], k_cache.shape[3]
    k_cache.view(-1, num_kv_heads, head_dim).index_copy_(0, batch.slot_mapping, k)
    v_cache.view(-1, num_kv_heads, head_dim).index_copy_(0, batch.slot_mapping, v)
    out = torch.empty_like(q)
    for s in batch.seqs:
        keys = k_cache.index_select(0, s.block_ids).flatten(0, 1)[: s.ctx_len]
        values = v_cache.index_select(0, s.block_ids).flatten(0, 1)[: s.ctx_len]
        rows = slice(s.q_start, s.q_start + s.q_len)
        out[rows] = causal_attention(q[rows], keys, values, scale)
    return out
