"""What ``prefixlint diff`` computes: the first divergence, the kind of value there, and each
provider's cacheable prefix with the rule that decides it; and the layout a payload gives the rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixlint.analysis.payloads.compare import (
    Input,
    InputError,
    compare,
    load_inputs,
    read_samples,
)
from prefixlint.analysis.payloads.kinds import kind_of_change, kind_of_values, value_around
from prefixlint.analysis.payloads.to_layout import layout_from_request
from prefixlint.model.layout import DynamicKind, SourceLocation, Timing
from prefixlint.model.settings import Settings

BASE = "word " * 1500


def diff(inputs: list[Input], provider: str = "openai", model: str | None = "gpt-4.1", **kw: Any) -> dict:
    samples, cache, texts = read_samples(inputs, Settings(), **kw)
    return compare(samples, cache, provider, model, texts).to_dict()


def rules(result: dict) -> dict[str, tuple[int, str]]:
    return {r["provider"]: (r["tokens"], r["rule"]) for r in result["cacheable"]}


def test_long_shared_text_rules_of_each_provider() -> None:
    inputs = [Input("a.txt", BASE + "alpha end"), Input("b.txt", BASE + "beta end")]
    samples, cache, texts = read_samples(inputs, Settings(), as_text=True)
    result = compare(samples, cache, "openai", "gpt-4.1", texts)
    (pair,) = result.to_dict()["pairs"]
    assert (pair["shared_tokens"], pair["total_a"], pair["diverges"], pair["kind"]) == (
        1500,
        1502,
        True,
        "text",
    )
    assert (pair["location_a"], pair["location_b"]) == ("a.txt:1:7501", "b.txt:1:7501")
    assert rules(result.to_dict()) == {
        "openai": (1408, "1,024-token minimum, then steps of 128"),
        "anthropic": (0, "no cache_control breakpoint: nothing is cached"),
        "vllm": (1488, "whole blocks of 16 tokens"),
    }
    assert (result.shared, result.cacheable_for("vllm"), result.cacheable_for("gemini")) == (1500, 1488, None)
    assert result.to_dict()["alignment"] is None


def test_short_shared_text_is_below_every_minimum() -> None:
    result = diff([Input("a.txt", "one two three x"), Input("b.txt", "one two three y")], as_text=True)
    assert rules(result) == {
        "openai": (0, "3 shared tokens are below the 1,024-token minimum"),
        "anthropic": (0, "no cache_control breakpoint: nothing is cached"),
        "vllm": (0, "3 shared tokens fill no whole 16-token block"),
    }


def test_the_payloads_own_provider_is_added_to_the_reported_ones() -> None:
    long = "word " * 2500
    result = diff([Input("a.txt", long + "x"), Input("b.txt", long + "y")], provider="gemini", as_text=True)
    assert [r["provider"] for r in result["cacheable"]] == ["openai", "anthropic", "vllm", "gemini"]
    assert rules(result)["gemini"] == (2500, "any shared length")
    short = diff([Input("a.txt", "one two x"), Input("b.txt", "one two y")], provider="gemini", as_text=True)
    assert rules(short)["gemini"] == (0, "2 shared tokens are below the 2,048-token minimum")


def _claude(system: str, question: str, mark: bool = True) -> str:
    block: dict[str, Any] = {"type": "text", "text": system}
    if mark:
        block["cache_control"] = {"type": "ephemeral"}
    body = {
        "model": "claude-sonnet-4",
        "system": [block],
        "messages": [{"role": "user", "content": question}],
    }
    return json.dumps(body, indent=1)


def test_breakpoint_provider_reads_what_the_first_request_wrote() -> None:
    inputs = [Input("a.json", _claude(BASE, "First?")), Input("b.json", _claude(BASE, "Second?"))]
    result = diff(inputs, provider="anthropic", model="claude-sonnet-4")
    tokens, why = rules(result)["anthropic"]
    assert tokens > 1024 and why == f"the last breakpoint both requests share ends at token {tokens:,}"
    (pair,) = result["pairs"]
    assert pair["path_a"] == pair["path_b"] == "messages[0].content" and pair["location_a"].startswith(
        "a.json:"
    )
    short = [Input("a.json", _claude("Short.", "First?")), Input("b.json", _claude("Short.", "Second?"))]
    tokens, why = rules(diff(short, provider="anthropic", model="claude-sonnet-4"))["anthropic"]
    assert (tokens, why) == (0, "no shared breakpoint prefix reaches the 1,024-token minimum")


def test_kind_at_the_divergence_of_two_payloads() -> None:
    def kind(a: str, b: str, role_b: str = "system") -> tuple[str, str]:
        bodies = [
            {
                "model": "gpt-4.1",
                "messages": [{"role": "system", "content": a}, {"role": "user", "content": "Q"}],
            },
            {
                "model": "gpt-4.1",
                "messages": [{"role": role_b, "content": b}, {"role": "user", "content": "Q"}],
            },
        ]
        (pair,) = diff([Input(f"{i}.json", json.dumps(b)) for i, b in enumerate(bodies)])["pairs"]
        return pair["kind"], pair["value_kind"]

    stamp = "Now: 2026-01-01T10:00:00Z. Be brief."
    assert kind(stamp, stamp.replace("01T10:00", "02T11:30")) == ("an ISO 8601 timestamp", "timestamp")
    assert kind("Be  brief.", "Be brief.") == ("whitespace", "unknown")
    assert kind('{"a": 1, "b": 2}', '{"b": 2, "a": 1}')[0].startswith("key order")
    assert kind("Be brief.", "Be brief.", role_b="developer") == ("a message of another role", "unknown")
    assert kind("Be brief.", "Be kind.") == ("text", "unknown")


def test_a_request_that_ends_where_the_other_goes_on() -> None:
    a = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "Q"}]}
    b = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}],
    }
    (pair,) = diff([Input("a.json", json.dumps(a)), Input("b.json", json.dumps(b))])["pairs"]
    assert pair["location_a"] is None and pair["location_b"].startswith("b.json:1:")
    assert (pair["kind"], pair["same_model"]) == ("content only one request has", False)


def test_three_inputs_are_aligned() -> None:
    texts = [BASE + f"question number {n} end" for n in (1, 2, 3)]
    result = diff([Input(f"{i}.txt", t) for i, t in enumerate(texts)], as_text=True)
    al = result["alignment"]
    (span,) = al["varying_spans"]
    assert (al["samples"], span["path"], span["values"]) == (3, "prompt", ["1", "2", "3"])
    assert span["token"] == 1503 and span["ahead_of_stable"] is True


def test_inputs_are_read_as_json_by_name_or_by_their_first_character(tmp_path: Path) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "Q"}]})
    inputs = [Input("a.txt", " \n" + body), Input("b.txt", body)]
    assert diff(inputs)["pairs"][0]["path_a"] is None  # no divergence: the same request
    assert diff(inputs, as_text=True)["pairs"][0]["kind"] == "whitespace"  # as text, a leading newline
    with pytest.raises(InputError, match=r"^bad\.json:2:4: "):
        read_samples([Input("bad.json", "{\n   ,}"), Input("b.txt", "x")], Settings())
    good, missing, latin = tmp_path / "good.txt", tmp_path / "missing.txt", tmp_path / "latin.txt"
    good.write_text("hello")
    latin.write_bytes(b"ab\xe9")
    assert load_inputs([str(good), "-"], lambda: "from stdin") == [
        Input(str(good), "hello"),
        Input("-", "from stdin"),
    ]
    with pytest.raises(InputError, match="No such file"):
        load_inputs([str(missing)], lambda: "")
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 2\)"):
        load_inputs([str(latin)], lambda: "")
    with pytest.raises(InputError, match="standard input can be given once"):
        load_inputs(["-", "-"], lambda: "x")
    (pair,) = diff([Input("-", "same text a"), Input("b.txt", "same text b")], as_text=True)["pairs"]
    assert pair["a"] == "stdin" and pair["location_a"] == "stdin:1:11"


def test_value_around_trims_spaces_and_bounds_a_long_value() -> None:
    assert value_around("key = value  next", 6, 13) == (6, 11)
    assert value_around("at 2026-01-01T10:00:00Z.", 8, 8) == (3, 23)
    long = "x" * 200
    s, e = value_around(long, 100, 101)
    assert e - s == 80 and s <= 100 < e
    assert value_around("a b c", 2, 2) == (2, 3)


def test_kinds_of_values_and_changes() -> None:
    assert kind_of_values(["abc", "abd"], "tools").what == "a tool definition"
    assert kind_of_values(["abc", "abd"]).what == "text"
    uuid = kind_of_values(["3f2b8c1e-1111-4222-8333-444455556666", "9a2b8c1e-1111-4222-8333-444455556666"])
    assert (uuid.kind, uuid.what, uuid.pattern) == (DynamicKind.IDENTIFIER, "a UUID", "uuid")
    assert kind_of_change("x", None, 0).what == "content only one request has"
    assert kind_of_change(None, "x", 0).what == "content only one request has"
    assert kind_of_change("a  b", "a b", 2).what == "whitespace"
    assert kind_of_change("{bad json", "{bad  json!", 5).what == "text"
    assert kind_of_change("{}", "x{}", 0).what == "text"
    a = "id 3f2b8c1e-1111-4222-8333-444455556666 ok"
    assert kind_of_change(a, a.replace("3f2b", "9a2b"), 3).what == "a UUID"
    assert kind_of_change('{"a": "b"}', '{"a": "c"}', 7, "tools").what == "a tool definition"


def test_layout_of_a_located_messages_payload() -> None:
    body = {
        "model": "claude-sonnet-4",
        "system": [{"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "messages": [
            {"role": "user", "content": "First?"},
            {"role": "assistant", "content": "Yes."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "Then?"}, {"type": "text", "text": "And?"}],
            },
        ],
        "cache_control": {"type": "ephemeral"},
    }

    keys = ("system[0]", "system[0].cache_control", "messages[0].content", "cache_control")

    def locate(path: str) -> SourceLocation | None:  # where each key sits; None for the others
        return SourceLocation("req.json", keys.index(path) + 1, 0) if path in keys else None

    layout = layout_from_request(body, locate=locate)
    assert (layout.provider, layout.sink_name, layout.model) == ("anthropic", "messages", "claude-sonnet-4")
    segs = layout.segments
    assert [s.label for s in segs] == [
        "system[0]",
        "messages[0].content",
        "messages[1].content",
        "messages[2].content[0]",
        "messages[2].content[1]",
    ]
    assert [s.is_last_user_message for s in segs] == [False, False, False, True, True]
    assert [s.location.line if s.location else None for s in segs] == [1, 3, None, None, None]
    assert (segs[0].cache_control.ttl, segs[0].cache_control.location.line) == ("1h", 2)
    assert (segs[-1].cache_control.ttl, segs[-1].cache_control.location.line) == ("5m", 4)
    assert [s.cache_control is None for s in segs] == [False, True, True, True, False]
    assert all(s.static and s.timing is Timing.STATIC and s.kind is None for s in segs)
    assert layout_from_request(body).segments[-1].cache_control.location is None


def test_layout_of_a_chat_payload_with_a_volatile_value() -> None:
    from prefixlint.analysis.payloads.markers import VolatileText

    body = {
        "messages": [{"role": "system", "content": VolatileText("Today")}, {"role": "user", "content": "Q"}]
    }
    sys_seg, user = layout_from_request(body).segments
    assert (sys_seg.static, sys_seg.timing, sys_seg.kind) == (False, Timing.REQUEST, DynamicKind.UNKNOWN)
    assert (user.static, user.is_last_user_message, sys_seg.is_last_user_message) == (True, True, False)
    assert layout_from_request({"messages": []}).segments == []
    empty = layout_from_request(
        {"model": "claude-sonnet-4", "messages": [], "cache_control": {}}, locate=lambda p: None
    )
    assert empty.segments == []


def _jsonl(*bodies: dict) -> str:
    return "".join(json.dumps(b) + "\n" for b in bodies)


def test_aligned_requests_of_one_file_mark_values_and_tool_order() -> None:
    from prefixlint.analysis.payloads.analyze import analyze_payload_files
    from prefixlint.model.layout import Nondeterminism

    def tool(name: str) -> dict:
        return {"type": "function", "function": {"name": name, "description": name}}

    def body(day: str, tools: list[dict]) -> dict:
        system = BASE[:3000] + f" Today is {day} "
        return {
            "model": "gpt-4.1",
            "tools": tools,
            "messages": [{"role": "system", "content": system + "ok"}],
        }

    text = _jsonl(body("Monday", [tool("a"), tool("b")]), body("Tuesday", [tool("b"), tool("a")]))
    text += _jsonl(body("Friday", [tool("a"), tool("b")]))
    out = analyze_payload_files(
        [("s.jsonl", text), ("empty.json", "[]")], Settings(), align_across_files=False
    )
    assert [e.code for e in out["empty.json"].errors] == ["PFX001"] and out["empty.json"].layouts == []
    ref, second, third = out["s.jsonl"].layouts
    assert [lay.samples for lay in (ref, second, third)] == [3, 3, 3]
    assert all(s.static for s in second.segments + third.segments)
    tools = [s for s in ref.segments if s.section.value == "tools"]
    assert [s.nondeterminism for s in tools] == [Nondeterminism.TOOL_ORDER, None]
    assert (tools[0].location.line, tools[0].location.col) == (1, text.index("[{"))  # the `tools` key's list
    (day,) = [s for s in ref.segments if not s.static and s.section.value == "system"]
    assert (
        day.label == "Monday" and all(d in day.text for d in ("Tuesday", "Friday")) and day.location.line == 1
    )


def _requests(*systems_and_questions: tuple[str, str]) -> list[Input]:
    out = []
    for i, (system, question) in enumerate(systems_and_questions):
        messages = [{"role": "system", "content": system}] if system else []
        body = {"model": "gpt-4.1", "messages": [*messages, {"role": "user", "content": question}]}
        out.append(Input(f"{i}.json", json.dumps(body)))
    return out


def test_samples_are_grouped_by_template(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefixlint.analysis.payloads import align

    a, b = "word " * 300, "other text entirely, about trains and their timetables. " * 30
    inputs = _requests((a, "q0"), (b, "q1"), (a, "q2"), (b, "q3"), (a, "q4"), ("", "only a user"), ("", "x"))
    samples, _, _ = read_samples(inputs, Settings())
    groups = align.cluster_samples(samples)
    assert [[s.label for s in g.samples()] for g in groups] == [
        ["0.json", "2.json", "4.json"],
        ["1.json", "3.json"],
        ["5.json", "6.json"],
    ]
    assert [g.size for g in groups] == [3, 2, 2] and all(g.extra == [] for g in groups)
    assert align.template_similarity(samples[5], samples[6]) == 1.0  # neither has a head
    assert (
        align.template_similarity(samples[5], samples[0])
        == align.template_similarity(samples[0], samples[5])
        == 0
    )
    monkeypatch.setattr(align, "MAX_SAMPLES", 2)
    first = align.cluster_samples(samples)[0]
    assert [s.label for s, _ in first.members] == ["0.json", "2.json"] and [s.label for s in first.extra] == [
        "4.json"
    ]
    assert first.size == 3 and [s.label for s in first.samples()] == ["0.json", "2.json", "4.json"]


def test_the_stable_prefix_without_a_tokenizer_is_the_weight_before_the_first_span() -> None:
    from prefixlint.analysis.payloads.align import align_group, align_pair

    samples, cache, _ = read_samples(_requests(("word " * 300, "q0"), ("word " * 300, "q2")), Settings())
    ref, other = samples
    counted = align_group([(ref, []), (other, align_pair(ref, other))], cache.tokenizer)
    rough = align_group([(ref, []), (other, align_pair(ref, other))])
    assert [s.values for s in rough.spans] == [s.values for s in counted.spans] == [["q0", "q2"]]
    assert rough.stable_prefix == round(sum(ref.weights[: rough.spans[0].start]))
    assert counted.stable_prefix == counted.divergences[0].tokens
    same = align_group([(ref, []), (ref, align_pair(ref, ref))])
    assert same.spans == [] and same.stable_prefix == round(sum(ref.weights))


@pytest.mark.parametrize(
    ("body", "api", "configured", "expected"),
    [
        ({"model": "claude-sonnet-4"}, "chat", None, ("anthropic", "claude-sonnet-4")),
        ({"model": "my-model"}, "messages", None, ("anthropic", "my-model")),
        ({"model": "Gemini-2.5-pro"}, "chat", None, ("gemini", "Gemini-2.5-pro")),
        ({"model": "o3-mini"}, "responses", None, ("openai", "o3-mini")),
        ({"model": "llama-3-70b"}, "chat", None, ("openai", "llama-3-70b")),
        ({"model": "llama-3-70b"}, "chat", ("vllm", "served"), ("vllm", "llama-3-70b")),
        ({"model": 7}, "chat", ("vllm", "served"), ("vllm", "served")),
        ({}, "chat", None, ("openai", None)),
    ],
)
def test_provider_and_model_of_a_request(
    body: dict, api: str, configured: tuple | None, expected: tuple
) -> None:
    from prefixlint.analysis.payloads.analyze import provider_for

    settings = Settings(provider=configured[0], model=configured[1]) if configured else None
    assert provider_for(body, api, settings) == expected


def test_a_breakpoint_stays_on_the_end_of_a_block_whose_text_varies() -> None:
    from prefixlint.analysis.payloads.analyze import analyze_payload_files

    rules = "Answer in short plain sentences and cite the manual page for every step. " * 30

    def body(day: str) -> dict:
        block = {"type": "text", "text": f"Today is {day}. " + rules, "cache_control": {"type": "ephemeral"}}
        return {
            "model": "claude-sonnet-4",
            "system": [block],
            "messages": [{"role": "user", "content": "Q?"}],
        }

    text = _jsonl(body("Monday"), body("Tuesday"), body("Friday"))
    ref = analyze_payload_files([("s.jsonl", text)], Settings(), align_across_files=False)["s.jsonl"].layouts[
        0
    ]
    shown = [(s.static, s.label, s.cache_control.ttl if s.cache_control else None) for s in ref.segments]
    assert shown == [
        (True, "system[0]", None),
        (False, "Monday.", None),
        (True, "system[0]", "5m"),
        (True, "messages[0].content", None),
    ]
    assert ref.segments[2].cache_control.location.line == 1
