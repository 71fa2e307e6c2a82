"""One request's state: tokens, KV progress, block table and the owner tags it expects."""

from __future__ import annotations

import itertools
import time
from enum import Enum, auto

from prefixlint.engine.sampling import SamplingParams, TokenLogprob

_ids = itertools.count()


class SequenceStatus(Enum):
    WAITING = auto()
    RUNNING = auto()
    FINISHED = auto()


class Sequence:
    """A request inside the engine.

    Invariants: ``num_computed_tokens <= len(token_ids)``; tokens ``[0, num_computed_tokens)``
    have KV in the blocks of ``block_table``; ``block_tags[i]`` is the (namespace, generation)
    the sequence expects block ``block_table[i]`` to carry, and ``block_valid[i]`` how many of
    its slots the sequence has written or adopted.
    """

    def __init__(
        self,
        prompt_token_ids: list[int],
        params: SamplingParams,
        namespace: str = "",
        cacheable_tokens: int | None = None,
    ) -> None:
        self.seq_id = next(_ids)
        self.token_ids = list(prompt_token_ids)
        self.num_prompt_tokens = len(prompt_token_ids)
        self.params = params
        self.namespace = namespace
        self.cacheable_tokens = cacheable_tokens  # None: whole prompt may be read from/written to cache
        self.status = SequenceStatus.WAITING
        self.num_computed_tokens = 0
        self.num_cached_tokens = 0  # prefix-cache hit at first admission (what usage reports)
        self.admitted = False
        self.block_table: list[int] = []
        self.block_tags: list[tuple[str, int]] = []
        self.block_valid: list[int] = []
        self.num_hashed_blocks = 0
        self.block_hashes: list[bytes] = []
        self.arrival_time = time.perf_counter()
        self.first_token_time: float | None = None
        self.finish_reason: str | None = None  # stop | length | abort | error
        self.error: str | None = None
        self.logits: list = []
        self.logprobs: list[TokenLogprob] = []  # one per output token when params.logprobs is set
        self.generator = None

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def num_output_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def output_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens :]

    @property
    def is_finished(self) -> bool:
        return self.status is SequenceStatus.FINISHED

    def num_blocks_for(self, num_tokens: int, block_size: int) -> int:
        return (num_tokens + block_size - 1) // block_size
