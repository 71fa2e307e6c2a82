"""Seeded random prompts of exact token lengths, with shared prefixes and cold misses.

A prompt is random upper- and lower-case letters separated by spaces, as in Gu et al.'s audit: with
cl100k (and the Llama 3 / o200k families) every letter is exactly one token and token boundaries
never move when two pieces are joined, so ``prefix + suffix`` tokenizes to the prefix's tokens
followed by the suffix's. Lengths are checked with ``prefixlint.model.tokens.get_tokenizer("cl100k_base")``.

Cache busting: every miss prompt is fresh from its first token, and the generator mixes a per-run
seed (random unless given) into every prompt, so a second run against the same server is cold too.
"""

from __future__ import annotations

import os
import random
import string
from dataclasses import dataclass, field

from prefixlint.model.tokens import Tokenizer, get_tokenizer

LETTERS = string.ascii_letters


def random_seed() -> int:
    """A fresh 63-bit seed (recorded in results so a run can be replayed)."""
    return int.from_bytes(os.urandom(8), "big") >> 1


@dataclass
class PromptFactory:
    """Makes prompts; ``seed`` fixes every prompt of a run."""

    seed: int = field(default_factory=random_seed)
    encoding: str = "cl100k_base"
    verify: bool = True
    _rng: random.Random = field(init=False, repr=False)
    _tokenizer: Tokenizer | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer lengths are checked with."""
        if self._tokenizer is None:
            self._tokenizer = get_tokenizer(self.encoding)
        return self._tokenizer

    @property
    def exact(self) -> bool:
        """Whether lengths are exact (False when only an estimating tokenizer loaded)."""
        return self.tokenizer.exact

    def words(self, n_tokens: int) -> list[str]:
        """``n_tokens`` fresh one-token words."""
        return [self._rng.choice(LETTERS) for _ in range(max(0, n_tokens))]

    def text(self, n_tokens: int) -> str:
        """A fresh prompt of exactly ``n_tokens`` tokens."""
        return self.join(self.words(n_tokens))

    def join(self, *pieces: list[str]) -> str:
        """Join word lists into one prompt whose token count is the sum of their lengths."""
        words = [w for piece in pieces for w in piece]
        prompt = " ".join(words)
        if self.verify and self.exact and words:
            got = self.tokenizer.count(prompt)
            if got != len(words):  # pragma: no cover - would mean a tokenizer change
                raise AssertionError(f"prompt built for {len(words)} tokens has {got}")
        return prompt

    def count(self, prompt: str) -> int:
        """Tokens of ``prompt`` under this factory's tokenizer."""
        return self.tokenizer.count(prompt)


@dataclass
class SharedPrefix:
    """A prefix that hit-arm prompts share, each with a fresh suffix."""

    factory: PromptFactory
    prefix_tokens: int
    suffix_tokens: int
    _prefix: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._prefix = self.factory.words(self.prefix_tokens)

    @property
    def total_tokens(self) -> int:
        """Tokens of every prompt this makes."""
        return self.prefix_tokens + self.suffix_tokens

    def prompt(self) -> str:
        """The shared prefix plus a fresh suffix."""
        return self.factory.join(self._prefix, self.factory.words(self.suffix_tokens))

    def miss_prompt(self) -> str:
        """A prompt of the same length that shares nothing with any other (a cold miss)."""
        return self.factory.text(self.total_tokens)


def split_lengths(prompt_tokens: int, shared_prefix: float, new_suffix_tokens: int | None) -> tuple[int, int]:
    """``(prefix, suffix)`` tokens: a fixed new suffix wins over the shared fraction."""
    if prompt_tokens < 2:
        raise ValueError("prompts need at least 2 tokens")
    if new_suffix_tokens is not None:
        suffix = min(max(1, new_suffix_tokens), prompt_tokens - 1)
    else:
        if not 0.0 < shared_prefix < 1.0:
            raise ValueError("--shared-prefix must be between 0 and 1 (exclusive)")
        suffix = max(1, round(prompt_tokens * (1.0 - shared_prefix)))
        suffix = min(suffix, prompt_tokens - 1)
    return prompt_tokens - suffix, suffix
