"""Isolation by construction: owner-tag checks on every KV read and write, plus test-only fault
injection that reproduces the failure they exist to catch.

Each physical block carries ``(namespace, generation)``; the generation is bumped every time the
block is handed out fresh. A sequence records, per block, the tag it was given and how many slots
it believes are valid. Before a step reads a sequence's context or writes its new tokens, the
engine checks, for every block involved:

* the block's namespace and generation equal the tag the sequence recorded (no foreign or
  recycled block), and
* the block really holds at least as many written slots as the read needs, and the sequence
  agrees (no reserved-but-unwritten block is read as if it held KV), and
* a block about to be written belongs to this sequence alone and is not in the prefix cache.

A failed check raises :class:`KVIntegrityError`; the engine fails only that request.
"""

from __future__ import annotations

from operator import attrgetter

from prefixlint.engine.block_manager import BlockManager
from prefixlint.engine.sequence import Sequence


class KVIntegrityError(RuntimeError):
    """A sequence was about to read or write KV it does not own."""

    def __init__(self, seq_id: int, detail: str) -> None:
        super().__init__(f"KV integrity violation (request {seq_id}): {detail}")
        self.seq_id = seq_id
        self.detail = detail


_TAG = attrgetter("namespace", "generation")
_WRITTEN = attrgetter("num_written")


def verify(seq: Sequence, bm: BlockManager, num_new_tokens: int) -> None:
    """Check ``seq``'s blocks before it reads ``[0, computed)`` and writes ``num_new_tokens``.

    The common case is a few C-level list operations; the per-block loop only runs to name the
    offending block once something is already wrong."""
    bs = bm.block_size
    ctx = seq.num_computed_tokens
    end = ctx + num_new_tokens
    nblk = (end + bs - 1) // bs
    if len(seq.block_table) < nblk or len(seq) < end:
        raise KVIntegrityError(seq.seq_id, f"{end} tokens exceed the {len(seq.block_table)}-block table")
    blocks = [bm.blocks[b] for b in seq.block_table[:nblk]]
    full = ctx // bs
    ok = list(map(_TAG, blocks)) == seq.block_tags[:nblk]
    if ok and full:
        ok = min(map(_WRITTEN, blocks[:full])) >= bs and min(seq.block_valid[:full]) >= bs
    if ok and ctx % bs:
        ok = blocks[full].num_written >= ctx % bs and seq.block_valid[full] >= ctx % bs
    if ok:
        ok = all(b.ref_count == 1 and b.hash is None for b in blocks[full:])
    if not ok:
        _explain(seq, blocks, ctx, bs)


def _explain(seq: Sequence, blocks: list, ctx: int, bs: int) -> None:
    for i, blk in enumerate(blocks):
        if (blk.namespace, blk.generation) != seq.block_tags[i]:
            raise KVIntegrityError(
                seq.seq_id,
                f"block {blk.block_id} tag {(blk.namespace, blk.generation)} != expected {seq.block_tags[i]}",
            )
        need = min(bs, max(0, ctx - i * bs))  # slots this step reads from the cache
        if blk.num_written < need or seq.block_valid[i] < need:
            raise KVIntegrityError(
                seq.seq_id,
                f"block {blk.block_id} holds {blk.num_written} "
                f"written slots, sequence expects {seq.block_valid[i]}, read "
                f"needs {need}",
            )
        if (i + 1) * bs > ctx and (blk.ref_count != 1 or blk.hash is not None):
            raise KVIntegrityError(
                seq.seq_id, f"block {blk.block_id} is shared or cached and cannot be written"
            )
    raise KVIntegrityError(seq.seq_id, "block metadata disagrees with the sequence")


# -- test-only fault injection ---------------------------------------------------------------


def reserve_unwritten_blocks(seq: Sequence, bm: BlockManager, num_blocks: int, filler: int = 0) -> None:
    """Reproduce the 2026 failure: reserve ``num_blocks`` more blocks for ``seq``, write none of
    them, and mark the sequence as if their KV were computed, so its next decode reads them all.

    Use on a sequence in decode state (all tokens but the last computed). Test-only.
    """
    bm.append_blocks(seq, num_blocks * bm.block_size + 1)
    target = len(seq.block_table) * bm.block_size  # the last token lands in the last slot
    last, pad = seq.token_ids[-1], target - len(seq.token_ids)
    seq.token_ids[-1:] = [filler] * pad + [last]
    seq.num_prompt_tokens += pad  # the engine now "believes" in a longer prompt
    seq.num_computed_tokens = target - 1
    seq.block_valid = [bm.block_size] * len(seq.block_table)
    seq.block_valid[-1] = bm.block_size - 1


def swap_in_foreign_block(seq: Sequence, bm: BlockManager) -> None:
    """Point ``seq``'s first block at a block it was never given (another request's, if any).
    The block it held is lost, as it would be after a real table corruption. Test-only."""
    own = set(seq.block_table)
    others = [b for b in bm.blocks if b.block_id not in own]
    other = next((b for b in others if b.ref_count > 0), others[0])
    seq.block_table[0] = other.block_id


def recycle_block_behind_back(seq: Sequence, bm: BlockManager) -> None:
    """Give ``seq``'s first block a new generation, as if it had been freed and reallocated while
    still in the table. Test-only."""
    bm._generation += 1
    bm.blocks[seq.block_table[0]].generation = bm._generation
