"""Sampling parameters, the sampler (greedy, temperature, top-p) and per-token logprobs."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

MAX_LOGPROBS = 20  # as vLLM's default max_logprobs (OpenAI allows 20 on chat, 5 on completions)


@dataclass(frozen=True)
class TokenLogprob:
    """A sampled token's log-probability and the ``top`` most likely tokens at its position, from
    the model's raw distribution (before temperature and top-p, as vLLM's default)."""

    token_id: int
    logprob: float
    top: tuple[tuple[int, float], ...] = field(default=())


@dataclass
class SamplingParams:
    """How to pick tokens for one request. ``temperature=0`` is greedy."""

    max_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    ignore_eos: bool = False
    stop_token_ids: tuple[int, ...] = ()
    return_logits: bool = False  # keep each sampled position's logits (float32, on CPU)
    # Log-probabilities of each sampled token plus this many most likely alternatives (None: off).
    logprobs: int | None = None

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError("temperature must be >= 0 and top_p in (0, 1]")
        if self.logprobs is not None and not 0 <= self.logprobs <= MAX_LOGPROBS:
            raise ValueError(f"logprobs must be between 0 and {MAX_LOGPROBS}")


def sample(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None) -> int:
    """One token id from a 1-D logits row."""
    if params.temperature == 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float() / params.temperature, dim=-1)
    if params.top_p < 1:
        sorted_p, idx = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_p, 0) - sorted_p < params.top_p
        probs = torch.zeros_like(probs).scatter_(0, idx[keep], sorted_p[keep])
    return int(torch.multinomial(probs, 1, generator=generator))


def token_logprob(logits: torch.Tensor, token: int, num_top: int) -> TokenLogprob:
    """The log-probability of ``token`` and the ``num_top`` best alternatives in a logits row."""
    lp = torch.log_softmax(logits.float(), dim=-1)
    top: tuple[tuple[int, float], ...] = ()
    if num_top:
        values, ids = torch.topk(lp, num_top)
        top = tuple(zip(ids.tolist(), values.tolist(), strict=True))
    return TokenLogprob(token, float(lp[token]), top)
