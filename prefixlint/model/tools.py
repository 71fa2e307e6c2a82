"""Tool definitions as every provider shapes them."""

from __future__ import annotations

from typing import Any


def tool_name(tool: Any) -> str:
    """A tool's name in OpenAI chat, Responses or Anthropic shape ("" when it has none)."""
    if isinstance(tool, dict):
        fn = tool.get("function")
        if isinstance(fn, dict) and "name" in fn:
            return str(fn["name"])
        return str(tool.get("name", ""))
    return ""
