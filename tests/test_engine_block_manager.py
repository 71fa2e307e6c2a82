"""Block pool: chained sha256 hashes, salt in block 0 only, token compare on hit, ref counts, LRU
eviction and the prompt_len - 1 cap. No model involved."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")

from prefixlint.engine.block_manager import NONE_HASH, BlockManager, hash_block, hash_blocks
from prefixlint.engine.sampling import SamplingParams
from prefixlint.engine.sequence import Sequence

pytestmark = pytest.mark.engine
BS = 4


def admit(bm: BlockManager, tokens: list[int], ns: str = "", cacheable: int | None = None) -> Sequence:
    """Allocate like the scheduler, then pretend the whole prompt was computed."""
    seq = Sequence(tokens, SamplingParams(), ns, cacheable)
    assert bm.can_allocate(seq)
    bm.allocate(seq)
    start = seq.num_computed_tokens
    if start < len(seq):
        bm.mark_written(seq, start, len(seq))
    seq.num_computed_tokens = len(seq)
    bm.cache_full_blocks(seq)
    return seq


def test_hash_chain_links_every_block_to_its_parent() -> None:
    tokens = list(range(12))
    hashes = hash_blocks(tokens, BS)
    assert len(hashes) == 3 and len(set(hashes)) == 3
    assert hashes[0] == hash_block(None, tokens[:4])
    assert hashes[1] == hash_block(hashes[0], tokens[4:8])
    # Same block tokens under a different parent hash differently: position is part of the key.
    assert hash_block(hashes[0], tokens[4:8]) != hash_block(None, tokens[4:8])
    # Changing block 0 changes every later hash.
    changed = hash_blocks([99, *tokens[1:]], BS)
    assert all(a != b for a, b in zip(hashes, changed, strict=False))
    assert hash_blocks(tokens[:3], BS) == []  # partial blocks are never hashed
    assert len(NONE_HASH) == 32 and len(hashes[0]) == 32  # sha256


def test_salt_enters_block_zero_only_and_reaches_the_rest_through_the_chain() -> None:
    tokens = list(range(12))
    plain = hash_blocks(tokens, BS)
    alice, bob = hash_blocks(tokens, BS, "alice"), hash_blocks(tokens, BS, "bob")
    assert len({plain[0], alice[0], bob[0]}) == 3
    assert all(len({p, a, b}) == 3 for p, a, b in zip(plain, alice, bob, strict=False))
    # Block 1 hashes only (parent, tokens): the salt argument is ignored when there is a parent.
    assert hash_block(alice[0], tokens[4:8], "bob") == hash_block(alice[0], tokens[4:8]) == alice[1]


def test_hit_adopts_blocks_and_counts_refs() -> None:
    bm = BlockManager(16, BS)
    a = admit(bm, list(range(10)))  # blocks: 4 + 4 + 2
    assert a.num_cached_tokens == 0 and bm.misses == 2 and bm.hits == 0
    b = admit(bm, list(range(10)))
    assert b.num_cached_tokens == 8 and b.block_table[:2] == a.block_table[:2]
    assert b.block_table[2] != a.block_table[2]  # the partial tail is private
    assert [bm.blocks[i].ref_count for i in a.block_table] == [2, 2, 1]
    bm.free_seq(a)
    assert [bm.blocks[i].ref_count for i in b.block_table] == [1, 1, 1]
    bm.free_seq(b)
    assert bm.num_free == 16 and all(blk.ref_count == 0 for blk in bm.blocks)
    assert bm.num_cached == 2  # freed but still reusable
    c = admit(bm, list(range(10)))
    assert c.num_cached_tokens == 8 and bm.hits == 4


def test_hit_requires_equal_tokens_even_when_the_hash_matches() -> None:
    bm = BlockManager(16, BS)
    a = admit(bm, list(range(9)))
    # Simulate a collision: the hash of other tokens points at a's block 0.
    other = [50, 51, 52, 53, 54, 55, 56, 57, 58]
    bm.hash_to_block[hash_block(None, other[:4])] = a.block_table[0]
    b = admit(bm, other)
    assert b.num_cached_tokens == 0 and a.block_table[0] not in b.block_table


def test_namespaces_never_share_blocks() -> None:
    bm = BlockManager(16, BS)
    admit(bm, list(range(9)), ns="alice")
    assert admit(bm, list(range(9)), ns="alice").num_cached_tokens == 8
    assert admit(bm, list(range(9)), ns="bob").num_cached_tokens == 0
    assert admit(bm, list(range(9))).num_cached_tokens == 0


@pytest.mark.parametrize(("length", "cached"), [(8, 4), (9, 8), (5, 4), (4, 0), (1, 0)])
def test_hits_are_capped_at_prompt_length_minus_one(length: int, cached: int) -> None:
    bm = BlockManager(16, BS)
    admit(bm, list(range(12)))
    seq = admit(bm, list(range(length)))
    assert seq.num_cached_tokens == cached


def test_cacheable_tokens_limits_reads_and_writes() -> None:
    bm = BlockManager(16, BS)
    admit(bm, list(range(12)), cacheable=5)  # only block 0 lies wholly inside the first 5 tokens
    assert bm.num_cached == 1
    assert admit(bm, list(range(12))).num_cached_tokens == 4
    assert admit(bm, list(range(12)), cacheable=0).num_cached_tokens == 0


def test_lru_eviction_reuses_empty_blocks_first_then_the_least_recently_freed() -> None:
    bm = BlockManager(4, BS)
    bm.free_seq(admit(bm, [1] * 4 + [2]))  # cached block [1]*4 + an uncached tail
    bm.free_seq(admit(bm, [3] * 4 + [4]))  # cached block [3]*4, freed later
    assert bm.num_cached == 2 and bm.num_free == 4
    admit(bm, [5] * 5)  # two fresh blocks: the empty ones go first
    assert bm.evictions == 0 and bm.num_cached == 3
    admit(bm, [6])  # one more: the least recently freed cached block is evicted
    assert bm.evictions == 1
    assert hash_block(None, [1] * 4) not in bm.hash_to_block
    assert hash_block(None, [3] * 4) in bm.hash_to_block


def test_eviction_order_and_generation_bump() -> None:
    bm = BlockManager(3, BS)
    a = admit(bm, [1] * 4 + [9])
    gens = {i: bm.blocks[i].generation for i in a.block_table}
    bm.free_seq(a)
    b = admit(bm, [2] * 9)  # needs all 3 blocks: evicts the cached one
    assert bm.evictions == 1 and bm.num_cached == 2
    for i in a.block_table:
        assert bm.blocks[i].generation == gens[i] + 1  # every reallocation bumps the generation
    assert admit_fails(bm, [1] * 5)
    bm.free_seq(b)
    assert admit(bm, [1] * 5).num_cached_tokens == 0  # evicted content is gone


def admit_fails(bm: BlockManager, tokens: list[int]) -> bool:
    return not bm.can_allocate(Sequence(tokens, SamplingParams()))


def test_scrub_on_free_drops_content_and_calls_the_scrubber() -> None:
    scrubbed: list[int] = []
    bm = BlockManager(8, BS, scrub_on_free=True, scrub_fn=scrubbed.extend)
    a = admit(bm, list(range(9)))
    b = admit(bm, list(range(9)))  # concurrent sharing still works
    assert b.num_cached_tokens == 8
    tail = a.block_table[2]
    bm.free_seq(a)
    assert scrubbed == [tail]  # shared blocks are still in use by b
    bm.free_seq(b)
    assert len(scrubbed) == 4 and bm.num_cached == 0
    assert all(blk.num_written == 0 for blk in bm.blocks)
    assert admit(bm, list(range(9))).num_cached_tokens == 0


def test_prefix_caching_off_never_hits() -> None:
    bm = BlockManager(8, BS, enable_prefix_caching=False)
    admit(bm, list(range(9)))
    assert admit(bm, list(range(9))).num_cached_tokens == 0 and bm.num_cached == 0
