"""`prefixlint diff`: first divergence, excerpts, kinds, cacheable prefixes, JSON output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from prefixlint.model.providers import get_provider
from prefixlint.model.tokens import tokenizer_for
from prefixlint.rules._examples import RULES
from tests.cli_support import invoke, run_cli

LONG = " ".join([RULES] * 12)  # well over 1,024 tokens, under 4,096


def chat(system: str, question: str = "How do I add an employee?", **extra: object) -> dict:
    return {
        "model": "gpt-4.1",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
        **extra,
    }


def write(path: Path, body: dict | str) -> str:
    path.write_text(body if isinstance(body, str) else json.dumps(body, indent=2) + "\n")
    return path.name


def diff_json(tmp_path: Path, *args: str, input: str | None = None) -> tuple[int, dict, str]:
    code, out, err = invoke(["diff", "--output-format", "json", *args], tmp_path, input=input)
    return code, (json.loads(out) if out else {}), err


def test_first_divergence_token_path_kind_and_cacheable_prefixes(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", chat(f"{LONG}\nCurrent time: 2026-11-29T10:15:03Z.\nMore rules."))
    b = write(tmp_path / "b.json", chat(f"{LONG}\nCurrent time: 2026-11-30T08:01:44Z.\nMore rules.", "Hi"))
    code, data, _ = diff_json(tmp_path, a, b)
    assert code == 0
    pair = data["pairs"][0]
    tok = tokenizer_for("openai", "gpt-4.1")
    common = f"{LONG}\nCurrent time: 2026-11-"
    expected = 4 + len(tok.encode(common))  # the system message's role markers, then the shared text
    assert pair["shared_tokens"] == data["shared_tokens"] == expected and pair["exact"]
    assert pair["path_a"] == pair["path_b"] == "messages[0].content"
    assert pair["kind"] == "an ISO 8601 timestamp" and pair["value_kind"] == "timestamp"
    line = (
        (tmp_path / "a.json")
        .read_text()
        .splitlines()
        .index(next(s for s in (tmp_path / "a.json").read_text().splitlines() if "2026-11-29" in s))
    )
    assert pair["location_a"].startswith(f"a.json:{line + 1}:")
    assert "2026-11-29" in pair["excerpt_a"] and "2026-11-30" in pair["excerpt_b"]
    rows = {r["provider"]: r for r in data["cacheable"]}
    openai_rules = get_provider("openai").rules_for("gpt-4.1")
    assert rows["openai"]["tokens"] == openai_rules.cacheable(expected, pair["total_b"])
    assert rows["openai"]["tokens"] % 128 == 0 and rows["openai"]["tokens"] >= 1024
    assert rows["vllm"]["tokens"] == expected // 16 * 16
    assert rows["anthropic"]["tokens"] == 0 and "no cache_control" in rows["anthropic"]["rule"]
    assert data["tokenizer"] == {"encoding": "o200k_base", "exact": True}


def test_anthropic_breakpoints_and_per_model_minimums(tmp_path: Path) -> None:
    def body(model: str, question: str) -> dict:
        return {
            "model": model,
            "max_tokens": 100,
            "system": [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": question}],
        }

    a = write(tmp_path / "a.json", body("claude-sonnet-4-5", "First question?"))
    b = write(tmp_path / "b.json", body("claude-sonnet-4-5", "Second question?"))
    _, data, _ = diff_json(tmp_path, a, b)
    rows = {r["provider"]: r for r in data["cacheable"]}
    system_end = data["pairs"][0]["shared_tokens"] - 4  # the user turn's role markers are shared too
    assert rows["anthropic"]["tokens"] == system_end and rows["anthropic"]["minimum"] == 1024
    assert "breakpoint" in rows["anthropic"]["rule"] and not data["tokenizer"]["exact"]
    # Haiku 4.5 needs 4,096 tokens: the same breakpoint caches nothing
    a = write(tmp_path / "a.json", body("claude-haiku-4-5", "First question?"))
    b = write(tmp_path / "b.json", body("claude-haiku-4-5", "Second question?"))
    _, data, _ = diff_json(tmp_path, a, b)
    rows = {r["provider"]: r for r in data["cacheable"]}
    assert rows["anthropic"]["tokens"] == 0 and rows["anthropic"]["minimum"] == 4096


def test_threshold_flags_give_ci_exit_codes(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", chat(f"Today: 2026-11-29T10:15:03Z.\n{LONG}"))
    b = write(tmp_path / "b.json", chat(f"Today: 2026-11-30T10:15:03Z.\n{LONG}"))
    code, data, _ = diff_json(tmp_path, a, b, "--min-cacheable", "1024")
    assert code == 1 and data["checks"][0]["passed"] is False
    assert invoke(["diff", a, b, "--min-shared", "5"], tmp_path)[0] == 0
    c = write(tmp_path / "c.json", chat(f"{LONG}\nToday: 2026-11-29T10:15:03Z."))
    d = write(tmp_path / "d.json", chat(f"{LONG}\nToday: 2026-11-30T10:15:03Z."))
    code, out, _ = invoke(["diff", c, d, "--min-cacheable", "1024"], tmp_path)
    assert code == 0 and "passed: cacheable prefix under openai's rules" in out


def test_three_inputs_are_aligned_with_each_span_costed(tmp_path: Path) -> None:
    names = []
    for i, (stamp, user) in enumerate(
        (("2026-11-29T10:15:03Z", "Ann"), ("2026-11-29T10:16:44Z", "Bob"), ("2026-11-30T08:01:12Z", "Cyd"))
    ):
        # two values apart by a stable sentence (a shorter stable run would join them into one span)
        middle = "Greet the customer by name and keep the tone friendly and brief."
        body = chat(f"You are Harbor. Time: {stamp}.\n{middle}\nUser: {user}\n{LONG}", f"Question {i}?")
        names.append(write(tmp_path / f"r{i}.json", body))
    code, data, _ = diff_json(tmp_path, *names)
    al = data["alignment"]
    assert code == 0 and al["samples"] == 3
    assert al["stable_prefix_tokens"] == min(p["shared_tokens"] for p in data["pairs"])
    ahead = [s for s in al["varying_spans"] if s["ahead_of_stable"]]
    assert [s["value_kind"] for s in ahead] == ["timestamp", "unknown"]
    assert ahead[0]["values"] == ["2026-11-29T10:15:03Z", "2026-11-29T10:16:44Z", "2026-11-30T08:01:12Z"]
    assert ahead[1]["values"] == ["Ann", "Bob", "Cyd"]
    assert ahead[0]["stable_tokens_after"] > ahead[1]["stable_tokens_after"] > 1000
    last = [s for s in al["varying_spans"] if not s["ahead_of_stable"]]
    assert last and last[-1]["path"] == "messages[1].content"  # the new user turn costs nothing


def test_text_output_highlights_the_difference(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", f"{LONG}\nUser: Alice\n")
    b = write(tmp_path / "b.txt", f"{LONG}\nUser: Bob\n")
    code, out, _ = invoke(["diff", a, b, "--color", "always"], tmp_path)
    assert code == 0
    assert "\x1b[1;31mAlice\x1b[0m" in out and "\x1b[1;32mBob\x1b[0m" in out
    assert f"a.txt:{LONG.count(chr(10)) + 2}:7" in out  # line and column of the difference in the text file
    code, out, _ = invoke(["diff", a, b], tmp_path)
    assert "[Alice]" in out and "\x1b[" not in out


def test_stdin_jsonl_and_errors(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", chat(LONG))
    code, data, _ = diff_json(tmp_path, a, "-", input=json.dumps(chat(LONG, "Other question")))
    assert code == 0 and data["inputs"][1]["label"] == "stdin"
    lines = "".join(json.dumps(chat(LONG, f"Q{i}")) + "\n" for i in range(3))
    code, data, _ = diff_json(tmp_path, write(tmp_path / "log.jsonl", lines))
    assert code == 0 and [i["label"] for i in data["inputs"]] == ["log.jsonl:1", "log.jsonl:2", "log.jsonl:3"]

    bad = write(tmp_path / "bad.json", '{"model": "gpt-4.1",\n "messages": [}\n')
    proc = run_cli(["diff", a, bad], tmp_path)
    assert proc.returncode == 2 and b"Traceback" not in proc.stderr
    assert b"bad.json:2:15: Malformed JSON: Expecting value" in proc.stderr
    assert invoke(["diff", a], tmp_path)[0] == 2
    assert invoke(["diff", a, "missing.json"], tmp_path)[0] == 2
    assert invoke(["diff", a, write(tmp_path / "p.json", '{"name": "x"}')], tmp_path)[0] == 2


def test_offline_fallback_counts_are_labelled_estimates(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.cli_support import REPO

    a = write(tmp_path / "a.json", chat(f"Now: 2026-11-29T10:15:03Z.\n{LONG}"))
    b = write(tmp_path / "b.json", chat(f"Now: 2026-11-30T10:15:03Z.\n{LONG}"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "PREFIXLINT_TOKENIZER": "estimate"}
    run = [sys.executable, "-m", "prefixlint", "diff", a, b]
    proc = subprocess.run(
        run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "tokens: o200k_base (estimate)" in proc.stdout and "diverges from A at token ~" in proc.stdout
    proc = subprocess.run(
        [*run, "--output-format", "json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    data = json.loads(proc.stdout)
    assert data["tokenizer"]["exact"] is False and data["pairs"][0]["kind"] == "an ISO 8601 timestamp"
    proc = subprocess.run(
        [sys.executable, "-m", "prefixlint", "check", "--no-cache", "--output-format", "json", a],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    found = json.loads(proc.stdout)
    assert [f["code"] for f in found] == ["PFX110"] and found[0]["impact"]["exact"] is False


def test_provider_option_sets_tokenizer_and_target(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", chat(f"{LONG}\nA"))
    b = write(tmp_path / "b.json", chat(f"{LONG}\nB"))
    code, data, _ = diff_json(tmp_path, a, b, "--provider", "vllm", "--min-cacheable", "16")
    assert code == 0 and data["provider"] == "vllm" and data["tokenizer"]["encoding"] == "cl100k_base"
    assert data["checks"][0]["passed"] and "vllm's rules" in data["checks"][0]["check"]
    assert invoke(["diff", a, b, "--provider", "nope"], tmp_path)[0] == 2


def test_an_empty_request_as_the_reference_is_compared_not_a_crash(tmp_path: Path) -> None:
    empty = write(tmp_path / "a.json", {"model": "gpt-4.1", "messages": []})
    b = write(tmp_path / "b.json", chat(f"Request 1. {LONG}"))
    c = write(tmp_path / "c.json", chat(f"Request 2. {LONG}"))
    code, out, err = invoke(["diff", empty, b, c], tmp_path)
    assert code == 0 and "internal error" not in err
    assert "B diverges from A at token 0" in out and "content only one request has" in out
    code, data, _ = diff_json(tmp_path, empty, b, c)
    assert code == 0
    assert [(p["shared_tokens"], p["total_a"], p["diverges"]) for p in data["pairs"]] == [(0, 0, True)] * 2
