"""Owner-tag checks: injected faults are caught every time, fail only their own request, and go
unnoticed with the checks off (so these tests can fail). Plus the block-leak soak."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")
torch.set_num_threads(1)  # tiny matrices: extra threads only contend on a busy CI box

from prefixlint.engine import AdmissionError, EngineConfig, LLMEngine, SamplingParams  # noqa: E402
from prefixlint.engine.block_manager import BlockManager  # noqa: E402
from prefixlint.engine.integrity import (  # noqa: E402
    KVIntegrityError,
    recycle_block_behind_back,
    reserve_unwritten_blocks,
    swap_in_foreign_block,
    verify,
)
from prefixlint.engine.sequence import Sequence  # noqa: E402

pytestmark = pytest.mark.engine
PARAMS = SamplingParams(max_tokens=3, temperature=0.0, ignore_eos=True)


def engine(**kw: object) -> LLMEngine:
    base = {"preset": "tiny", "device": "cpu", "num_blocks": 256, "block_size": 4, "max_model_len": 256}
    return LLMEngine(EngineConfig(**{**base, **kw}))  # type: ignore[arg-type]


def fault_on_first_decode(fault, targets: set[int]):
    """A hook that applies ``fault`` once to each target sequence at its first decode step."""
    done: set[int] = set()

    def hook(seq: Sequence, bm: BlockManager) -> None:
        if seq.seq_id in targets and seq.seq_id not in done and seq.num_output_tokens == 1:
            done.add(seq.seq_id)
            fault(seq, bm)

    return hook


def run_with_faults(e: LLMEngine, fault, n_requests: int) -> list:
    """Half the requests get the fault; returns outputs in submission order with a target flag."""
    prompts = [[500 + 13 * i + j for j in range(6 + i % 9)] for i in range(n_requests)]
    seqs = [e.add_request(p, PARAMS, salt=e.namespace(f"tenant{i % 3}")) for i, p in enumerate(prompts)]
    targets = {s.seq_id for s in seqs[::2]}
    e.fault_hook = fault_on_first_decode(fault, targets)
    while not all(s.is_finished for s in seqs):
        e.step()
    e.fault_hook = None
    return [(s.seq_id in targets, e.output(s)) for s in seqs]


@pytest.mark.parametrize("n_blocks", [1, 2, 3, 8])
def test_reserved_but_unwritten_blocks_are_caught_every_time(n_blocks: int) -> None:
    """The 2026 failure: reserve N blocks, write one, decode over all of them."""
    e = engine()
    results = run_with_faults(e, lambda s, bm: reserve_unwritten_blocks(s, bm, n_blocks), 40)
    for targeted, out in results:
        if targeted:
            assert out.finish_reason == "error" and out.error == "KV integrity violation"
            assert out.token_ids == [] and out.logits is None  # no tokens leave the engine
        else:
            assert out.finish_reason == "length" and len(out.token_ids) == 3
    assert e.stats()["integrity_failures"] == 20
    assert e.stats()["blocks_free"] == e.stats()["blocks_total"]


@pytest.mark.parametrize("fault", [swap_in_foreign_block, recycle_block_behind_back])
def test_foreign_and_recycled_blocks_are_caught(fault) -> None:
    e = engine()
    results = run_with_faults(e, fault, 20)
    assert [out.finish_reason == "error" for _, out in results] == [t for t, _ in results]
    assert all(out.token_ids == [] for t, out in results if t)
    assert e.stats()["integrity_failures"] == 10
    # Freeing a corrupted table never touches a block the request no longer owns; the block it
    # lost stays out of circulation (quarantined) instead of being double-freed.
    assert e.block_manager.quarantined == 10
    assert all(b.ref_count >= 0 for b in e.block_manager.blocks)
    assert e.stats()["blocks_in_use"] == 10  # the swapped-out or re-tagged blocks


def test_with_checks_off_the_same_fault_goes_unnoticed() -> None:
    e = engine(integrity_checks=False)
    # Leave stale KV from another tenant in the pool, then reproduce the failure.
    e.generate([900 + i for i in range(64)], PARAMS, salt=e.namespace("victim"))
    results = run_with_faults(e, lambda s, bm: reserve_unwritten_blocks(s, bm, 4), 10)
    assert all(out.finish_reason == "length" and len(out.token_ids) == 3 for _, out in results)
    assert e.stats()["integrity_failures"] == 0


def test_verify_rejects_writes_into_shared_cached_blocks() -> None:
    bm = BlockManager(8, 4)
    seq = Sequence(list(range(9)), PARAMS)
    bm.allocate(seq)
    verify(seq, bm, 9)
    bm.blocks[seq.block_table[1]].ref_count = 2  # pretend another request shares it
    with pytest.raises(KVIntegrityError, match="shared or cached"):
        verify(seq, bm, 9)


def test_no_block_leak_after_hundreds_of_mixed_requests() -> None:
    """Mixed lengths, tenants, shared prefixes, rejections, aborts at random points, preemption
    and eviction in a small pool; afterwards every block is free and every hash is consistent."""
    rng = random.Random(1234)
    e = engine(num_blocks=40, max_model_len=160, max_num_batched_tokens=48, max_num_seqs=8)
    shared = [[700 + 31 * k + j for j in range(24)] for k in range(4)]
    live: list[Sequence] = []
    rejected = aborted = 0
    for _i in range(300):
        if rng.random() < 0.08:
            with pytest.raises(AdmissionError):
                e.add_request([1] * (161 + rng.randrange(50)), PARAMS)
            rejected += 1
        else:
            prefix = rng.choice(shared)[: rng.randrange(2, 24)]
            prompt = prefix + [rng.randrange(1000) for _ in range(rng.randrange(1, 40))]
            params = SamplingParams(max_tokens=rng.randrange(1, 12), temperature=0.0, ignore_eos=True)
            live.append(e.add_request(prompt, params, salt=e.namespace(f"t{rng.randrange(3)}")))
        for _ in range(rng.randrange(0, 3)):
            e.step()
        if live and rng.random() < 0.2:
            e.abort(rng.choice(live))
            aborted += 1
        live = [s for s in live if not s.is_finished]
    while e.has_work():
        e.step()
    stats = e.stats()
    assert stats["blocks_free"] == stats["blocks_total"] == 40
    assert stats["rejected"] == rejected and stats["running"] == stats["waiting"] == 0
    assert stats["hits"] > 0 and stats["evictions"] > 0 and stats["preemptions"] >= 0
    assert all(b.ref_count == 0 for b in e.block_manager.blocks)
    assert len(e.block_manager.free) == 40
    for h, bid in e.block_manager.hash_to_block.items():
        assert e.block_manager.blocks[bid].hash == h
    assert e.counters.finished.get("abort", 0) > 0 and aborted > 0
