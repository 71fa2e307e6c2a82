"""Where a template's stable part drifted: the first differing piece, and the opt-in excerpts."""

from __future__ import annotations

from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.model.tokens import tokenizer_for
from prefixlint.sdk.drift import DriftWatch, stable_end

CACHE = PieceCache(tokenizer_for("openai", "gpt-4o"))
SYSTEM = "You are the support assistant of a bookshop. " * 30


def _pieces(example: str, keep_text: bool = False) -> list:
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Where is my order? " * 20},
            {"role": "assistant", "content": example},
            {"role": "user", "content": "the question"},
        ],
    }
    return pieces_from_request(body, "chat", CACHE, keep_text=keep_text)


def _check(watch: DriftWatch, pieces: list, excerpt_chars: int = 0):
    return watch.check("t", "template", pieces[: stable_end(pieces)], pieces, excerpt_chars)


def test_a_drift_in_the_third_message_is_placed_there() -> None:
    watch = DriftWatch()
    assert _check(watch, _pieces("It ships on Monday. " * 20)) is None
    new = _pieces("It ships on Friday. " * 20)
    d = _check(watch, new)
    assert d is not None and d.path == "messages[2].content" and d.previous_path == "messages[2].content"
    assert new[1].end <= d.token_index < new[2].end
    assert d.before is None and d.after is None  # no excerpts unless asked


def test_excerpts_of_a_drift_at_the_first_character_start_at_it() -> None:
    watch = DriftWatch()
    _check(watch, _pieces("Monday. " * 40, keep_text=True), excerpt_chars=30)
    d = _check(watch, _pieces("Friday. " * 40, keep_text=True), excerpt_chars=30)
    assert d is not None and d.path == "messages[2].content"
    assert d.before is not None and d.after is not None
    assert d.before.startswith("Monday.") and d.after.startswith("Friday.")
    assert len(d.before) == len(d.after) == 30


def test_no_excerpts_when_none_are_asked_even_with_texts_kept() -> None:
    watch = DriftWatch()
    _check(watch, _pieces("Monday. " * 40, keep_text=True))
    d = _check(watch, _pieces("Friday. " * 40, keep_text=True), excerpt_chars=0)
    assert d is not None and d.before is None and d.after is None
