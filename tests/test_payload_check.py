"""`prefixlint check` on rendered request payloads.

The payloads are the request bodies the real ``openai`` and ``anthropic`` clients send over HTTP to a
local provider-shaped server (multimodal parts, tool calls, tool results, cache_control), written to
disk the way a logging proxy writes them.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefixlint.lint.config import SettingsResolver
from prefixlint.lint.runner import RunOptions, lint_paths
from prefixlint.rules._examples import RULES
from tests.cli_support import invoke, run_cli
from tests.sdk_server import ProviderServer

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

LONG = " ".join([RULES] * 10)
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# A 1x1 PNG: the smallest real image a multimodal part can carry.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
    )
).decode()
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')}.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    }
    for name in ("create_ticket", "search_docs")
]


@pytest.fixture(scope="module")
def server() -> Iterator[ProviderServer]:
    srv = ProviderServer(tokenizer="chars").start()
    yield srv
    srv.stop()


def _openai(server: ProviderServer) -> object:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)


def _claude(server: ProviderServer) -> object:
    return anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)


def chat_body(server: ProviderServer, system: str, question: str, tools: list | None = None) -> dict:
    """What ``chat.completions.create`` sends: a system prompt, an image turn, a tool call and its result."""
    _openai(server).chat.completions.create(
        model="gpt-4.1",
        tools=tools or TOOLS,
        messages=[
            {"role": "system", "content": system},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is on this receipt?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "search_docs", "arguments": '{"q": "receipt"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "A receipt lists items and totals."},
            {"role": "user", "content": question},
        ],
    )
    return server.requests[-1]


def claude_body(server: ProviderServer, system: list[dict], question: str = "And now?") -> dict:
    """What ``messages.create`` sends: system blocks, tools, an image, a tool use and its result."""
    _claude(server).messages.create(
        model="claude-sonnet-4-5",
        max_tokens=256,
        system=system,
        tools=[
            {"name": "lookup_order", "description": "Find an order.", "input_schema": {"type": "object"}},
        ],
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    {"type": "text", "text": "Where is order 42?"},
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "tu_1", "name": "lookup_order", "input": {"id": 42}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "tu_1", "content": "Shipped."},
                    {"type": "text", "text": question},
                ],
            },
        ],
    )
    return server.requests[-1]


def write(path: Path, body: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2) + "\n")
    return path


def line_of(path: Path, needle: str, nth: int = 1) -> int:
    text = path.read_text()
    pos = -1
    for _ in range(nth):
        pos = text.index(needle, pos + 1)
    return text[:pos].count("\n") + 1


# These payloads stay below the 1,024-token minimum, so their findings are informational; the tests
# are about what is found, so every finding fails the run here (see docs/severity.md).
EVERY = ["--min-impact-tokens", "0"]


def findings(tmp_path: Path, *args: str) -> tuple[int, list[dict], str]:
    code, out, err = invoke(["check", "--no-cache", "--output-format", "json", *EVERY, *args], tmp_path)
    return code, json.loads(out or "[]"), err


def test_real_chat_payload_with_image_and_tool_call_is_quiet_when_ordinary(
    server: ProviderServer, tmp_path: Path
) -> None:
    body = chat_body(server, LONG, "Thanks. Today is 2026-11-29T10:15:03Z, can you file a ticket?")
    assert body["messages"][1]["content"][1]["type"] == "image_url" and body["messages"][2]["tool_calls"]
    write(tmp_path / "request.json", body)
    code, found, err = findings(tmp_path, "request.json")
    assert (code, found) == (0, []), found  # the timestamp travels in the last user message
    assert "not checked" not in err


def test_real_chat_payload_timestamp_in_system_prompt(server: ProviderServer, tmp_path: Path) -> None:
    body = chat_body(server, f"Current time: 2026-11-29T10:15:03Z.\n{LONG}", "Can you file a ticket?")
    path = write(tmp_path / "request.json", body)
    code, found, _ = findings(tmp_path, "request.json")
    assert code == 1 and [f["code"] for f in found] == ["PFX110"]
    f = found[0]
    line = line_of(path, "2026-11-29T10:15:03Z")
    assert f["location"]["row"] == line
    text_line = path.read_text().splitlines()[line - 1]
    col = f["location"]["column"] - 1
    assert text_line[col : col + 20] == "2026-11-29T10:15:03Z"
    # the static tail: the rules, the image turn, the tool call and its result; not the new user turn.
    # Not exact: the image's tokens are the provider rule's estimate (85 at detail low)
    assert f["impact"]["tokens_lost"] > 500 and f["impact"]["exact"] is False


def test_real_anthropic_payload_breakpoints(server: ProviderServer, tmp_path: Path) -> None:
    eph, hour = {"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}
    system = [{"type": "text", "text": f"{LONG} part {i}", "cache_control": eph} for i in range(3)]
    system.append({"type": "text", "text": "Latest policy.", "cache_control": hour})  # 1h after 5m
    system.append({"type": "text", "text": "Appendix.", "cache_control": eph})  # a fifth breakpoint
    path = write(tmp_path / "claude.json", claude_body(server, system))
    code, found, _ = findings(tmp_path, "claude.json")
    by_code = {f["code"]: f for f in found}
    assert code == 1 and set(by_code) == {"PFX501", "PFX502"}, [f["message"] for f in found]
    assert by_code["PFX501"]["location"]["row"] == line_of(path, '"cache_control"', 5)
    assert by_code["PFX502"]["location"]["row"] == line_of(path, '"ttl": "1h"') - 2
    assert "5 cache_control breakpoints" in by_code["PFX501"]["message"]


def test_real_anthropic_payload_below_minimum_and_unsorted_tools(
    server: ProviderServer, tmp_path: Path
) -> None:
    system = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
    body = claude_body(server, system)
    body["tools"] = [
        {"name": "lookup_order", "description": "Find an order.", "input_schema": {"type": "object"}},
        {"name": "cancel_order", "description": "Cancel an order.", "input_schema": {"type": "object"}},
    ]
    path = write(tmp_path / "claude.json", body)
    code, found, _ = findings(tmp_path, "claude.json")
    by_code = {f["code"]: f for f in found}
    assert code == 1 and set(by_code) == {"PFX404", "PFX505"}, [f["message"] for f in found]
    assert by_code["PFX505"]["location"]["row"] == line_of(path, '"cache_control"')
    assert "below the 1,024-token minimum of claude-sonnet-4-5" in by_code["PFX505"]["message"]
    # the whole request stays below the minimum: informational
    assert by_code["PFX404"]["severity"] == "info" and "`cancel_order`" in by_code["PFX404"]["message"]


def test_samples_in_a_directory_are_aligned(server: ProviderServer, tmp_path: Path) -> None:
    stamps = ("2026-11-29T10:15:03Z", "2026-11-29T10:16:44Z", "2026-11-30T08:01:12Z")
    for i, stamp in enumerate(stamps):
        body = chat_body(server, f"You are Harbor. Current time: {stamp}.\n{LONG}", f"Question {i}?")
        write(tmp_path / "logs" / f"req{i}.json", body)
    write(tmp_path / "logs" / "package.json", {"name": "not-a-request", "version": "1.0.0"})
    code, found, err = findings(tmp_path, ".")
    assert code == 1 and [f["code"] for f in found] == ["PFX101"], [f["message"] for f in found]
    f = found[0]
    assert f["filename"].endswith("req0.json")
    assert "varies between the 3 samples" in f["message"] and "`2026-11-29T10:15:03Z`" in f["message"]
    assert "stable prefix of" in f["message"] and f["impact"]["tokens_lost"] > 500
    assert not err  # the unrelated JSON file is skipped silently
    # the same three payloads with the same timestamp: nothing varies, nothing is guessed
    for i in range(3):
        body = json.loads((tmp_path / "logs" / f"req{i}.json").read_text())
        body["messages"][0]["content"] = body["messages"][0]["content"].replace(stamps[i], stamps[0])
        write(tmp_path / "logs" / f"req{i}.json", body)
    assert findings(tmp_path, ".")[:2] == (0, [])


def test_jsonl_samples_and_the_cache(server: ProviderServer, tmp_path: Path) -> None:
    bodies = [
        chat_body(server, f"Request id: {rid}.\n{LONG}", f"Question {i}?")
        for i, rid in enumerate(
            ("3f0c2b9e-6a1d-4c8e-9b2f-7d5e1a0c4b3f", "0192f3c4-7b1e-7c2d-8e3f-a4b5c6d7e8f9")
        )
    ]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(b) + "\n" for b in bodies))
    args = ["check", "--output-format", "json", "--cache-dir", str(tmp_path / "cache"), "requests.jsonl"]
    first = invoke(args, tmp_path)
    second = invoke(args, tmp_path)  # from the cache
    assert first == second
    found = json.loads(first[1])
    assert [f["code"] for f in found] == ["PFX102"]
    assert "`3f0c2b9e-6a1d-4c8e-9b2f-7d5e1a0c4b3f` varies between the 2 samples" in found[0]["message"]
    assert found[0]["location"]["row"] == 1


def test_directory_group_cache_follows_membership(server: ProviderServer, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    base = chat_body(server, f"You are Harbor. Build A.\n{LONG}", "Question?")
    write(logs / "a.json", base)
    write(logs / "b.json", base)
    args = ["check", "--output-format", "json", *EVERY, "--cache-dir", str(tmp_path / "cache"), "."]
    assert invoke(args, tmp_path)[:2] == (0, "[]\n")
    other = json.loads(json.dumps(base))
    other["messages"][0]["content"] = other["messages"][0]["content"].replace("Build A", "Build B")
    write(logs / "c.json", other)  # a new member: the cached results of a and b no longer stand
    code, out, _ = invoke(args, tmp_path)
    assert code == 1 and [f["code"] for f in json.loads(out)] == ["PFX109"]


def test_malformed_payload_is_a_diagnostic_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text(
        '{\n  "model": "gpt-4.1",\n  "messages": [\n    {"role": "user",}\n  ]\n}\n'
    )
    proc = run_cli(["check", "--no-cache", "broken.json"], tmp_path)
    out = proc.stdout.decode()
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert "broken.json:4:21: PFX001 Malformed JSON: Expecting property name enclosed in double quotes" in out


def test_files_no_analyzer_reads_are_reported(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    code, out, err = invoke(["check", "--no-cache", "notes.md", "package.json"], tmp_path)
    assert code == 0
    assert "notes.md: not checked" in err and "package.json: not checked" in err
    assert out.strip() == "No files were checked."
    # a forced shape reads a named JSON file as a payload, and says when it is not one
    code, out, err = invoke(["check", "--no-cache", "--payload-shape", "chat", "package.json"], tmp_path)
    assert code == 1 and "PFX001 Not a request payload" in out and "not checked" not in err
    code, _, err = invoke(["check", "--payload-shape", "nope", "package.json"], tmp_path)
    assert code == 2 and "--payload-shape" in err


def test_payload_globs_and_stdin(server: ProviderServer, tmp_path: Path) -> None:
    body = chat_body(server, f"Current time: 2026-11-29T10:15:03Z.\n{LONG}", "Hi?")
    (tmp_path / "captures").mkdir()
    # a capture whose first keys are no request shape (a long metadata block first): only a glob reads it
    doc = {"metadata": {"note": "x" * 9000}, **body}
    (tmp_path / "captures" / "c1.req").write_text(json.dumps(doc))
    (tmp_path / "pyproject.toml").write_text('[tool.prefixlint]\npayload-globs = ["captures/*.req"]\n')
    code, found, _ = findings(tmp_path, ".")
    assert code == 1 and [f["code"] for f in found] == ["PFX110"]
    text = json.dumps(body)
    code, out, _ = invoke(
        ["check", "--no-cache", "--output-format", "json", *EVERY, "--stdin-filename", "req.json", "-"],
        tmp_path,
        input=text,
    )
    assert code == 1 and [f["code"] for f in json.loads(out)] == ["PFX110"]


def test_payload_examples_match_their_readme_rows() -> None:
    rows = re.findall(r"^\| `(payloads/[^`]+)` \| ([^|]+) \|", (EXAMPLES / "README.md").read_text(), re.M)
    expected = {name: set(re.findall(r"PFX\d{3}", codes)) for name, codes in rows}
    files = {p.relative_to(EXAMPLES).as_posix() for p in (EXAMPLES / "payloads").rglob("*.json*")}
    assert set(expected) <= files and len(expected) >= 5
    run = lint_paths([EXAMPLES / "payloads"], SettingsResolver(), RunOptions(jobs=1, use_cache=False))
    found: dict[str, set[str]] = {name: set() for name in files}
    for f in run.findings:
        found[Path(f.location.path).relative_to(EXAMPLES).as_posix()].add(f.code)
    assert {name: found[name] for name in expected} == expected
    assert not run.internal_errors


def test_real_responses_payload_with_image_and_function_call(server: ProviderServer, tmp_path: Path) -> None:
    def send(instructions: str) -> dict:
        _openai(server).responses.create(
            model="gpt-4.1",
            instructions=instructions,
            tools=[{"type": "function", "name": "search_docs", "parameters": {"type": "object"}}],
            input=[
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "What is on this receipt?"},
                        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
                    ],
                },
                {"type": "function_call", "call_id": "c1", "name": "search_docs", "arguments": '{"q": "x"}'},
                {"type": "function_call_output", "call_id": "c1", "output": "A receipt lists items."},
                {"role": "user", "content": "Summarize it."},
            ],
        )
        return server.requests[-1]

    quiet = write(tmp_path / "ok" / "response_request.json", send(LONG))
    assert findings(tmp_path, str(quiet.relative_to(tmp_path)))[:2] == (0, [])
    stamped = send(f"Session 5f2a9c31d0e84b7a9e1f. {LONG}")
    path = write(tmp_path / "bad" / "response_request.json", stamped)
    code, found, _ = findings(tmp_path, str(path.relative_to(tmp_path)))
    assert code == 1 and [f["code"] for f in found] == ["PFX110"]
    assert found[0]["location"]["row"] == line_of(path, "5f2a9c31d0e84b7a9e1f")
    assert "`5f2a9c31d0e84b7a9e1f` in instructions looks like a hexadecimal id" in found[0]["message"]
