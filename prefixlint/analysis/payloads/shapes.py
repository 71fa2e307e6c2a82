"""Request shapes: which API a body is for (``chat``, ``responses`` or ``messages``), and whether a dict
is a request body at all.
"""

from __future__ import annotations

from typing import Any

from prefixlint.model.providers import guess_provider

# Content block types only Anthropic's Messages API has.
_ANTHROPIC_BLOCKS = frozenset(
    (
        "tool_use",
        "tool_result",
        "document",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "search_result",
    )
)


def detect_api(body: dict[str, Any]) -> str:
    """``messages`` (Anthropic), ``responses`` or ``chat`` from the shape of a request body.

    ``input`` or ``instructions`` mean the Responses API. A top-level ``system`` or ``cache_control``,
    ``anthropic_version``, ``max_tokens`` with a Claude model, or an Anthropic-only content block
    (``tool_use``, ``tool_result``, an ``image`` with a ``source``...) mean Anthropic Messages. Anything
    else is a chat completion (a Claude model behind an OpenAI-compatible gateway included).
    """
    if "input" in body or "instructions" in body:
        return "responses"
    if "system" in body or "anthropic_version" in body or "cache_control" in body:
        return "messages"
    if "max_tokens" in body and guess_provider(body.get("model")) == "anthropic":
        return "messages"
    msgs = body.get("messages")
    if isinstance(msgs, list) and any(_anthropic_content(m) for m in msgs):
        return "messages"
    return "chat"


def _anthropic_content(msg: Any) -> bool:
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return False
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in _ANTHROPIC_BLOCKS or "cache_control" in part:
            return True
        if kind == "image" and isinstance(part.get("source"), dict):
            return True
    return False


def is_request_body(value: Any) -> bool:
    """True for a dict shaped like a chat, responses or messages request body."""
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("messages"), list):
        return True
    if "model" not in value:
        return False
    return (
        isinstance(value.get("input"), (str, list))
        or isinstance(value.get("instructions"), str)
        or isinstance(value.get("tools"), list)
        or isinstance(value.get("system"), (str, list))
    )
