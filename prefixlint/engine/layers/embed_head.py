"""Token embedding and the LM head (optionally tied to the embedding)."""

from __future__ import annotations

import torch
from torch import nn


class LMHead(nn.Module):
    """Projects hidden states to vocabulary logits; shares the embedding weight when tied."""

    def __init__(self, embed: nn.Embedding, tied: bool) -> None:
        super().__init__()
        self.tied = tied
        self._embed = [embed]  # a list, so the tied weight is not registered twice
        if not tied:
            self.weight = nn.Parameter(torch.empty_like(embed.weight))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        weight = self._embed[0].weight if self.tied else self.weight
        return hidden @ weight.t()
