"""What runs next: continuous batching of decodes and (chunked) prefills under a token budget.

Every step, each running sequence asks for ``len(seq) - num_computed_tokens`` tokens: 1 when
decoding, more while its prompt (or, after preemption, its whole history) is being prefilled.
Decodes go first, then running prefills, then newly admitted sequences, until
``max_num_batched_tokens`` is spent; a long prompt is split into chunks across steps. Admission
allocates the blocks for all of a sequence's tokens at once (adopting prefix-cache hits). When a
decode needs a block and none is free, the most recently admitted sequence is preempted: its
blocks are freed and it waits to be recomputed, mostly from the prefix cache.
"""

from __future__ import annotations

from collections import deque

from prefixlint.engine.block_manager import BlockManager
from prefixlint.engine.config import EngineConfig
from prefixlint.engine.sequence import Sequence, SequenceStatus


class Scheduler:
    def __init__(self, config: EngineConfig, block_manager: BlockManager) -> None:
        self.max_num_seqs = config.max_num_seqs
        self.max_num_batched_tokens = config.max_num_batched_tokens
        self.bm = block_manager
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.num_preemptions = 0

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def schedule(self) -> list[tuple[Sequence, int]]:
        """The ``(sequence, number of new tokens)`` pairs to run this step."""
        budget = self.max_num_batched_tokens
        chosen: dict[int, tuple[Sequence, int]] = {}
        order = sorted(self.running, key=lambda s: len(s) - s.num_computed_tokens > 1)  # decodes first
        for seq in order:
            if budget == 0:
                break
            if seq.status is not SequenceStatus.RUNNING:
                continue  # preempted earlier in this loop
            n = min(len(seq) - seq.num_computed_tokens, budget)
            while not self.bm.can_append(seq, n):
                victim = self.running[-1]
                if victim.seq_id in chosen:
                    budget += chosen.pop(victim.seq_id)[1]
                self.preempt(victim)
                if victim is seq:
                    break
            else:
                self.bm.append_blocks(seq, n)
                chosen[seq.seq_id] = (seq, n)
                budget -= n
        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
            seq = self.waiting[0]
            if not self.bm.can_allocate(seq):
                break
            self.waiting.popleft()
            self.bm.allocate(seq)
            seq.status = SequenceStatus.RUNNING
            self.running.append(seq)
            n = min(len(seq) - seq.num_computed_tokens, budget)
            chosen[seq.seq_id] = (seq, n)
            budget -= n
        return list(chosen.values())

    def preempt(self, seq: Sequence) -> None:
        self.running.remove(seq)
        self.bm.free_seq(seq)
        seq.status = SequenceStatus.WAITING
        self.waiting.appendleft(seq)
        self.num_preemptions += 1

    def finish(self, seq: Sequence, reason: str) -> None:
        """Remove ``seq`` from wherever it is and free its blocks (idempotent)."""
        if seq.status is SequenceStatus.FINISHED:
            return
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        self.bm.free_seq(seq)
        seq.status = SequenceStatus.FINISHED
        seq.finish_reason = reason
