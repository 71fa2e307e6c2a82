"""Prompt sizes as the server counts them.

The prompts are one-token words (see :mod:`prefixlint.live.prompts`), but the server adds its own
tokens around them: a chat template (22 tokens on this engine's ChatML), a BOS token. Two short
requests measure that overhead from ``usage.prompt_tokens``, and whether the server's tokenizer
also counts one token per word (then every size is exact). :func:`fit_lengths` then keeps
requested lengths inside the server's ``max_model_len``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from prefixlint.live.client import BenchClient, Completion
from prefixlint.live.prompts import PromptFactory

PROBE_WORDS = (24, 72)


@dataclass
class Sizing:
    """How the server counts a prompt of ``w`` one-token words: ``overhead + per_word * w``."""

    overhead: int = 0
    per_word: float = 1.0
    measured: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        """True when measured at exactly one server token per word."""
        return self.measured and self.per_word == 1.0

    def tokens_for(self, words: int) -> int:
        """Server prompt tokens of a ``words``-word prompt."""
        return self.overhead + round(self.per_word * words)

    def words_for(self, tokens: int) -> int:
        """Words whose prompt the server counts as ``tokens`` (as close as its tokenizer allows)."""
        return max(1, round((tokens - self.overhead) / (self.per_word or 1.0)))

    def as_dict(self) -> dict[str, object]:
        """JSON-ready view."""
        return {"overhead": self.overhead, "per_word": self.per_word, "exact": self.exact}


def measure_sizing(
    client: BenchClient,
    factory: PromptFactory,
    send: Callable[[str], Completion] | None = None,
) -> Sizing:
    """Measure the overhead with two short prompts (two requests, one output token each).

    ``send`` replaces ``client.complete`` (the caller's accounting). Raises ``httpx.HTTPError`` when
    the server does not answer; a refused request leaves the sizing unmeasured, with a note."""
    do = send or (lambda prompt: client.complete(prompt, max_tokens=1))
    counts: list[int] = []
    for words in PROBE_WORDS:
        res = do(factory.text(words))
        if not res.ok:
            return Sizing(notes=[f"sizing request refused ({res.error}); sizes assume no overhead"])
        if res.prompt_tokens is None:
            return Sizing(notes=["the server reports no usage.prompt_tokens; sizes assume no overhead"])
        counts.append(res.prompt_tokens)
    (w1, w2), (t1, t2) = PROBE_WORDS, counts
    per_word = (t2 - t1) / (w2 - w1)
    overhead = round(t1 - per_word * w1)
    sizing = Sizing(overhead=overhead, per_word=per_word, measured=True)
    if per_word != 1.0:
        sizing.notes.append(
            f"the server counts {per_word:.3g} tokens per prompt word; boundary sizes are approximate"
        )
    return sizing


def fit_lengths(
    lengths: list[int], max_model_len: int | None, sizing: Sizing, max_tokens: int
) -> tuple[list[int], list[str]]:
    """Requested prompt lengths, each cut to fit ``max_model_len`` with its overhead and output.

    Returns the lengths to send and one note per change (duplicates after cutting are dropped)."""
    if max_model_len is None:
        return lengths, []
    limit = sizing.words_for(max_model_len - max_tokens)
    while limit > 1 and sizing.tokens_for(limit) + max_tokens > max_model_len:
        limit -= 1
    out: list[int] = []
    notes: list[str] = []
    for n in lengths:
        fitted = min(n, limit)
        if fitted != n:
            notes.append(
                f"{n}-token prompts sent as {fitted} tokens: the server accepts {max_model_len} tokens "
                f"(max_model_len from /v1/models), including {sizing.overhead} it adds around the "
                f"prompt and {max_tokens} of output"
            )
        if fitted not in out:
            out.append(fitted)
    return out, notes
