"""Server-sent events framing."""

from __future__ import annotations

import json

DONE = "data: [DONE]\n\n"


def sse(data: object, event: str | None = None) -> str:
    """One event: an optional ``event:`` line and a JSON ``data:`` line."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"
