"""Evidence of a cross-tenant leak in another tenant's output: canary strings, copied n-grams, and
greedy outputs that change with what someone else sent.

* :func:`canary_marker` makes a unique string that tenant A plants in its prompts; a marker's
  hex tail showing up in tenant B's output (or among B's top logprobs) can only come from A.
* :func:`shared_ngrams` finds runs of ``n`` words of B's output that occur in A's prompts. A's
  prompts are random letters, so a run of 8 has a chance of about 1e-13 per position to match.
* :func:`compare_greedy` compares two greedy outputs of one fixed prompt token by token and
  logprob by logprob. Differential determinism: B's greedy output must not depend on what A sent
  before, which catches a leak even when the model's text means nothing (random weights).
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from prefixlint.live.client import Completion

MARKER_PREFIX = "canary"
_HEX = re.compile(r"[0-9a-f]{8,}")


def canary_marker() -> str:
    """A fresh marker: ``canary`` and 12 random hex digits (48 bits)."""
    return f"{MARKER_PREFIX}{secrets.token_hex(6)}"


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def markers_in(texts: Iterable[str], markers: Sequence[str], min_hex: int = 8) -> list[str]:
    """Markers whose hex tail (its first ``min_hex`` digits or more) appears in any of ``texts``.

    Whitespace is ignored, since a tokenizer may split a marker into pieces with spaces."""
    found: list[str] = []
    squashed = [_squash(t) for t in texts]
    for marker in markers:
        tail = marker.removeprefix(MARKER_PREFIX)[:min_hex].lower()
        if tail and any(tail in s for s in squashed):
            found.append(marker)
    return found


def ngrams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive words."""
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)} if n > 0 else set()


def shared_ngrams(output: str, sources: Iterable[str], n: int = 8) -> list[str]:
    """Runs of ``n`` words of ``output`` that occur in any of ``sources`` (at most 5 shown)."""
    grams = ngrams(output.split(), n)
    if not grams:
        return []
    hits: list[str] = []
    for source in sources:
        for gram in grams & ngrams(source.split(), n):
            hits.append(" ".join(gram))
            if len(hits) >= 5:
                return hits
    return hits


def output_texts(c: Completion) -> list[str]:
    """The texts of a completion that a leak could show in: its text and its top-logprob tokens."""
    texts = [c.text]
    for top in c.top_logprobs:
        texts.extend(top)
    return texts


@dataclass
class Divergence:
    """Where and how two greedy outputs of the same prompt differ."""

    position: int | None
    kind: str  # "same", "logprob", "token", "near-tie", "length", "no-logprobs"
    max_logprob_delta: float
    detail: str

    @property
    def differs(self) -> bool:
        """True when the outputs really differ (a near tie is not evidence)."""
        return self.kind in ("logprob", "token", "length")


def _noise_flip(reference: Completion, other: Completion, i: int, tol: float) -> bool:
    """Whether the greedy choice at ``i`` flipped between two near-equal candidates while the
    distribution stayed the same: both answers give both tokens the same logprob within ``tol``,
    and the two tokens were within ``2 * tol`` of each other. Numeric noise does that; a leak
    moves the distribution itself."""
    if i >= len(reference.top_logprobs) or i >= len(other.top_logprobs):
        return False
    ta, tb = reference.tokens[i], other.tokens[i]
    ref, oth = reference.top_logprobs[i], other.top_logprobs[i]
    if not {ta, tb} <= ref.keys() or not {ta, tb} <= oth.keys():
        return False
    same = abs(ref[ta] - oth[ta]) <= tol and abs(ref[tb] - oth[tb]) <= tol
    return same and abs(ref[ta] - ref[tb]) <= 2 * tol


def compare_greedy(reference: Completion, other: Completion, tol: float) -> Divergence:
    """Compare ``other`` with ``reference``: tokens must match, logprobs within ``tol`` nats."""
    if reference.tokens and other.tokens:
        worst = 0.0
        for i, (ta, tb) in enumerate(zip(reference.tokens, other.tokens, strict=False)):
            la = reference.logprobs[i] if i < len(reference.logprobs) else 0.0
            lb = other.logprobs[i] if i < len(other.logprobs) else 0.0
            delta = abs(la - lb) if math.isfinite(la) and math.isfinite(lb) else math.inf
            if ta != tb:
                if _noise_flip(reference, other, i, tol):
                    return Divergence(
                        i, "near-tie", worst, f"token {i}: {ta!r} vs {tb!r}, a near tie in both answers"
                    )
                return Divergence(i, "token", max(worst, delta), f"token {i}: {ta!r} vs {tb!r}")
            worst = max(worst, delta)
            if delta > tol:
                return Divergence(i, "logprob", worst, f"token {i} {ta!r}: logprob {la:.6f} vs {lb:.6f}")
        if len(reference.tokens) != len(other.tokens):
            return Divergence(
                min(len(reference.tokens), len(other.tokens)),
                "length",
                worst,
                f"{len(reference.tokens)} vs {len(other.tokens)} tokens",
            )
        return Divergence(None, "same", worst, "identical tokens, logprobs within tolerance")
    if reference.text != other.text:
        prefix = next(
            (i for i, (a, b) in enumerate(zip(reference.text, other.text, strict=False)) if a != b),
            min(len(reference.text), len(other.text)),
        )
        return Divergence(prefix, "token", math.inf, f"text differs from character {prefix}")
    return Divergence(None, "no-logprobs", 0.0, "identical text (no logprobs to compare)")
