"""The KV block pool: allocation, reference counts, prefix-cache hashes and LRU eviction.

Hashing follows vLLM: block ``i``'s key is ``sha256(parent_hash || [salt, block 0 only] ||
tokens)``, so the salt (the tenant namespace) reaches every later block through the chain. A hit
also compares the stored tokens and namespace, so even a hash collision cannot alias content.
Hits stop at the first miss and are capped at ``len(tokens) - 1``, so at least one token is
always computed and the request gets logits.

Free blocks live in one ordered dict, the eviction order: blocks with no cached content at the
front (reused first), cached blocks at the back in least-recently-freed order. Taking a cached
block off the front evicts its hash. Every (re)allocation bumps the block's generation and sets
its owner namespace; those are the owner tags that :mod:`integrity` checks. Generations come from
one pool-wide counter, so a tag names exactly one allocation of one block.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from prefixlint.engine.sequence import Sequence

NONE_HASH = hashlib.sha256(b"prefixlint.engine block hash v1").digest()


@dataclass
class Block:
    """One physical block: the same slot range in every layer's K and V pools."""

    block_id: int
    ref_count: int = 0
    hash: bytes | None = None
    token_ids: tuple[int, ...] = ()
    namespace: str = ""
    generation: int = 0
    num_written: int = 0  # leading slots holding KV written since the last (re)allocation


def hash_block(parent: bytes | None, token_ids: list[int] | tuple[int, ...], salt: str = "") -> bytes:
    """Chained block hash. ``salt`` is mixed in only for block 0 (``parent is None``)."""
    h = hashlib.sha256(parent if parent is not None else NONE_HASH)
    if parent is None:
        raw = salt.encode()
        h.update(b"salt" + struct.pack("<I", len(raw)) + raw)
    h.update(struct.pack(f"<{len(token_ids)}q", *token_ids))
    return h.digest()


