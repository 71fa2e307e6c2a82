"""The audit's replay on logs whose answer is known by construction: exact simulated cached tokens.

Token counts come from the real tokenizers: `` apple`` is one token in o200k and cl100k, and every
message adds ``MESSAGE_OVERHEAD`` framing tokens to its first piece. Expected numbers are derived from
those counts and the provider rules in ``providers.toml``, never copied from a run.
"""

from __future__ import annotations

from typing import Any

import pytest

from prefixlint.analysis.payloads.pieces import MESSAGE_OVERHEAD, PieceCache, pieces_from_request
from prefixlint.audit.records import FieldMap, to_record
from prefixlint.audit.replay import ReplayOptions, replay_partition
from prefixlint.audit.run import run_audit
from prefixlint.audit.summary import AuditSummary
from prefixlint.model.providers import get_provider
from prefixlint.model.tokens import tokenizer_for


def apples(n: int) -> str:
    """Text of exactly ``n`` tokens (`` apple`` is one token in o200k and cl100k)."""
    return " apple" * n


def openai_cached(shared: int) -> int:
    """OpenAI's rule: nothing below 1024, then 128-token steps."""
    return 0 if shared < 1024 else 1024 + (shared - 1024) // 128 * 128


def chat(system_parts: list[str], user: str, model: str = "gpt-4o", **extra: Any) -> dict[str, Any]:
    content = [{"type": "text", "text": t} for t in system_parts]
    return {
        "model": model,
        "messages": [{"role": "system", "content": content}, {"role": "user", "content": user}],
        **extra,
    }


def replay(entries: list[dict[str, Any]], **options: Any) -> AuditSummary:
    fields = FieldMap(default_provider=options.pop("provider", None))
    records = [to_record(e, "log", i + 1, fields) for i, e in enumerate(entries)]
    records.sort(key=lambda r: r.time or 0.0)
    parts: dict[tuple[str, str, str], list] = {}
    for r in records:
        parts.setdefault(r.partition, []).append(r)
    total = AuditSummary()
    for recs in parts.values():
        total.merge(replay_partition(recs, ReplayOptions(**options)))
    return total


BODY = apples(1500)
STAMP = "Current time: 2026-09-20T10:{:02d}:00Z"


def stamped_log(first: bool, n: int = 6, gap: float = 30.0) -> list[dict[str, Any]]:
    """``n`` requests a ``gap`` apart whose system prompt carries a timestamp first or last."""
    out = []
    for i in range(n):
        parts = [STAMP.format(i), BODY] if first else [BODY, STAMP.format(i)]
        out.append({"timestamp": 1_000 + i * gap, "request": chat(parts, f"question {i}?")})
    return out


def test_timestamp_first_caches_nothing_and_moved_last_caches_the_body() -> None:
    n = 6
    body_piece = 1500 + MESSAGE_OVERHEAD  # the first part of the system message carries the framing
    first = replay(stamped_log(True, n)).models[("openai", "gpt-4o")]
    last = replay(stamped_log(False, n)).models[("openai", "gpt-4o")]
    assert first.simulated == 0
    assert last.simulated == (n - 1) * openai_cached(body_piece)
    assert first.prompt == last.prompt
    # the counterfactual fix of the bad log moves the stamp out of the head: its body is then shared
    tok = tokenizer_for("openai", "gpt-4o")
    kept = tok.count("Current time: ") + MESSAGE_OVERHEAD  # the first part, its stamp cut out
    assert first.fixed == (n - 1) * openai_cached(kept + 1500)
    assert last.fixed >= last.simulated


def test_timestamp_first_is_named_with_its_kind_and_position() -> None:
    s = replay(stamped_log(True))
    assert s.causes["prefix-changed"].requests == 5
    site = max(s.sites.values(), key=lambda x: x.count)
    assert site.kind == "timestamp" and site.section == "system" and site.count == 5
    assert site.position_sum == 0  # the first token already differs
    assert s.flags["volatile-in-prefix"] == 6
    assert "10:00" in site.example["before"] and "10:01" in site.example["after"]


def test_redact_shows_shape_and_hash_only() -> None:
    s = replay(stamped_log(True), redact=True)
    ex = max(s.sites.values(), key=lambda x: x.count).example
    assert "2026" not in ex["before"] and "9999-99-99A99:99:99A" in ex["before"]
    assert "#" in ex["after"]


def test_tenants_do_not_share_a_cache() -> None:
    parts = [BODY, "static tail"]
    log = []
    for i, tenant in enumerate(["a", "b", "a", "b"]):
        log.append({"timestamp": 100 + i, "tenant": tenant, "request": chat(parts, f"q{i}")})
    s = replay(log)
    one = openai_cached(1500 + MESSAGE_OVERHEAD + tokenizer_for().count("static tail"))
    assert s.models[("openai", "gpt-4o")].simulated == 2 * one  # each tenant's first request misses
    by_tenant = {t: v for (t, _, _), v in s.tenants.items()}
    assert by_tenant["a"][2] == one and by_tenant["b"][2] == one
    # the same log under one tenant: three of four requests hit
    for e in log:
        e.pop("tenant")
    assert replay(log).models[("openai", "gpt-4o")].simulated == 3 * one


