"""Tensors in, logits out: owns the model and the per-layer KV block pools."""

from __future__ import annotations

import logging

import torch

from prefixlint.engine.config import EngineConfig, EngineConfigError, ModelConfig
from prefixlint.engine.layers.attention import (
    PagedBatch,
    SeqSlice,
    attention_backend,
    flash_attn_missing_message,
)
from prefixlint.engine.models.llama import build_model
from prefixlint.engine.sequence import Sequence

log = logging.getLogger("prefixlint.engine")


def resolve_device(name: str) -> torch.device:
    """``auto`` (CUDA when available), ``cpu`` or ``cuda[:N]``; a device this torch build cannot
    use is a configuration error, not a crash later."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise EngineConfigError(f"unknown device {name!r}: choose auto, cpu or cuda[:N]") from exc
    if device.type == "cpu":
        return device
    if device.type != "cuda":
        raise EngineConfigError(f"device {name!r} is not supported: choose auto, cpu or cuda[:N]")
    if torch.version.cuda is None:
        raise EngineConfigError(
            f"--device {name}: this torch build ({torch.__version__}) has no CUDA support; "
            "install a CUDA build of torch, or use --device cpu"
        )
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise EngineConfigError(f"--device {name}: no CUDA device is visible to this process")
    if device.index is not None and device.index >= count:
        raise EngineConfigError(
            f"--device {name}: only {count} CUDA device(s) are visible (cuda:0..{count - 1})"
        )
    return device


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    table = {
        "float32": torch.float32,
        "fp32": torch.float32,
        "bfloat16": torch.bfloat16,
        "bf16": torch.bfloat16,
        "float16": torch.float16,
        "fp16": torch.float16,
    }
    if name not in table:
        raise EngineConfigError(f"unknown dtype {name!r}: choose auto, float32, bfloat16 or float16")
    return table[name]


def consecutive_run(ids: list[int]) -> int:
    """How many leading ``ids`` are consecutive (``b, b + 1, ...``)."""
    if not ids:
        return 0
    first = ids[0]
    if ids[-1] - first == len(ids) - 1 and ids == list(range(first, first + len(ids))):
        return len(ids)  # the common case, checked at C speed
    return next(i for i, b in enumerate(ids) if b != first + i)


class ModelRunner:
    """Builds the model, sizes and allocates the KV pools, and runs one batched step."""

    def __init__(self, config: EngineConfig, model_config: ModelConfig) -> None:
        self.config = config
        self.model_config = model_config
        self.device = resolve_device(config.device)
        self.dtype = resolve_dtype(config.dtype, self.device)
        self.block_size = config.block_size
        self.attention = attention_backend(self.device, self.dtype)
        missing = flash_attn_missing_message()
        if self.device.type == "cuda" and missing:
            log.info("%s", missing)
        self.model = build_model(model_config, self.device, self.dtype, config.seed, config.model_dir)
        self.num_blocks = config.num_blocks or self._blocks_from_memory()
        shape = (self.num_blocks, self.block_size, model_config.num_kv_heads, model_config.head_dim)
        self.kv_caches = [
            (
                torch.zeros(shape, dtype=self.dtype, device=self.device),
                torch.zeros(shape, dtype=self.dtype, device=self.device),
            )
            for _ in range(model_config.num_layers)
        ]
        self.logit_bias: torch.Tensor | None = None  # -inf on ids the tokenizer cannot decode

    def _blocks_from_memory(self) -> int:
        per_block = self.model_config.kv_bytes_per_token(self.dtype.itemsize) * self.block_size
        if self.device.type == "cuda":
            free, _total = torch.cuda.mem_get_info(self.device)
            # Leave room for activations of one max_num_batched_tokens step.
            budget = free * self.config.gpu_memory_utilization
        else:
            budget = self.config.cpu_kv_cache_gib * 2**30
        return max(1, int(budget // per_block))

    def set_invalid_token_ids(self, ids: list[int]) -> None:
        if not ids:
            return
        bias = torch.zeros(self.model_config.vocab_size, dtype=torch.float32, device=self.device)
        keep = [i for i in ids if i < self.model_config.vocab_size]
        bias[torch.tensor(keep, dtype=torch.long)] = -torch.inf
        self.logit_bias = bias

    @torch.inference_mode()
    def scrub(self, block_ids: list[int]) -> None:
        """Zero the K and V of ``block_ids`` in every layer."""
        idx = torch.tensor(block_ids, dtype=torch.long, device=self.device)
        for k, v in self.kv_caches:
            k.index_fill_(0, idx, 0)
            v.index_fill_(0, idx, 0)

    @torch.inference_mode()
    def run(self, batch: list[tuple[Sequence, int]]) -> list[torch.Tensor | None]:
        """Compute ``n`` new tokens for each ``(seq, n)``. Returns float32 logits (on CPU) of the
        last position for sequences whose tokens are now all computed, else None."""
        ids: list[int] = []
        positions: list[torch.Tensor] = []
        slots: list[torch.Tensor] = []
        slices: list[SeqSlice] = []
        last_rows: list[int] = []
        bs, dev = self.block_size, self.device
        for seq, n in batch:
            start = seq.num_computed_tokens
            blocks = seq.block_table[: (start + n + bs - 1) // bs]
            table = torch.tensor(blocks, dtype=torch.long)
            pos = torch.arange(start, start + n)
            run = consecutive_run(blocks)
            slices.append(SeqSlice(len(ids), n, start + n, table.to(dev), run, blocks[0] if run else 0))
            ids.extend(seq.token_ids[start : start + n])
            positions.append(pos)
            slots.append(table[pos // bs] * bs + pos % bs)
            last_rows.append(len(ids) - 1 if start + n == len(seq) else -1)
        paged = PagedBatch(torch.cat(slots).to(dev), slices)
        hidden = self.model(
            torch.tensor(ids, dtype=torch.long, device=dev),
            torch.cat(positions).to(dev),
            self.kv_caches,
            paged,
        )
        rows = [r for r in last_rows if r >= 0]
        if not rows:
            return [None] * len(batch)
        logits = self.model.compute_logits(hidden[torch.tensor(rows, device=dev)]).float()
        if self.logit_bias is not None:
            logits = logits + self.logit_bias
        logits = logits.cpu()
        it = iter(logits)
        return [next(it) if r >= 0 else None for r in last_rows]