def hash_blocks(token_ids: list[int], block_size: int, salt: str = "") -> list[bytes]:
    """Hashes of every full block of ``token_ids``."""
    out: list[bytes] = []
    parent = None
    for i in range(len(token_ids) // block_size):
        parent = hash_block(parent, token_ids[i * block_size : (i + 1) * block_size], salt)
        out.append(parent)
    return out


class BlockManager:
    """Owns block metadata; the model runner owns the tensors."""

    def __init__(
        self,
        num_blocks: int,
        block_size: int,
        enable_prefix_caching: bool = True,
        scrub_on_free: bool = False,
        scrub_fn: Callable[[list[int]], None] | None = None,
    ) -> None:
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.scrub_on_free = scrub_on_free
        self.scrub_fn = scrub_fn
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.free: OrderedDict[int, None] = OrderedDict((i, None) for i in range(num_blocks))
        self.hash_to_block: dict[bytes, int] = {}
        self.hits = self.misses = self.evictions = 0  # in blocks
        self.quarantined = 0  # blocks a freed sequence no longer owned (left untouched)
        # Calls of allocate() and append_blocks(), the only ways blocks are handed out: a path that
        # must allocate nothing leaves this unchanged (free counts would miss an allocate-then-free).
        self.allocation_calls = 0
        self._generation = 0
        self._last_lookup: tuple[int, int, tuple[list[int], list[bytes], int]] | None = None

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_free(self) -> int:
        return len(self.free)

    @property
    def num_cached(self) -> int:
        return len(self.hash_to_block)

    # -- lookup and allocation -------------------------------------------------------------

    def _cache_limit(self, seq: Sequence) -> int:
        limit = len(seq) - 1  # always compute at least the last token
        if seq.cacheable_tokens is not None:
            limit = min(limit, seq.cacheable_tokens)
        return limit if self.enable_prefix_caching else 0

    def _lookup(self, seq: Sequence) -> tuple[list[int], list[bytes], int]:
        """Leading cached block ids, their hashes, and how many full blocks were eligible."""
        bs, eligible = self.block_size, self._cache_limit(seq) // self.block_size
        ids: list[int] = []
        hashes: list[bytes] = []
        parent = None
        for i in range(eligible):
            tokens = tuple(seq.token_ids[i * bs : (i + 1) * bs])
            parent = hash_block(parent, tokens, seq.namespace)
            bid = self.hash_to_block.get(parent)
            if bid is None:
                break
            blk = self.blocks[bid]
            if blk.token_ids != tokens or blk.namespace != seq.namespace:
                break  # a collision, or a foreign namespace: never alias
            ids.append(bid)
            hashes.append(parent)
        return ids, hashes, eligible

    def can_allocate(self, seq: Sequence) -> bool:
        """Whether the blocks for all of ``seq``'s current tokens can be found now."""
        found = self._lookup(seq)
        self._last_lookup = (seq.seq_id, len(seq), found)  # reused by an allocate() right after
        hit_ids = found[0]
        needed = seq.num_blocks_for(len(seq), self.block_size) - len(hit_ids)
        revived = sum(1 for b in hit_ids if self.blocks[b].ref_count == 0)
        return self.num_free - revived >= needed

    def allocate(self, seq: Sequence) -> None:
        """Give ``seq`` blocks for all its tokens, adopting cached ones. Call ``can_allocate`` first."""
        assert not seq.block_table, "sequence already holds blocks"
        self.allocation_calls += 1
        memo, self._last_lookup = self._last_lookup, None
        if (
            memo is not None
            and memo[:2] == (seq.seq_id, len(seq))
            and all(self.blocks[b].hash == h for b, h in zip(memo[2][0], memo[2][1], strict=True))
        ):
            hit_ids, hashes, eligible = memo[2]
        else:
            hit_ids, hashes, eligible = self._lookup(seq)
        for bid in hit_ids:
            blk = self.blocks[bid]
            if blk.ref_count == 0:
                del self.free[bid]
            blk.ref_count += 1
            self._attach(seq, blk, self.block_size)
        for _ in range(seq.num_blocks_for(len(seq), self.block_size) - len(hit_ids)):
            self._attach(seq, self._take_fresh(seq.namespace), 0)
        seq.block_hashes = hashes
        seq.num_hashed_blocks = len(hit_ids)
        seq.num_computed_tokens = len(hit_ids) * self.block_size
        if not seq.admitted:
            seq.admitted = True
            seq.num_cached_tokens = seq.num_computed_tokens
            self.hits += len(hit_ids)
            self.misses += eligible - len(hit_ids)

    def can_append(self, seq: Sequence, num_new_tokens: int) -> bool:
        needed = seq.num_blocks_for(seq.num_computed_tokens + num_new_tokens, self.block_size)
        return self.num_free >= needed - len(seq.block_table)

    def append_blocks(self, seq: Sequence, num_new_tokens: int) -> None:
        """Grow ``seq``'s table to cover ``num_new_tokens`` more computed tokens."""
        self.allocation_calls += 1
        needed = seq.num_blocks_for(seq.num_computed_tokens + num_new_tokens, self.block_size)
        while len(seq.block_table) < needed:
            self._attach(seq, self._take_fresh(seq.namespace), 0)

    def _attach(self, seq: Sequence, blk: Block, valid: int) -> None:
        seq.block_table.append(blk.block_id)
        seq.block_tags.append((blk.namespace, blk.generation))
        seq.block_valid.append(valid)

    def _take_fresh(self, namespace: str) -> Block:
        if not self.free:
            raise RuntimeError("KV block pool exhausted")
        bid, _ = self.free.popitem(last=False)
        blk = self.blocks[bid]
        if blk.hash is not None:
            self._forget(blk)
            self.evictions += 1
        self._generation += 1
        blk.generation = self._generation
        blk.namespace = namespace
        blk.ref_count = 1
        blk.num_written = 0
        return blk

    def _forget(self, blk: Block) -> None:
        if self.hash_to_block.get(blk.hash) == blk.block_id:  # type: ignore[arg-type]
            del self.hash_to_block[blk.hash]  # type: ignore[arg-type]
        blk.hash, blk.token_ids = None, ()

    # -- writes, caching, freeing -------------------------------------------------------------

    def mark_written(self, seq: Sequence, start: int, end: int) -> None:
        """Record that KV for token positions ``[start, end)`` of ``seq`` is now in its blocks."""
        bs = self.block_size
        for i in range(start // bs, (end - 1) // bs + 1):
            filled = min(bs, end - i * bs)
            blk = self.blocks[seq.block_table[i]]
            blk.num_written = max(blk.num_written, filled)
            seq.block_valid[i] = max(seq.block_valid[i], filled)

    def cache_full_blocks(self, seq: Sequence) -> None:
        """Register every block of ``seq`` that is now full of computed KV in the prefix cache."""
        if not self.enable_prefix_caching:
            return
        bs = self.block_size
        limit = seq.num_computed_tokens
        if seq.cacheable_tokens is not None:
            limit = min(limit, seq.cacheable_tokens)
        while (seq.num_hashed_blocks + 1) * bs <= limit:
            i = seq.num_hashed_blocks
            parent = seq.block_hashes[-1] if seq.block_hashes else None
            tokens = tuple(seq.token_ids[i * bs : (i + 1) * bs])
            h = hash_block(parent, tokens, seq.namespace)
            blk = self.blocks[seq.block_table[i]]
            if h not in self.hash_to_block and blk.hash is None:
                blk.hash, blk.token_ids = h, tokens
                self.hash_to_block[h] = blk.block_id
            seq.block_hashes.append(h)
            seq.num_hashed_blocks += 1

    def free_seq(self, seq: Sequence) -> None:
        """Drop ``seq``'s references; blocks reaching zero go back to the free list."""
        scrubbed: list[int] = []
        for bid, tag in zip(reversed(seq.block_table), reversed(seq.block_tags), strict=False):  # tails first
            blk = self.blocks[bid]
            if (blk.namespace, blk.generation) != tag:
                self.quarantined += 1  # a corrupted table entry: never touch another owner's block
                continue
            blk.ref_count -= 1
            assert blk.ref_count >= 0, f"block {bid} ref count below zero"
            if blk.ref_count:
                continue
            if self.scrub_on_free:
                self._forget(blk)
                blk.num_written = 0
                scrubbed.append(bid)
            if blk.hash is None:
                self.free[bid] = None
                self.free.move_to_end(bid, last=False)
            else:
                self.free[bid] = None
        if scrubbed and self.scrub_fn is not None:
            self.scrub_fn(scrubbed)
        seq.block_table, seq.block_tags, seq.block_valid = [], [], []
        seq.block_hashes, seq.num_hashed_blocks = [], 0
        seq.num_computed_tokens = 0

    def stats(self) -> dict[str, int]:
        return {
            "hits": self.hits,
            "misses": self.misses,
            "evictions": self.evictions,
            "blocks_total": self.num_blocks,
            "block_size": self.block_size,
            "pool_tokens": self.num_blocks * self.block_size,
            "blocks_free": self.num_free,
            "blocks_cached": self.num_cached,
            "blocks_in_use": self.num_blocks - self.num_free,
            "allocation_calls": self.allocation_calls,
        }