def test_organisations_and_prompt_cache_keys_are_apart() -> None:
    parts = [BODY]
    orgs = [
        {"timestamp": i, "organization": o, "request": chat(parts, f"q{i}")} for i, o in enumerate("xyxy")
    ]
    keys = [
        {"timestamp": i, "request": chat(parts, f"q{i}", prompt_cache_key=k)} for i, k in enumerate("kjkj")
    ]
    one = openai_cached(1500 + MESSAGE_OVERHEAD)
    assert replay(orgs).models[("openai", "gpt-4o")].simulated == 2 * one
    assert replay(keys).models[("openai", "gpt-4o")].simulated == 2 * one


def test_requests_past_the_ttl_miss_and_24h_retention_keeps_them() -> None:
    ttl = get_provider("openai").rules_for("gpt-4o").ttl_seconds
    times = [0, ttl + 1, ttl + 2]  # the second comes after the first expired; it writes again
    log = [{"timestamp": t, "request": chat([BODY], f"q{i}")} for i, t in enumerate(times)]
    one = openai_cached(1500 + MESSAGE_OVERHEAD)
    s = replay(log)
    assert s.models[("openai", "gpt-4o")].simulated == one
    assert s.causes["ttl-expired"].requests == 1
    kept = [
        {"timestamp": t, "request": chat([BODY], f"q{i}", prompt_cache_retention="24h")}
        for i, t in enumerate(times)
    ]
    assert replay(kept).models[("openai", "gpt-4o")].simulated == 2 * one


@pytest.mark.parametrize("size", [1019, 1020, 1147, 1148, 1149])
def test_openai_minimum_and_steps(size: int) -> None:
    shared = size + MESSAGE_OVERHEAD  # 1023, 1024, 1151, 1152, 1153
    log = [{"timestamp": i, "request": chat([apples(size)], f"q{i}")} for i in range(2)]
    assert replay(log).models[("openai", "gpt-4o")].simulated == openai_cached(shared)


def anthropic(system_tokens: int, user: str, model: str, ttl: str | None = None, marker: bool = True) -> dict:
    block: dict[str, Any] = {"type": "text", "text": apples(system_tokens)}
    if marker:
        block["cache_control"] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return {
        "model": model,
        "max_tokens": 100,
        "system": [block],
        "messages": [{"role": "user", "content": user}],
    }


@pytest.mark.parametrize(
    ("model", "minimum"),
    [
        ("claude-opus-5", 512),
        ("claude-sonnet-4-5", 1024),
        ("claude-sonnet-4-6", 2048),
        ("claude-opus-4-6", 4096),
    ],
)
def test_anthropic_per_model_minimums(model: str, minimum: int) -> None:
    assert get_provider("anthropic").rules_for(model).min_cacheable_tokens == minimum
    for tokens, expected in ((minimum - 1, 0), (minimum, minimum)):
        log = [{"timestamp": i, "request": anthropic(tokens, f"q{i}", model)} for i in range(2)]
        s = replay(log)
        assert s.models[("anthropic", model)].simulated == expected, (model, tokens)
        if expected == 0:
            assert s.flags["below-minimum"] == 2 and not s.causes  # nothing could be cached: nothing lost


def test_anthropic_5m_and_1h_breakpoints() -> None:
    model = "claude-sonnet-4-5"
    for ttl, gap, hit in (("5m", 299, True), ("5m", 301, False), ("1h", 3599, True), ("1h", 3601, False)):
        log = [{"timestamp": t, "request": anthropic(2000, f"q{t}", model, ttl)} for t in (0, gap)]
        s = replay(log)
        assert s.models[("anthropic", model)].simulated == (2000 if hit else 0), (ttl, gap)


def test_anthropic_without_a_breakpoint_caches_nothing_and_the_fix_adds_one() -> None:
    model = "claude-sonnet-4-5"
    log = [{"timestamp": i, "request": anthropic(2000, f"q{i}", model, marker=False)} for i in range(3)]
    s = replay(log)
    m = s.models[("anthropic", model)]
    assert m.simulated == 0 and m.fixed == 2 * 2000
    assert s.causes["no-breakpoint"].requests == 2 and s.flags["no-breakpoint"] == 3


