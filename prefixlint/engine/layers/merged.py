"""Several linear layers over the same input run as one matrix product (q/k/v, gate/up), as
vLLM's merged projections do, without renaming their parameters.

The layers keep their own (Hugging Face) parameters, so loading by name and ``state_dict`` are
unchanged; their weights (and biases) become row slices of one tensor. One product instead of
three or two means fewer kernels and, on CPU, fewer thread-pool wake-ups: a 64-token prefill
step ran 7 small GEMMs per layer, each a few parallel regions. Anything that gives a layer a
weight of its own afterwards (``model.to(other_dtype)``, assigning a new tensor) is detected
before every call, and the layers then run one by one.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MergedLinear:
    """``linears`` (same input size, all with or all without bias) computed as one product."""

    def __init__(self, *linears: nn.Linear) -> None:
        self.linears = linears
        self.sizes = [lin.out_features for lin in linears]
        with torch.no_grad():
            self.weight = torch.cat([lin.weight.detach() for lin in linears])
            biases = [lin.bias for lin in linears]
            with_bias = all(b is not None for b in biases)
            self.bias = torch.cat([b.detach() for b in biases]) if with_bias else None
            for lin, w in zip(linears, self.weight.split(self.sizes), strict=True):
                lin.weight.data = w
            if self.bias is not None:
                for lin, b in zip(linears, self.bias.split(self.sizes), strict=True):
                    lin.bias.data = b

    def merged(self) -> bool:
        """Whether every layer's weight (and bias) is still its slice of the merged tensors."""
        return _are_slices(self.weight, [lin.weight for lin in self.linears]) and (
            self.bias is None or _are_slices(self.bias, [lin.bias for lin in self.linears])
        )

    def product(self, x: torch.Tensor) -> torch.Tensor | None:
        """The layers' outputs side by side (one product), or None when no longer merged."""
        return F.linear(x, self.weight, self.bias) if self.merged() else None

    def __call__(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Each layer's output (views of one product while merged)."""
        whole = self.product(x)
        if whole is not None:
            return list(whole.split(self.sizes, dim=-1))
        return [lin(x) for lin in self.linears]


def _are_slices(whole: torch.Tensor, parts: list) -> bool:
    step, start = whole.stride(0) * whole.element_size(), whole.data_ptr()
    for part in parts:
        if part is None or part.dtype != whole.dtype or part.device != whole.device:
            return False
        if part.data_ptr() != start or part.shape[1:] != whole.shape[1:] or not part.is_contiguous():
            return False
        start += part.shape[0] * step
    return start == whole.data_ptr() + whole.shape[0] * step
