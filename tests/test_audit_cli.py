"""``prefixlint audit`` from the command line: input shapes, field mapping, bad input, exit codes,
JSON output, the trace export, ``--workers``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import invoke, run_cli

SYSTEM = "You are a careful assistant." + " apple" * 1200


def _openai_chat(i: int, tenant: str = "acme", stamp_first: bool = True) -> dict[str, Any]:
    stamp = f"Now: 2026-09-20T10:{i:02d}:00Z."
    system = f"{stamp}\n{SYSTEM}" if stamp_first else f"{SYSTEM}\n{stamp}"
    return {
        "timestamp": f"2026-09-20T10:{i:02d}:00Z",
        "tenant": tenant,
        "request": {
            "model": "gpt-4o",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": f"q{i}"}],
        },
        "response": {"usage": {"prompt_tokens": 1300, "prompt_tokens_details": {"cached_tokens": 0}}},
    }


def _jsonl(rows: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _rounded(obj: Any) -> Any:
    if isinstance(obj, float):
        return round(obj, 9)
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v) for v in obj]
    return obj


def _doc(out: str) -> dict[str, Any]:
    return json.loads(out)


def test_json_top_level_carries_counts_and_rates(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_text(_jsonl([_openai_chat(i, stamp_first=False) for i in range(4)]))
    code, out, _ = invoke(["audit", "log.jsonl", "--output-format", "json"], tmp_path)
    assert code == 0
    doc = _doc(out)
    assert (doc["read"], doc["used"], doc["malformed"]) == (4, 4, 0)
    [m] = doc["models"]
    assert m["provider"] == "openai" and m["model"] == "gpt-4o"
    assert 0 < m["simulated"] <= 1 and m["reported"] == 0.0 and 0 < m["fixed"] <= 1
    assert m["simulated"] == m["simulated_cached_tokens"] / m["prompt_tokens"]
    assert doc["prices"]["as_of"]


def test_auto_detects_chat_responses_messages_and_bare_payloads(tmp_path: Path) -> None:
    rows = [
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "bare chat"}]},
        {"request": {"model": "gpt-4o", "instructions": SYSTEM, "input": "responses api"}},
        {
            "body": {
                "model": "claude-sonnet-4-5",
                "max_tokens": 5,
                "system": SYSTEM,
                "messages": [{"role": "user", "content": "hi"}],
            }
        },
        {
            "custom_id": "r1",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o", "messages": [{"role": "user", "content": "batch"}]},
        },
        {"request": {"model": "gpt-3.5-turbo-instruct", "prompt": "legacy completion"}},
    ]
    (tmp_path / "mixed.jsonl").write_text(_jsonl(rows))
    code, out, _ = invoke(["audit", "mixed.jsonl", "--output-format", "json"], tmp_path)
    doc = _doc(out)
    assert code == 0 and doc["used"] == 5 and doc["malformed"] == 0
    providers = {(m["provider"], m["model"]): m["requests"] for m in doc["models"]}
    assert providers[("anthropic", "claude-sonnet-4-5")] == 1
    assert providers[("openai", "gpt-4o")] == 3


def test_gzip_json_array_and_stdin_give_the_same_answer(tmp_path: Path) -> None:
    rows = [_openai_chat(i, stamp_first=False) for i in range(5)]
    (tmp_path / "a.jsonl").write_text(_jsonl(rows))
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(_jsonl(rows).encode()))
    (tmp_path / "c.json").write_text(json.dumps(rows, indent=2))
    (tmp_path / "d.json").write_text(json.dumps({"records": rows}, indent=2))
    docs = []
    for name in ("a.jsonl", "b.jsonl.gz", "c.json", "d.json"):
        code, out, _ = invoke(["audit", name, "--output-format", "json"], tmp_path)
        assert code == 0, name
        docs.append(_doc(out))
    proc = run_cli(
        ["audit", "-", "--output-format", "json"], tmp_path, input=gzip.compress(_jsonl(rows).encode())
    )
    assert proc.returncode == 0, proc.stderr
    docs.append(json.loads(proc.stdout))
    first = docs[0]["models"]
    for d in docs:
        assert d["used"] == 5 and d["models"] == first


def test_field_mapping_flags(tmp_path: Path) -> None:
    rows = []
    for i, user in enumerate(["u1", "u2", "u1", "u2"]):
        rows.append(
            {
                "when": 1_700_000_000 + i,
                "user": {"id": user},
                "call": {
                    "payload": {
                        "model": "gpt-4o",
                        "messages": [
                            {"role": "system", "content": SYSTEM},
                            {"role": "user", "content": f"q{i}"},
                        ],
                    }
                },
                "stats": {"prompt_tokens": 1300, "prompt_tokens_details": {"cached_tokens": 0}},
            }
        )
    (tmp_path / "custom.jsonl").write_text(_jsonl(rows))
    base = ["audit", "custom.jsonl", "--output-format", "json", "--request-field", "call.payload"]
    base += ["--timestamp-field", "when", "--usage-field", "stats"]
    code, out, _ = invoke([*base, "--tenant-field", "user.id"], tmp_path)
    assert code == 0
    doc = _doc(out)
    tenants = {t["tenant"]: t for t in doc["tenants"]}
    assert set(tenants) == {"u1", "u2"}
    assert doc["models"][0]["reported_requests"] == 4
    shared = _doc(invoke(base, tmp_path)[1])
    # one tenant: three of four requests hit; two tenants: two of four
    assert (
        shared["models"][0]["simulated_cached_tokens"] == 3 / 2 * doc["models"][0]["simulated_cached_tokens"]
    )


def test_bad_lines_are_counted_with_their_line_numbers(tmp_path: Path) -> None:
    good = [json.dumps(_openai_chat(i)) for i in range(3)]
    lines = [
        good[0],
        "{not json",
        json.dumps({"foo": 1}),
        good[1],
        "",
        json.dumps({"request": {"messages": 5}}),
        good[2],
    ]
    lines += [json.dumps({"timestamp": "yesterday", "request": {"messages": []}})]
    lines += ["[1, 2"] + [f'{{"broken": {i}' for i in range(30)]
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    code, out, _ = invoke(["audit", "bad.jsonl", "--output-format", "json", "--show-problems", "5"], tmp_path)
    assert code == 0
    doc = _doc(out)
    assert doc["used"] == 3
    assert doc["read"] == doc["used"] + doc["malformed"] == 3 + 4 + 1 + 30
    shown = doc["records"]["shown"]
    assert len(shown) == 5
    assert [(p["line"], p["kind"]) for p in shown[:4]] == [
        (2, "malformed-json"),
        (3, "unknown-shape"),
        (6, "bad-field"),
        (8, "bad-field"),
    ]
    assert doc["records"]["by_kind"]["malformed-json"] == 32
    code, text, _ = invoke(["audit", "bad.jsonl", "--show-problems", "2"], tmp_path)
    assert "3 used" in text and "bad.jsonl:2: malformed-json" in text and "... and 33 more" in text


def test_strict_stops_at_the_first_bad_record(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text(
        json.dumps(_openai_chat(0)) + "\n{oops\n" + json.dumps(_openai_chat(1)) + "\n"
    )
    code, out, err = invoke(["audit", "bad.jsonl", "--strict"], tmp_path)
    assert code == 2 and "bad.jsonl:2: malformed-json" in err and out == ""


def test_missing_file_and_empty_input_exit_2(tmp_path: Path) -> None:
    code, _, err = invoke(["audit", "nope.jsonl"], tmp_path)
    assert code == 2 and "nope.jsonl" in err
    (tmp_path / "junk.jsonl").write_text("junk\n")
    code, out, err = invoke(["audit", "junk.jsonl"], tmp_path)
    assert code == 2 and "no usable record" in err and "0 used" in out


def test_fail_under_and_fail_on(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text(_jsonl([_openai_chat(i) for i in range(4)]))
    (tmp_path / "good.jsonl").write_text(_jsonl([_openai_chat(i, stamp_first=False) for i in range(4)]))
    code, _, err = invoke(["audit", "bad.jsonl", "--fail-under", "50%"], tmp_path)
    assert code == 1 and "below --fail-under 50.0%" in err
    assert invoke(["audit", "good.jsonl", "--fail-under", "0.5"], tmp_path)[0] == 0
    assert invoke(["audit", "bad.jsonl", "--fail-under", "0.4", "--fail-metric", "fixed"], tmp_path)[0] == 0
    assert invoke(["audit", "bad.jsonl", "--fail-on", "prefix-changed"], tmp_path)[0] == 1
    assert invoke(["audit", "good.jsonl", "--fail-on", "prefix-changed"], tmp_path)[0] == 0
    code, _, err = invoke(["audit", "good.jsonl", "--fail-on", "nonsense"], tmp_path)
    assert code == 2 and "unknown cause" in err


def test_price_file_overrides_and_carries_its_date(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_text(_jsonl([_openai_chat(i, stamp_first=False) for i in range(3)]))
    (tmp_path / "prices.toml").write_text(
        'as_of = "2027-01-01"\n[[price]]\nprovider = "openai"\nmatch = ["gpt-4o*"]\n'
        "input = 10.0\ncached_input = 1.0\n"
    )
    base = _doc(invoke(["audit", "log.jsonl", "--output-format", "json"], tmp_path)[1])
    over = _doc(
        invoke(["audit", "log.jsonl", "--output-format", "json", "--prices", "prices.toml"], tmp_path)[1]
    )
    assert over["prices"]["as_of"] == "2027-01-01" and base["prices"]["as_of"] != "2027-01-01"
    m = over["models"][0]
    expected = (
        (m["prompt_tokens"] - m["simulated_cached_tokens"]) * 10.0 + m["simulated_cached_tokens"] * 1.0
    ) / 1e6
    assert m["cost_usd"]["now"] == pytest.approx(expected)
    assert m["cost_usd"]["uncached"] == pytest.approx(m["prompt_tokens"] * 10.0 / 1e6)
    (tmp_path / "broken.toml").write_text('[[price]]\nprovider = "openai"\ninput = 1\ncached_input = 0.1\n')
    code, _, err = invoke(["audit", "log.jsonl", "--prices", "broken.toml"], tmp_path)
    assert code == 2 and "as_of" in err


def test_trace_export_has_no_text_and_replays(tmp_path: Path) -> None:
    from prefixlint.audit.trace import trace_token_ids
    from prefixlint.model.prefix_cache import CacheModel, pieces_from_ids

    rows = [_openai_chat(i, stamp_first=False) for i in range(4)]
    for r in rows:
        r["provider"] = "vllm"
    (tmp_path / "log.jsonl").write_text(_jsonl(rows))
    code, out, _ = invoke(
        ["audit", "log.jsonl", "--trace-out", "trace.jsonl", "--output-format", "json"], tmp_path
    )
    assert code == 0
    raw = (tmp_path / "trace.jsonl").read_text()
    assert "apple" not in raw and "careful" not in raw and "acme" not in raw
    entries = [json.loads(line) for line in raw.splitlines()]
    assert len(entries) == 4
    assert [e["timestamp"] for e in entries] == sorted(e["timestamp"] for e in entries)
    for e in entries:
        assert len(e["hash_ids"]) == -(-e["input_length"] // 16)
    # the system prompt is shared: leading block ids agree, the question differs at the end
    a, b = entries[0]["hash_ids"], entries[1]["hash_ids"]
    assert a[:50] == b[:50] and a[-1] != b[-1]
    model = CacheModel.for_provider("vllm")
    hits = [model.observe(pieces_from_ids(trace_token_ids(e)), e["timestamp"] / 1000).cached for e in entries]
    assert hits[0] == 0 and all(h >= 1200 for h in hits[1:])
    doc = _doc(out)
    assert sum(e["simulated_cached"] for e in entries) == doc["models"][0]["simulated_cached_tokens"]


def test_workers_flag(tmp_path: Path) -> None:
    rows = [_openai_chat(i, tenant=f"t{i % 3}", stamp_first=i % 2 == 0) for i in range(12)]
    (tmp_path / "log.jsonl").write_text(_jsonl(rows))
    one = _doc(invoke(["audit", "log.jsonl", "--output-format", "json"], tmp_path)[1])
    three = _doc(invoke(["audit", "log.jsonl", "--output-format", "json", "--workers", "3"], tmp_path)[1])
    assert _rounded(one["models"]) == _rounded(three["models"])  # sums of prices: float order differs
    strip = [{k: v for k, v in c.items() if k != "examples"} for c in one["causes"]]
    assert strip == [{k: v for k, v in c.items() if k != "examples"} for c in three["causes"]]
    assert three["run"]["workers"] == 3


def test_text_report_names_causes_and_sites(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_text(_jsonl([_openai_chat(i) for i in range(4)]))
    code, out, _ = invoke(["audit", "log.jsonl"], tmp_path)
    assert code == 0
    assert "prefix-changed" in out and "CL001" in out and "timestamp" in out
    assert "Top divergence sites" in out and "4 used" in out