def test_anthropic_lookback_of_20_blocks() -> None:
    model = "claude-sonnet-4-5"
    cc = {"type": "ephemeral"}
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(30)]

    def req(n: int) -> dict:
        msgs = [dict(m) for m in history[:n]]
        msgs[-1] = {
            "role": msgs[-1]["role"],
            "content": [{"type": "text", "text": msgs[-1]["content"], "cache_control": cc}],
        }
        return {"model": model, "max_tokens": 10, "system": apples(2000), "messages": msgs}

    # the system prompt is piece 0, message i is piece i + 1; a breakpoint sees itself and 19 before
    near = replay([{"timestamp": 0, "request": req(5)}, {"timestamp": 1, "request": req(24)}])
    far = replay([{"timestamp": 0, "request": req(4)}, {"timestamp": 1, "request": req(24)}])
    m_near = near.models[("anthropic", model)]
    assert m_near.simulated > 2000  # the earlier breakpoint (piece 5) is within pieces 24..5: read
    assert far.models[("anthropic", model)].simulated == 0  # piece 4: past the lookback
    assert far.causes["lookback-exceeded"].requests == 1


def test_deepseek_64_token_blocks() -> None:
    model = "deepseek-chat"
    log = [{"timestamp": i, "request": chat([apples(1000)], f"q{i}", model=model)} for i in range(2)]
    s = replay(log)
    assert s.models[("deepseek", model)].simulated == (1000 + MESSAGE_OVERHEAD) // 64 * 64


def test_vllm_blocks_lru_capacity_and_salts() -> None:
    tok = tokenizer_for("vllm", "m")
    prompts = [apples(96), " kiwi" * 48]  # 96 tokens each, nothing in common
    assert [tok.count(p) for p in prompts] == [96, 96]
    log = [{"timestamp": i, "request": chat([prompts[i % 2]], f"q{i}", model="m")} for i in range(4)]
    big = replay(log, provider="vllm").models[("vllm", "m")]
    assert big.simulated == 2 * (
        (96 + MESSAGE_OVERHEAD) // 16 * 16
    )  # the 3rd and 4th hit, in 16-token blocks
    small = replay(log, provider="vllm", capacity_tokens=128)  # room for one request: they evict each other
    assert small.models[("vllm", "m")].simulated == 0
    assert small.causes["evicted"].requests == 2
    salted = [
        {"timestamp": i, "request": chat([apples(96)], f"q{i}", model="m", cache_salt=f"s{i % 2}")}
        for i in range(4)
    ]
    assert replay(salted, provider="vllm").models[("vllm", "m")].simulated == 2 * (100 // 16 * 16)


def test_capacity_curve_rises_with_capacity() -> None:
    log = []
    for i in range(48):  # a hot prompt every other request, seven cold ones in rotation between
        k = 0 if i % 2 else 1 + (i // 2) % 7
        log.append({"timestamp": i, "request": chat([f"prompt {k}" + apples(500)], f"q{i}", model="m")})
    s = replay(log, provider="vllm", capacity_points=(512, 2048, 8192))
    curve = s.capacity[("vllm", "m")]
    rates = [curve[c][1] / curve[c][0] for c in (512, 2048, 8192)]
    assert rates[0] == 0.0  # not even one request fits
    assert rates[0] < rates[1] < rates[2]
    assert rates[2] == pytest.approx(s.models[("vllm", "m")].simulated / s.models[("vllm", "m")].prompt)


def test_in_flight_requests_raise_the_upper_bound_not_the_prediction() -> None:

    one = openai_cached(1500 + MESSAGE_OVERHEAD)
    # three requests sent together, each taking 5 s: the 2nd and 3rd start while the 1st is in flight,
    # and the provider served them from what the 1st was writing
    log = [
        {
            "timestamp": 100 + i * 0.1,
            "duration_ms": 5000,
            "request": chat([BODY], f"q{i}"),
            "usage": {"prompt_tokens": 1600, "prompt_tokens_details": {"cached_tokens": one if i else 0}},
        }
        for i in range(3)
    ]
    s = replay(log)
    assert s.models[("openai", "gpt-4o")].simulated == 0  # nothing was committed before they were sent
    assert s.verdicts.get("unexpected_hit", 0) == 0
    assert s.verdicts["hit"] == 2 and s.verdicts["expected_miss"] == 1
    sequential = [dict(e, timestamp=100 + i * 10) for i, e in enumerate(log)]
    assert replay(sequential).models[("openai", "gpt-4o")].simulated == 2 * one


def test_reported_rate_and_gap() -> None:
    one = openai_cached(1500 + MESSAGE_OVERHEAD)
    log = []
    for i in range(4):
        usage = {"prompt_tokens": 1600, "prompt_tokens_details": {"cached_tokens": 0 if i < 2 else 1536}}
        log.append({"timestamp": i, "request": chat([BODY], f"q{i}"), "usage": usage})
    m = replay(log).models[("openai", "gpt-4o")]
    r = m.rates()
    assert r["reported"] == pytest.approx(2 * 1536 / (4 * 1600))
    assert m.simulated == 3 * one
    assert r["gap"] == pytest.approx(r["reported"] - 3 * one / m.prompt)
    s = replay(log)
    assert s.causes["intact-prefix-no-read"].requests == 1  # request 2: the prefix was intact, nothing read


def test_reordered_tools_are_named_and_fixed() -> None:
    tools = [{"type": "function", "function": {"name": n, "description": apples(400)}} for n in "abc"]
    log = []
    for i in range(4):
        order = tools if i % 2 == 0 else tools[::-1]
        log.append({"timestamp": i, "request": chat([BODY], f"q{i}", tools=order)})
    s = replay(log)
    m = s.models[("openai", "gpt-4o")]
    # the 2nd misses (the order changed); the 3rd and 4th find their order cached by the 1st and 2nd
    assert s.causes["tools-changed"].requests == 1
    pieces = pieces_from_request(log[2]["request"], "chat", PieceCache(tokenizer_for("openai", "gpt-4o")))
    assert m.simulated == 2 * openai_cached(pieces[-2].end)  # everything but the question
    assert any(x.kind == "reordered-tools" for x in s.sites.values())
    assert m.fixed > m.simulated  # sorted by name, every request after the first hits


def test_model_switch_is_a_parameter_change() -> None:
    log = [
        {"timestamp": i, "request": chat([BODY], f"q{i}", model=m)}
        for i, m in enumerate(["gpt-4o", "gpt-4o", "gpt-4.1"])
    ]
    s = replay(log)
    assert s.causes["parameter-changed"].requests == 1


def test_sessions_recognise_growth_sliding_windows_and_edits() -> None:
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + apples(50)}
        for i in range(30)
    ]
    system = {"role": "system", "content": BODY}

    def body(msgs: list[dict]) -> dict:
        return {"model": "gpt-4o", "messages": [system, *msgs]}

    log = [
        {"timestamp": 0, "request": body(turns[:3])},
        {"timestamp": 1, "request": body(turns[:5])},  # grows
        {"timestamp": 2, "request": body(turns[2:7])},  # the two oldest dropped
        {
            "timestamp": 3,
            "request": body([turns[2], {"role": "assistant", "content": "(summary)"}, *turns[4:9]]),
        },
    ]
    s = replay(log)
    assert s.sessions["new"] == 1
    assert s.sessions["continuation"] == 1
    assert s.sessions["sliding-window"] == 1
    assert s.sessions["edited-history"] == 1
    assert s.causes["history-window-slid"].requests == 1
    assert s.causes["history-edited"].requests == 1


