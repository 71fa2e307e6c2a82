"""Where a template's stable part drifted: the first differing piece, and the opt-in excerpts."""

from __future__ import annotations

from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.model.tokens import tokenizer_for
from prefixlint.sdk.drift import DriftWatch, stable_end
from prefixlint.sdk.volatile import volatile

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


def _chat(*turns: object, system: object = SYSTEM, keep_text: bool = False) -> list:
    """Pieces of a chat request: the system prompt, then ``turns`` as user/assistant in turn."""
    msgs = [{"role": "system", "content": system}]
    msgs += [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(turns)]
    return pieces_from_request({"model": "gpt-4o", "messages": msgs}, "chat", CACHE, keep_text=keep_text)


def test_the_stable_part_stops_before_the_last_user_turn() -> None:
    """The last user message (all of its parts) is not stable; what precedes it is."""
    assert stable_end(_chat("a question")) == 1
    parts = [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]
    assert stable_end(_chat("first", "answer", parts)) == 3


def test_what_follows_the_last_user_turn_is_cut_with_it() -> None:
    """An assistant prefill, or tool calls and results, after the last user message are not stable."""
    assert stable_end(_chat("first", "answer", "second", "prefill")) == 3
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Where is my order?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped on Monday"},
    ]
    pieces = pieces_from_request({"model": "gpt-4o", "messages": msgs}, "chat", CACHE)
    assert pieces[-1].role == "tool" and pieces[1].role == "user"
    assert stable_end(pieces) == 1


def test_the_sdk_and_the_audit_cut_the_stable_part_alike() -> None:
    """The SDK's stable part ends where the audit's does (no volatile values here)."""
    from prefixlint.audit.sessions import stable_end as audit_stable_end

    requests = [
        _chat("q"),
        _chat("first", "answer", "second"),
        _chat("first", "answer", "second", "prefill"),
        _chat("first", [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}], "q", "prefill"),
        pieces_from_request(
            {"model": "gpt-4o", "messages": [{"role": "system", "content": SYSTEM}]}, "chat", CACHE
        ),
    ]
    for pieces in requests:
        assert stable_end(pieces) == audit_stable_end(pieces)


def test_without_a_user_turn_everything_is_stable() -> None:
    """A request with no user message (only system and assistant text) is stable to its end."""
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "assistant", "content": "hi"}]
    pieces = pieces_from_request({"model": "gpt-4o", "messages": msgs}, "chat", CACHE)
    assert stable_end(pieces) == len(pieces) == 2


def test_a_request_that_is_only_the_last_user_turn_has_no_stable_part() -> None:
    """Every piece of the only (user) message is cut off: the stable part is empty."""
    msgs = [{"role": "user", "content": [{"type": "text", "text": t} for t in "ab"]}]
    assert stable_end(pieces_from_request({"model": "gpt-4o", "messages": msgs}, "chat", CACHE)) == 0
    one = [{"role": "user", "content": "q"}]
    assert stable_end(pieces_from_request({"model": "gpt-4o", "messages": one}, "chat", CACHE)) == 0


def test_the_stable_part_ends_at_the_first_volatile_piece() -> None:
    """A marked value ends the stable part even when stable pieces follow it."""
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "system", "content": volatile("Today is Friday")},
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "q"},
        ],
    }
    pieces = pieces_from_request(body, "chat", CACHE)
    assert [p.stable for p in pieces] == [True, False, True, True]
    assert stable_end(pieces) == 1


def test_a_repeated_or_grown_stable_part_is_not_drift() -> None:
    """Template and conversation parts that agree over their common length never drift."""
    watch = DriftWatch()
    long = _chat("u1", "a1", "u2", "a2", "u3")
    part = long[: stable_end(long)]
    assert len(part) == 5
    for kind in ("template", "conversation"):
        assert watch.check(kind, kind, part[:3], long) is None
        assert watch.check(kind, kind, part[:3], long) is None  # the same part again
        assert watch.check(kind, kind, part, long) is None  # grown
        assert watch.check(kind, kind, part[:2], long) is None  # cut back at its end


def test_a_call_site_serving_prompts_in_turn_does_not_drift() -> None:
    """A call site remembers the stable parts it saw: alternating or repeated prompts are no drift."""
    watch = DriftWatch()
    a, b = _chat("u1", "It ships on Monday.", "q"), _chat("u1", "It ships on Friday.", "q")
    results = [watch.check("site", "site", p[: stable_end(p)], p) for p in (a, a, b, a, b, b, a)]
    assert results == [None] * 7


