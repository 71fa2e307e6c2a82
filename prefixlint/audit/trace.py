"""The anonymised, replayable trace: token-block hashes and timing, no text.

One JSON object a line, in time order, in the shape of the Mooncake traces that engine simulators
read (``timestamp`` in milliseconds, ``input_length``, ``output_length``, ``hash_ids``), plus
``domain`` (a keyed hash of the cache domain) and ``simulated_cached``. Block ``i`` covers tokens
``[i*B, (i+1)*B)``; its id is a keyed hash of the prefix up to the block's end, so two requests share
leading ids exactly as far as they share a prefix, and the key (random per export unless given)
keeps the ids from being matched against known text.

:func:`trace_token_ids` turns an entry back into token ids (the same ids for the same block), which
the reference engine or :func:`~prefixlint.model.prefix_cache.pieces_from_ids` can replay.
"""

from __future__ import annotations

import random
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

from prefixlint.model.pieces import SKETCH_BLOCK, Piece
from prefixlint.model.prefix_cache import Prediction

if TYPE_CHECKING:
    from prefixlint.audit.records import LogRecord
    from prefixlint.audit.replay import ReplayOptions

_MASK = (1 << 63) - 1


def block_ids(pieces: list[Piece], block: int, key: bytes) -> list[int]:
    """One id per block of ``block`` tokens (the last one may be partial).

    A block's id covers the prefix up to its end: the pieces before, then the piece's own 16-token
    sketch blocks up to the end (so a long piece that changes near its end keeps its leading ids),
    or the whole piece where no sketch block reaches that far.
    """
    out: list[int] = []
    if not pieces:
        return out
    total = pieces[-1].end
    j = 0
    for end in range(block, total + block, block):
        end = min(end, total)
        while pieces[j].end < end:
            j += 1
        p = pieces[j]
        start = p.end - p.tokens
        prev = pieces[j - 1].chain if j else b""
        covered = -(-(end - start) // SKETCH_BLOCK)
        if end < p.end and covered <= len(p.sketch):
            data = prev + repr(p.sketch[:covered]).encode() + (end - start).to_bytes(8, "big")
        else:
            data = p.chain + (p.end - end).to_bytes(8, "big")
        digest = blake2b(data, key=key[:64], digest_size=8).digest()
        out.append(int.from_bytes(digest, "big") & _MASK)
    return out


def anonymous_id(*parts: str, key: bytes = b"") -> str:
    """A short keyed hash of ``parts`` (domain labels in exports)."""
    return blake2b("\x00".join(parts).encode(), key=key[:64], digest_size=6).hexdigest()


def trace_entry(
    rec: LogRecord, pieces: list[Piece], pred: Prediction, now: float, options: ReplayOptions
) -> dict[str, Any]:
    """One line of the trace for a replayed request."""
    usage = rec.usage if isinstance(rec.usage, dict) else {}
    out_tokens = usage.get("completion_tokens", usage.get("output_tokens", 0))
    return {
        "timestamp": round(now * 1000),
        "input_length": pieces[-1].end,
        "output_length": out_tokens if isinstance(out_tokens, int) else 0,
        "hash_ids": block_ids(pieces, options.trace_block, options.trace_key),
        "domain": anonymous_id(*rec.partition, rec.model or "", rec.cache_key, key=options.trace_key),
        "simulated_cached": pred.cached,
    }


def trace_token_ids(entry: dict[str, Any], block: int = 16, vocab: int = 32_000) -> list[int]:
    """Token ids for a trace entry: each block id always gives the same ``block`` ids."""
    ids: list[int] = []
    n = int(entry["input_length"])
    for h in entry["hash_ids"]:
        rng = random.Random(h)
        ids.extend(rng.randrange(vocab) for _ in range(min(block, n - len(ids))))
    return ids