def test_anthropic_writes_never_read_and_too_many_markers() -> None:
    model = "claude-sonnet-4-5"
    cc = {"type": "ephemeral"}
    system = [{"type": "text", "text": apples(300), "cache_control": cc} for _ in range(5)]
    log = [
        {
            "timestamp": t,
            "request": {
                "model": model,
                "max_tokens": 5,
                "system": system,
                "messages": [{"role": "user", "content": f"q{t}"}],
            },
        }
        for t in (0, 1000)
    ]
    s = replay(log)
    assert s.flags["too-many-breakpoints"] == 2
    assert s.causes["write-never-read"].requests == 2  # each write expired before anything read it


def test_breakpoint_moved_earlier() -> None:
    model = "claude-sonnet-4-5"
    cc = {"type": "ephemeral"}

    def req(marked: int) -> dict:
        system = [{"type": "text", "text": apples(1200) + f" part{i}"} for i in range(3)]
        system[marked] = {**system[marked], "cache_control": cc}
        return {
            "model": model,
            "max_tokens": 5,
            "system": system,
            "messages": [{"role": "user", "content": "q"}],
        }

    s = replay([{"timestamp": 0, "request": req(2)}, {"timestamp": 1, "request": req(0)}])
    assert s.causes["breakpoint-moved-earlier"].requests == 1


def test_workers_give_the_same_summary(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    path = tmp_path / "log.jsonl"
    rows = []
    for i in range(40):
        rows.append(
            {
                "timestamp": i,
                "tenant": f"t{i % 4}",
                "request": chat([BODY if i % 3 else STAMP.format(i) + BODY], f"q{i}"),
            }
        )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    one = run_audit([str(path)], FieldMap(), ReplayOptions())
    two = run_audit([str(path)], FieldMap(), ReplayOptions(), workers=2)
    a, b = one.summary.models[("openai", "gpt-4o")], two.summary.models[("openai", "gpt-4o")]
    assert (a.prompt, a.simulated, a.fixed) == (b.prompt, b.simulated, b.fixed)
    assert one.summary.causes.keys() == two.summary.causes.keys()
    assert one.input.used == two.input.used == 40