def test_a_call_site_drifts_when_two_requests_in_a_row_bring_new_stable_parts() -> None:
    """The second new prefix in a row is drift, placed against the closest part seen, with excerpts."""
    watch = DriftWatch()
    turns = [("Monday", "We open at nine."), ("Friday", "We open at ten."), ("Friday", "We open at noon.")]
    parts = [_chat("u1", f"It ships on {day}.", "u2", hours, "q", keep_text=True) for day, hours in turns]
    first, second, third = (watch.check("site", "site", p[: stable_end(p)], p, 12) for p in parts)
    assert first is None and second is None
    assert third is not None and third.path == third.previous_path == "messages[4].content"
    assert third.before is not None and third.after is not None
    assert "ten" in third.before and "noon" in third.after  # against the second part, which shares more


def test_a_call_site_keeps_the_longest_of_agreeing_stable_parts() -> None:
    """Whichever comes first, the longer of two agreeing parts is remembered and later parts compare to it."""
    long = _chat("u1", "a1", "u2")
    others = [_chat("u1", f"another answer {i}", "u2") for i in (1, 2)]
    for order in ((long[:2], long[:3]), (long[:3], long[:2])):
        watch = DriftWatch()
        for part in order:
            assert watch.check("site", "site", part, long) is None
        # each disagrees with the long part: the second new one in a row is drift
        assert watch.check("site", "site", others[0][:3], others[0]) is None
        assert watch.check("site", "site", others[1][:3], others[1]) is not None


def test_excerpts_are_off_unless_asked_for() -> None:
    """``check`` without ``excerpt_chars`` gives no excerpts, even when the pieces keep their text."""
    watch = DriftWatch()
    for day in ("Monday", "Friday"):
        p = _chat("u1", f"It ships on {day}.", "q", keep_text=True)
        d = watch.check("t", "template", p[: stable_end(p)], p)
    assert d is not None and d.path == "messages[2].content" and d.before is None and d.after is None


def test_excerpts_of_a_message_that_only_grew() -> None:
    """When the new text extends the old one, the excerpts show the old end and what was appended."""
    watch = DriftWatch()
    for text in ("It ships on Monday.", "It ships on Monday. Or on Friday."):
        p = _chat("u1", text, "q", keep_text=True)
        d = watch.check("t", "template", p[: stable_end(p)], p, 30)
    assert d is not None and d.path == "messages[2].content"
    assert d.before == "on Monday." and d.after == "on Monday. Or on Friday."


def test_a_full_watch_starts_over() -> None:
    """Past ``max_keys`` keys, what was remembered is forgotten (a changed part is then no drift)."""
    a, b = _chat("u1", "It ships on Monday.", "q"), _chat("u1", "It ships on Friday.", "q")
    small = DriftWatch(max_keys=2)
    small.check("k0", "template", a[:3], a)
    small.check("k1", "template", a[:3], a)
    small.check("k2", "template", a[:3], a)  # the third key: the watch starts over
    assert small.check("k0", "template", b[:3], b) is None
    kept = DriftWatch(max_keys=3)
    for key in ("k0", "k1", "k2"):
        kept.check(key, "template", a[:3], a)
    assert kept.check("k0", "template", b[:3], b) is not None


def test_the_default_watch_remembers_ten_thousand_keys() -> None:
    """The default bound: 10,000 keys are kept, the 10,001st starts over."""
    a, b = _chat("u1", "It ships on Monday.", "q"), _chat("u1", "It ships on Friday.", "q")
    watch = DriftWatch()
    for i in range(10_000):
        watch.check(f"k{i}", "template", a[:3], a)
    assert watch.check("k0", "template", b[:3], b) is not None  # still remembered
    watch.check("one more", "template", a[:3], a)
    assert watch.check("k1", "template", b[:3], b) is None  # forgotten


def test_a_drift_names_the_newest_spelling_of_a_known_stable_part() -> None:
    """The same text sent as a string and then as a text part agrees; a later drift from it names the
    path as the newer request spelled it."""
    watch = DriftWatch()
    as_string = _chat("u1", "It ships on Monday.", "q")
    as_part = _chat("u1", [{"type": "text", "text": "It ships on Monday."}], "q")
    other_question = _chat("u9", "It ships on Monday.", "q")
    drifted = _chat("u1", "It ships on Friday.", "q")
    assert as_string[2].chain == as_part[2].chain and as_string[2].path != as_part[2].path
    for pieces in (as_string, as_part, other_question):
        assert watch.check("site", "site", pieces[:3], pieces) is None
    d = watch.check("site", "site", drifted[:3], drifted)
    assert d is not None and d.path == "messages[2].content" and d.previous_path == "messages[2].content[0]"
