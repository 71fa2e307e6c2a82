"""Units of the audit: divergence kinds, volatile spans, redaction, time parsing, reading, merging."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.audit.classify import classify, differing_span, redact, volatile_spans
from prefixlint.audit.reader import InputStats, iter_raw, read_records
from prefixlint.audit.records import FieldMap, RecordError, parse_time, to_record
from prefixlint.audit.run import in_time_order
from prefixlint.audit.sessions import link
from prefixlint.audit.summary import AuditSummary
from prefixlint.model.tokens import tokenizer_for

CACHE = PieceCache(tokenizer_for("openai", "gpt-4o"))


def _first_pieces(a: dict, b: dict) -> tuple:
    pa = pieces_from_request(a, "chat", CACHE, keep_text=True)
    pb = pieces_from_request(b, "chat", CACHE, keep_text=True)
    k = next(i for i, (x, y) in enumerate(zip(pa, pb, strict=False)) if x.chain != y.chain)
    return pa[k], pb[k]


def _sys(text: str, user: str = "q", **extra: object) -> dict:
    return {"messages": [{"role": "system", "content": text}, {"role": "user", "content": user}], **extra}


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("Now 2026-01-01 10:00. Be kind.", "Now 2026-01-01 10:05. Be kind.", "timestamp"),
        ("Request req_8f3a9c2d77 ok. Rules.", "Request req_1b2c3d4e5f ok. Rules.", "id"),
        ("Id 123e4567-e89b-12d3-a456-426614174000 x", "Id 9a1e4567-e89b-12d3-a456-426614174999 x", "id"),
        ("You have 12 credits left. Rules.", "You have 13 credits left. Rules.", "number"),
        ("Rules.\nDocuments:\n" + "alpha " * 80, "Rules.\nDocuments:\n" + "beta " * 80, "retrieved-text"),
        ("Be brief.", "Be verbose.", "text"),
    ],
)
def test_divergence_kinds(old: str, new: str, kind: str) -> None:
    a, b = _first_pieces(_sys(old), _sys(new))
    assert classify(a, b) == kind


def test_user_text_tool_output_and_tools() -> None:
    a, b = _first_pieces(_sys("S", "what is up"), _sys("S", "what is down"))
    assert classify(a, b) == "user-text"
    t1 = {"messages": [{"role": "system", "content": "S"}, {"role": "tool", "content": "42 rows"}]}
    t2 = {"messages": [{"role": "system", "content": "S"}, {"role": "tool", "content": "43 rows"}]}
    assert classify(*_first_pieces(t1, t2)) == "tool-output"
    tools = [{"type": "function", "function": {"name": n}} for n in "ab"]
    a, b = _first_pieces(_sys("S", tools=tools), _sys("S", tools=tools[::-1]))
    assert classify(a, b, tools, tools[::-1]) == "reordered-tools"
    other = [{"type": "function", "function": {"name": "c"}}, tools[1]]
    a, b = _first_pieces(_sys("S", tools=tools), _sys("S", tools=other))
    assert classify(a, b, tools, other) == "tools-changed"


def test_volatile_spans_and_differing_span() -> None:
    text = "Time: 2026-09-20T10:15:00Z, trace id_9f8e7d6c5b4a, 3 apples and plain words."
    spans = [text[a:b] for a, b in volatile_spans(text)]
    assert spans == ["2026-09-20T10:15:00Z", "id_9f8e7d6c5b4a"]
    assert volatile_spans("no digits here at all " * 1000) == []
    a, b = "Time is 10:15 today", "Time is 10:16 today"
    start, end_a, end_b = differing_span(a, b)
    assert a[start:end_a] == "10:15" and b[start:end_b] == "10:16"


def test_redact_keeps_shape_and_hash_only() -> None:
    out = redact("Alice paid $12.50 on 2026-01-02")
    assert out is not None and "Alice" not in out and "12" not in out
    assert out.startswith("Aaaaa aaaa $99.99 aa 9999-99-99 #")
    assert redact("x") != redact("y") and redact(None) is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (1_790_000_000, 1_790_000_000.0),
        (1_790_000_000_500, 1_790_000_000.5),  # milliseconds
        ("1790000000", 1_790_000_000.0),
        ("2026-09-20T10:00:00Z", 1_789_898_400.0),
        ("2026-09-20T12:00:00+02:00", 1_789_898_400.0),
        ("2026-09-20 10:00:00", 1_789_898_400.0),  # naive is UTC
    ],
)
def test_parse_time(value: object, seconds: float) -> None:
    assert parse_time(value, "t") == seconds


def test_bad_fields_are_record_errors() -> None:
    for raw, kind in (
        ({"messages": [], "timestamp": "soon"}, "bad-field"),
        ({"messages": 3}, "bad-field"),
        ({"hello": 1}, "unknown-shape"),
        ({"messages": [], "provider": "nope"}, "bad-field"),
        ({"messages": [], "timestamp": 10, "end_time": 5}, "bad-field"),
        ({"request": {"x": 1}}, "unknown-shape"),
    ):
        with pytest.raises(RecordError) as info:
            to_record(raw, "f", 1, FieldMap())
        assert info.value.kind == kind, raw


def test_json_array_items_keep_their_line_numbers(tmp_path: Path) -> None:
    items = [{"messages": [{"role": "user", "content": f"q{i}"}], "timestamp": i} for i in range(3)]
    text = "[\n" + ",\n".join(json.dumps(x, indent=2) for x in items) + "\n]\n"
    path = tmp_path / "a.json"
    path.write_text(text)
    lines = [line for _, line, obj, problem in iter_raw(str(path)) if problem is None]
    assert lines == [2, 2 + 9, 2 + 18]  # each item is 9 lines long when indented
    stats = InputStats()
    recs = list(read_records([str(path)], FieldMap(), stats))
    assert [r.time for r in recs] == [0, 1, 2] and stats.read == 3


def test_pretty_printed_object_per_record_and_a_truncated_line(tmp_path: Path) -> None:
    good = json.dumps({"messages": [{"role": "user", "content": "hi"}]}, indent=2)
    path = tmp_path / "p.jsonl"
    path.write_text(good + "\n" + '{"messages": [\n' + json.dumps({"messages": []}) + "\n")
    got = [(line, problem.kind if problem else "ok") for _, line, _, problem in iter_raw(str(path))]
    assert got == [(1, "ok"), (9, "malformed-json"), (10, "ok")]  # the object spans lines 1-8


def test_in_time_order_puts_a_window_right() -> None:
    from prefixlint.audit.records import LogRecord

    def rec(t: float) -> LogRecord:
        return LogRecord("f", int(t), {}, "chat", "openai", None, t, None, "", "", None, None)

    times = [0, 5, 3, 10, 8, 100, 20]
    out = [r.time for r in in_time_order(map(rec, times), window=30)]
    assert out == [0, 3, 5, 8, 10, 20, 100]


def test_session_links() -> None:
    a, b, c, d, e = (bytes([i]) for i in range(5))
    assert link([a, b], [a, b, c]) == "continuation"
    assert link([a, b, c, d], [c, d, e]) == "sliding-window"
    assert link([a, b, c, d], [a, e, c, d]) == "edited-history"
    assert link([a, b], [c, d]) == ""


def test_summary_merge_is_associative() -> None:
    def one(n: int) -> AuditSummary:
        s = AuditSummary()
        m = s.model("openai", "gpt-4o")
        m.requests, m.prompt, m.simulated = n, 100 * n, 10 * n
        s.cause("ttl-expired", n, 0.5 * n, {"line": n})
        s.flags["volatile-in-prefix"] += n
        s.timeline[n % 2] = [float(n)] * 7
        return s

    left = AuditSummary().merge(AuditSummary().merge(one(1)).merge(one(2))).merge(one(3))
    right = AuditSummary().merge(one(1)).merge(AuditSummary().merge(one(2)).merge(one(3)))
    for s in (left, right):
        m = s.models[("openai", "gpt-4o")]
        assert (m.requests, m.prompt, m.simulated) == (6, 600, 60)
        assert s.causes["ttl-expired"].tokens_lost == 6 and s.flags["volatile-in-prefix"] == 6
        assert s.timeline == {1: [4.0] * 7, 0: [2.0] * 7}
