"""Where the wrapper looks for marked values: every place a request can hold one, and nowhere else."""

from __future__ import annotations

from collections import UserDict
from typing import Any

import pytest

from prefixlint.sdk.volatile import has_volatile, volatile

V = volatile("2026-12-03", name="date")
PART = {"type": "text", "text": V}


class Message(dict):
    """A dict subclass, as some SDK helpers build messages."""


CASES: list[tuple[str, dict[str, Any], str, bool]] = [
    ("plain chat", {"messages": [{"role": "user", "content": "hi"}]}, "chat", False),
    ("system string", {"system": V, "messages": []}, "messages", True),
    ("system parts", {"system": [{"type": "text", "text": "x"}, PART]}, "messages", True),
    ("system plain parts", {"system": [{"type": "text", "text": "x"}]}, "messages", False),
    ("instructions string", {"instructions": V, "input": "q"}, "responses", True),
    ("instructions parts", {"instructions": [PART], "input": "q"}, "responses", True),
    ("responses input string", {"input": V}, "responses", True),
    ("responses input list", {"input": [{"role": "user", "content": [PART]}]}, "responses", True),
    ("input ignored for chat", {"input": [{"role": "user", "content": V}]}, "chat", False),
    ("messages ignored for responses", {"messages": [{"role": "user", "content": V}]}, "responses", False),
    ("message content string", {"messages": [{"role": "system", "content": V}]}, "chat", True),
    ("message content part", {"messages": [{"role": "user", "content": ["a", PART]}]}, "chat", True),
    (
        "message plain parts",
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]},
        "chat",
        False,
    ),
    (
        "later message",
        {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": [PART]}]},
        "chat",
        True,
    ),
    ("dict subclass message", {"messages": [Message(role="user", content=V)]}, "chat", True),
    ("dict subclass parts", {"messages": [Message(role="user", content=[PART])]}, "chat", True),
    ("mapping message skipped", {"messages": [UserDict(role="user", content=V)]}, "chat", False),
    ("non-dict then marked", {"messages": [object(), {"role": "user", "content": [PART]}]}, "chat", True),
    ("content none", {"messages": [{"role": "assistant", "content": None}]}, "chat", False),
    ("no messages", {}, "chat", False),
]


@pytest.mark.parametrize(("body", "api", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_has_volatile_finds_marks_where_a_request_holds_them(
    body: dict[str, Any], api: str, expected: bool
) -> None:
    assert has_volatile(body, api) is expected
