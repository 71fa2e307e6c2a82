"""Chunked token counting (analysis/payloads/chunks.py) is exact, with the real encodings."""

from __future__ import annotations

from itertools import accumulate

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from prefixlint.analysis.payloads.chunks import CHUNKED_ENCODINGS, MIN_TEXT, ChunkCache, split_chunks
from prefixlint.analysis.payloads.pieces import PieceCache, fast_encoder
from prefixlint.model.tokens import get_tokenizer

ENCODINGS = sorted(CHUNKED_ENCODINGS)

# Characters that exercise every branch of the pre-tokenizers near a line break: line breaks and
# other whitespace (Unicode ones too, and \x1c that Python calls whitespace and Rust does not),
# slashes (o200k keeps "\n/" together), punctuation, apostrophes of contractions, digits, letters
# of each case, marks, CJK, emoji, and the text of a special token.
_BREAKS = ["\n", "\n\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"]
_SPACES = [" ", "  ", "\t", "\xa0", "\u3000"]
_MARKS = ["/", "//", ".", ",", "!?", "'s", "'LL", "'", '"', "{", "}", "-", "_", "#", "*", "<|endoftext|>"]
_WORDS = ["1", "12", "2026", "3.14", "a", "ab", "Word", "WORD", "cAmEl", "\u00e9", "e\u0301", "\u0645"]
_PIECES = st.sampled_from([*_BREAKS, *_SPACES, *_MARKS, *_WORDS, "\u65e5\u672c", "\U0001f642"])
TEXTS = st.lists(_PIECES, max_size=60).map("".join)


@pytest.fixture(scope="module", params=ENCODINGS)
def tokenizer(request):  # type: ignore[no-untyped-def]
    tok = get_tokenizer(request.param)
    if not tok.exact:
        pytest.skip(f"{request.param} is not available offline")
    return tok


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, min_chunk=st.sampled_from([1, 3, 64]))
@example(text="a.\n/b\nc", min_chunk=1)
@example(text="x\n\n  y\nz", min_chunk=1)
@example(text="Date: 2026-01-01\n" + "static words " * 20 + "\n", min_chunk=64)
def test_chunked_ids_equal_whole_text_ids(tokenizer, text: str, min_chunk: int) -> None:  # type: ignore[no-untyped-def]
    chunks = split_chunks(text, min_chunk)
    assert "".join(chunks) == text
    whole = tokenizer.encode(text)
    assert [i for c in chunks for i in tokenizer.encode(c)] == whole
    cache = ChunkCache(tokenizer.encode, min_chunk=min_chunk)
    assert cache.encode(text) == whole
    assert cache.encode(text) == whole  # from the cached chunks


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_the_fast_encoder_agrees_chunk_by_chunk(tokenizer, text: str) -> None:  # type: ignore[no-untyped-def]
    """The Rust encoder the audit uses gives the same joined ids."""
    cache = ChunkCache(fast_encoder(tokenizer), min_chunk=1)
    assert cache.encode(text) == tokenizer.encode(text)


@pytest.mark.parametrize(
    ("left", "right", "encoding"),
    [("x.\n", "/y", "o200k_base"), ("x\n", "\ny", "cl100k_base"), ("x\n", "\ny", "o200k_base")],
)
def test_a_cut_where_tokens_can_merge_changes_the_ids(left: str, right: str, encoding: str) -> None:
    """The places the splitter never cuts: the property above would fail if it did."""
    tok = get_tokenizer(encoding)
    assert tok.encode(left) + tok.encode(right) != tok.encode(left + right)
    cuts = set(accumulate(map(len, split_chunks(left + right, 1))))
    assert len(left) not in cuts


def test_a_date_line_at_the_top_is_a_chunk_of_its_own() -> None:
    static = "You answer questions about the documents below. " * 10
    text = f"Current date: 2026-12-02 19:30\n{static}\n\nDocuments:\nfirst\n"
    assert split_chunks(text) == ["Current date: 2026-12-02 19:30\n", static + "\n\n", "Documents:\nfirst\n"]


def test_short_lines_are_kept_together_up_to_the_minimum() -> None:
    lines = [f"line {i}\n" for i in range(30)]
    chunks = split_chunks("".join(lines), 64)
    assert "".join(chunks) == "".join(lines)
    assert all(len(c) >= 64 for c in chunks[:-1])
    assert len(chunks) == 4


def test_texts_sharing_lines_encode_only_the_new_chunks(tokenizer) -> None:  # type: ignore[no-untyped-def]
    calls: list[str] = []

    def encode(text: str) -> list[int]:
        calls.append(text)
        return tokenizer.encode(text)

    cache = ChunkCache(encode)
    static = "The same instructions on every request, long enough to be a chunk. " * 30
    first = f"Now: 2026-12-02 10:00:00\n{static}\n"
    second = f"Now: 2026-12-02 10:00:07\n{static}\n"
    assert cache.encode(first) == tokenizer.encode(first)
    calls.clear()
    assert cache.encode(second) == tokenizer.encode(second)
    assert calls == ["Now: 2026-12-02 10:00:07\n"]
    assert (cache.hits, cache.misses) == (1, 3)


def test_memory_is_bounded_least_recently_used_first(tokenizer) -> None:  # type: ignore[no-untyped-def]
    cache = ChunkCache(tokenizer.encode, max_bytes=4000)
    keep = "a line that is used again and again by every request of the log\n"
    for i in range(200):
        text = keep + f"document number {i} with enough words to be its own chunk here\n"
        assert cache.encode(text) == tokenizer.encode(text)
        assert cache.bytes <= cache.max_bytes
    assert keep in cache._chunks  # used on every call: never the least recently used
    assert 2 <= len(cache) < 30
    assert "document number 0 with enough words to be its own chunk here\n" not in cache._chunks


def test_piece_cache_counts_long_texts_from_chunks_exactly(tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Token count and sketch of a long text are those of the whole-text encoding."""
    chunked = PieceCache(tokenizer, fast=False)
    whole = PieceCache(tokenizer, fast=False, chunk_bytes=0)
    assert chunked.chunks is not None and whole.chunks is None
    static = "\n".join(f"Rule {i}: answer in the language of the question, briefly." for i in range(40))
    for stamp in ("2026-12-02 10:00", "2026-12-02 10:05"):
        text = f"Today is {stamp}.\n{static}\n"
        assert len(text) >= MIN_TEXT
        a, b = chunked.entry("system", "system", text), whole.entry("system", "system", text)
        assert (a.tokens, a.sketch, a.digest) == (b.tokens, b.sketch, b.digest)
        assert a.tokens == len(tokenizer.encode(text))
    assert chunked.chunks.hits > 0


def test_the_estimating_tokenizer_is_never_chunked() -> None:
    from prefixlint.model.tokens import Tokenizer

    assert PieceCache(Tokenizer("o200k_base", False, "estimate"), fast=False).chunks is None
