"""Attention over a paged KV cache: write the new K/V into their slots, then attend each
sequence's new queries to its earlier tokens (gathered from their pages) and to themselves.

Pitfall this module exists to avoid: ``scaled_dot_product_attention(is_causal=True)`` builds an
upper-left aligned mask (``tril(ones(L, S))``). With a cached prefix the query (L new tokens) is
shorter than the keys (S = prefix + new), and query row ``i`` sits at absolute position
``S - L + i``; it must see keys ``0..S-L+i``, i.e. ``tril(ones(L, S), diagonal=S-L)``.

A dense boolean mask of that shape is slow on CPU (SDPA then computes and masks every score), so
chunked prefill over a prefix is split the way vLLM's and SGLang's CPU backends split it:

* **prefix part**: the new queries against the ``S - L`` earlier keys, no mask at all;
* **suffix part**: the new queries against their own keys, SDPA's plain causal path (square);
* the two are merged exactly with their log-sum-exps (``out = w * prefix + (1 - w) * suffix``,
  ``w = sigmoid(lse_prefix - lse_suffix)``), as flash attention merges tiles.

That is the same work as one causal pass, so a prompt prefilled in chunks costs what it costs
whole. The log-sum-exps come from PyTorch's CPU flash-attention kernel
(``aten._scaled_dot_product_flash_attention_for_cpu``, the one SDPA itself calls on CPU); where a
torch build lacks it, the boolean mask is used instead. On CUDA, flash-attn (when installed) and
SDPA's lower-right causal bias handle the offset natively.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

log = logging.getLogger("prefixlint.engine")

try:  # optional fast kernel on CUDA; its causal mask is bottom-right aligned (flash-attn >= 2.1)
    from flash_attn import flash_attn_func as _flash_attn_func

    FLASH_ATTN_MISSING: str | None = None
except Exception as _exc:  # ImportError, or a build that does not match this torch/CUDA
    _flash_attn_func = None
    FLASH_ATTN_MISSING = f"{type(_exc).__name__}: {_exc}"

# SDPA's CPU flash kernel with its log-sum-exp: (out, lse) = op(q, k, v, dropout, is_causal, scale=)
_CPU_FLASH_WITH_LSE = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


@dataclass
class SeqSlice:
    """Where one sequence's new tokens sit in the flat batch, and which pages hold its KV."""

    q_start: int
    q_len: int
    ctx_len: int  # prefix + new tokens, i.e. keys visible to the last query
    block_ids: torch.Tensor  # physical block ids covering [0, ctx_len)
    # How many leading entries of block_ids are consecutive ids (first_block, first_block + 1,
    # ...): KV in those pages is read as a view of the pool, without a gather.
    consecutive_blocks: int = 0
    first_block: int = 0


@dataclass
class PagedBatch:
    """Attention metadata for one engine step (shared by all layers)."""

    slot_mapping: torch.Tensor  # [num_new_tokens] flat slot = block_id * block_size + offset
    seqs: list[SeqSlice] = field(default_factory=list)


def lower_right_causal_mask(q_len: int, kv_len: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Boolean mask ``[q_len, kv_len]``: query ``i`` sees keys ``0..kv_len-q_len+i``."""
    return torch.ones(q_len, kv_len, dtype=torch.bool, device=device).tril(diagonal=kv_len - q_len)


def _heads_first(x: torch.Tensor) -> torch.Tensor:
    """``[T, H, D]`` -> ``[1, H, T, D]`` (a view)."""
    return x.transpose(0, 1)[None]


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal GQA attention, ``q [L, Hq, D]``, ``k, v [S, Hkv, D]`` with ``S >= L``; the queries
    are the last ``L`` positions of the keys. Returns ``[L, Hq, D]``."""
    q_len, kv_len = q.shape[0], k.shape[0]
    if kv_len < q_len:
        raise ValueError(f"fewer keys ({kv_len}) than queries ({q_len})")
    if _flash_attn_func is not None and q.is_cuda and q.dtype in (torch.float16, torch.bfloat16):
        return _flash_attn_func(q[None], k[None], v[None], softmax_scale=scale, causal=True)[0]
    qt, kt, vt = _heads_first(q), _heads_first(k), _heads_first(v)
    if q_len == kv_len:
        out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, scale=scale, enable_gqa=True)
    elif q_len == 1:  # one query at the last position sees every key
        out = F.scaled_dot_product_attention(qt, kt, vt, scale=scale, enable_gqa=True)
    elif q.is_cuda:  # the fused CUDA kernels take the lower-right offset without a dense mask
        bias = causal_lower_right(q_len, kv_len)
        out = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=bias, scale=scale, enable_gqa=True)
    else:
        prefix = kv_len - q_len
        return prefix_suffix_attention(q, k[:prefix], v[:prefix], k[prefix:], v[prefix:], scale)
    return out[0].transpose(0, 1)


def _grouped(x: torch.Tensor, group: int) -> torch.Tensor:
    """``[T, Hkv, D]`` -> ``[Hkv, group, T, D]`` without copying: each KV head is repeated
    (stride 0) for the ``group`` query heads that share it."""
    t, kv_heads, dim = x.shape
    return x.transpose(0, 1)[:, None].expand(kv_heads, group, t, dim)


