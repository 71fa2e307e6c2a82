"""Request payloads for rule examples, in the shapes the OpenAI and Anthropic APIs take."""

from __future__ import annotations

import json
from typing import Any

from prefixlint.rules._examples import RULES

# A static system text long enough that a cache has something to keep (several hundred tokens).
LONG_RULES = " ".join([RULES] * 8)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def openai_tool(name: str, description: str) -> dict[str, Any]:
    """A chat-completions function tool."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    }


def anthropic_tool(name: str, description: str) -> dict[str, Any]:
    """A Messages API tool."""
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    }


def chat_body(system: str, user: str = "How do I add an employee?", **extra: Any) -> dict[str, Any]:
    """An OpenAI chat-completions body."""
    return {
        "model": "gpt-4.1",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        **extra,
    }


def claude_body(system: list[dict[str, Any]], user: str = "How do I add an employee?", **extra: Any) -> dict:
    """An Anthropic Messages body."""
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": system,
        "messages": [{"role": "user", "content": [{"type": "text", "text": user}]}],
        **extra,
    }


def text_block(text: str, ttl: str | None = None) -> dict[str, Any]:
    """A text content block, with a ``cache_control`` breakpoint when ``ttl`` is given."""
    block: dict[str, Any] = {"type": "text", "text": text}
    if ttl == "5m":
        block["cache_control"] = {"type": "ephemeral"}
    elif ttl:
        block["cache_control"] = {"type": "ephemeral", "ttl": ttl}
    return block


def as_json(body: dict[str, Any]) -> str:
    """A body as an indented JSON file, as a logging proxy or a test fixture writes it."""
    return json.dumps(body, indent=2) + "\n"


def as_jsonl(bodies: list[dict[str, Any]]) -> str:
    """Bodies as JSON Lines, one request per line."""
    return "".join(json.dumps(b) + "\n" for b in bodies)


def line_of(text: str, marker: str) -> int:
    """The 1-based line of the first occurrence of ``marker``."""
    return text[: text.index(marker)].count("\n") + 1


def line_of_object(text: str, marker: str) -> int:
    """The 1-based line where the JSON object that holds the first ``marker`` opens."""
    depth = 0
    for i in range(text.index(marker), -1, -1):
        if text[i] == "}":
            depth += 1
        elif text[i] == "{":
            if depth == 0:
                return text[:i].count("\n") + 1
            depth -= 1
    return 1