def prefix_suffix_attention(
    q: torch.Tensor,
    k_prefix: torch.Tensor,
    v_prefix: torch.Tensor,
    k_new: torch.Tensor,
    v_new: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """Causal attention of ``L`` new queries ``q [L, Hq, D]`` over ``P`` earlier keys (all visible)
    and their own ``L`` keys (causal): the prefix/suffix split, merged by log-sum-exp. Returns
    ``[L, Hq, D]``. Falls back to one SDPA call with a boolean mask where the CPU kernel with
    log-sum-exp is not available."""
    q_len, heads, dim = q.shape
    kv_heads = k_new.shape[1]
    group = heads // kv_heads
    if _CPU_FLASH_WITH_LSE is None or q.is_cuda:
        return _masked_attention(q, k_prefix, v_prefix, k_new, v_new, scale)
    # Prefix part: every query sees every prefix key, so the query heads that share a KV head can
    # be stacked as rows of one head ([1, Hkv, group * L, D]): each K/V head is read once.
    stacked = q.view(q_len, kv_heads, group, dim).permute(1, 2, 0, 3).reshape(1, kv_heads, group * q_len, dim)
    pre_out, pre_lse = _CPU_FLASH_WITH_LSE(
        stacked, _heads_first(k_prefix), _heads_first(v_prefix), 0.0, False, scale=scale
    )[:2]
    # Suffix part: causal, so each query head stays a head of its own ([Hkv, group, L, D]).
    qg = stacked.view(kv_heads, group, q_len, dim)
    new_out, new_lse = _CPU_FLASH_WITH_LSE(
        qg, _grouped(k_new, group), _grouped(v_new, group), 0.0, True, scale=scale
    )[:2]
    pre_out, pre_lse = pre_out.view(kv_heads, group, q_len, dim), pre_lse.view(kv_heads, group, q_len)
    weight = torch.sigmoid(pre_lse - new_lse).unsqueeze(-1)  # share of the softmax mass in the prefix
    out = torch.lerp(new_out, pre_out, weight).to(q.dtype)  # new + (prefix - new) * weight
    return out.reshape(heads, q_len, dim).transpose(0, 1)


def _masked_attention(
    q: torch.Tensor,
    k_prefix: torch.Tensor,
    v_prefix: torch.Tensor,
    k_new: torch.Tensor,
    v_new: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """The slow but portable way: all keys at once with a lower-right boolean mask."""
    k, v = torch.cat([k_prefix, k_new]), torch.cat([v_prefix, v_new])
    mask = lower_right_causal_mask(q.shape[0], k.shape[0], q.device)
    out = F.scaled_dot_product_attention(
        _heads_first(q), _heads_first(k), _heads_first(v), attn_mask=mask, scale=scale, enable_gqa=True
    )
    return out[0].transpose(0, 1)


def _gather(cache: torch.Tensor, s: SeqSlice, num_tokens: int) -> torch.Tensor:
    """The first ``num_tokens`` slots of ``s``'s pages, as ``[num_tokens, Hkv, D]``: a view of the
    pool when those pages are consecutive, else a copy."""
    num_blocks = -(-num_tokens // cache.shape[1])
    if num_blocks <= s.consecutive_blocks:
        return cache[s.first_block : s.first_block + num_blocks].flatten(0, 1)[:num_tokens]
    return cache.index_select(0, s.block_ids[:num_blocks]).flatten(0, 1)[:num_tokens]


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
    each sequence's queries to its context. Returns ``[T, Hq, D]``.

    A sequence with no earlier tokens attends to its new K/V directly (nothing is gathered). A
    prefill over a prefix gathers only the prefix and uses the prefix/suffix split. A decode step
    (one query) gathers its whole context from the pages."""
    num_kv_heads, head_dim = k_cache.shape[2], k_cache.shape[3]
    k_cache.view(-1, num_kv_heads, head_dim).index_copy_(0, batch.slot_mapping, k)
    v_cache.view(-1, num_kv_heads, head_dim).index_copy_(0, batch.slot_mapping, v)
    if len(batch.seqs) == 1 and batch.seqs[0].q_len == q.shape[0]:
        return _attend(q, k, v, k_cache, v_cache, batch.seqs[0], scale)  # no copy into a batch buffer
    out = torch.empty_like(q)
    for s in batch.seqs:
        rows = slice(s.q_start, s.q_start + s.q_len)
        out[rows] = _attend(q[rows], k[rows], v[rows], k_cache, v_cache, s, scale)
    return out


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    s: SeqSlice,
    scale: float,
) -> torch.Tensor:
    """One sequence's new queries ``q`` (and its new ``k``, ``v``) over its context."""
    prefix = s.ctx_len - s.q_len
    if prefix == 0:
        return causal_attention(q, k, v, scale)
    if s.q_len == 1 or q.is_cuda:
        keys, values = _gather(k_cache, s, s.ctx_len), _gather(v_cache, s, s.ctx_len)
        return causal_attention(q, keys, values, scale)
    keys, values = _gather(k_cache, s, prefix), _gather(v_cache, s, prefix)
    return prefix_suffix_attention(q, keys, values, k, v, scale)


def flash_attn_missing_message() -> str | None:
    """What a CUDA run logs at startup when the flash-attn kernel cannot be used; None when it can."""
    if FLASH_ATTN_MISSING is None:
        return None
    return (
        f"flash-attn is not available ({FLASH_ATTN_MISSING}); attention uses PyTorch SDPA. "
        "For the flash-attn path: pip install 'prefixlint[flash-attn]'"
    )


def attention_backend(device: torch.device, dtype: torch.dtype) -> str:
    """What computes attention on ``device``, for the startup summary."""
    if device.type == "cuda":
        if _flash_attn_func is not None and dtype in (torch.float16, torch.bfloat16):
            return "flash-attn"
        return (
            "sdpa (flash-attn not installed)" if FLASH_ATTN_MISSING else f"sdpa ({dtype} is not flash-attn's)"
        )
    return "sdpa, prefix/suffix split" if _CPU_FLASH_WITH_LSE is not None else "sdpa, boolean mask (slow)"
