"""A finding needs a place to point at: the payload rules report nothing for a layout whose segments
carry no location (a request built in memory), and the breakpoint rules say nothing under a provider
whose rules are unknown. The same layouts with locations do give the finding, at the located key."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from prefixlint.analysis.payloads.to_layout import layout_from_request
from prefixlint.model.layout import Layout, Section, Segment, SourceLocation, count_layout_tokens
from prefixlint.model.settings import Settings
from prefixlint.rules.base import RuleContext, all_rules

RULES = " ".join(["Answer in short plain sentences and cite the manual page for every step."] * 80)


def tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": {"type": "object"}},
    }


def claude_tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": name, "input_schema": {"type": "object"}}


def block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}


USER = [{"role": "user", "content": "Q"}]
BODIES = {
    "unsorted tools": (
        "PFX404",
        {"model": "gpt-4.1", "tools": [tool("search_docs"), tool("create_ticket")], "messages": USER},
        "tools[1]",
    ),
    "unsorted claude tools": (
        "PFX404",
        {
            "model": "claude-sonnet-4",
            "tools": [claude_tool("lookup_order"), claude_tool("cancel_order")],
            "system": [block(RULES)],
            "messages": USER,
        },
        "tools[1]",
    ),
    "timestamp in the system prompt": (
        "PFX110",
        {
            "model": "gpt-4.1",
            "messages": [{"role": "system", "content": "Now: 2026-01-05T10:11:12Z. " + RULES}, *USER],
        },
        "messages[0].content",
    ),
    "five breakpoints": (
        "PFX501",
        {"model": "claude-sonnet-4", "system": [block(f"{RULES} {i}") for i in range(5)], "messages": USER},
        "system[4].cache_control",
    ),
    "breakpoint below the minimum": (
        "PFX505",
        {"model": "claude-sonnet-4", "system": [block("Be brief.")], "messages": USER},
        "system[0].cache_control",
    ),
}


def findings(layout: Layout) -> list[tuple[str, int | None]]:
    ctx = RuleContext(settings=Settings())
    return [
        (f.code, f.location.line if f.location else None) for r in all_rules() for f in r().check(layout, ctx)
    ]


@pytest.mark.parametrize("case", list(BODIES))
def test_a_located_payload_gives_the_finding_an_unlocated_one_none(case: str) -> None:
    code, body, key = BODIES[case]
    paths: list[str] = []

    def locate(path: str) -> SourceLocation:
        paths.append(path)
        return SourceLocation("req.json", len(paths), 0)

    located = layout_from_request(body, locate=locate)
    assert findings(located) == [(code, paths.index(key) + 1)]
    assert findings(layout_from_request(body)) == []


@pytest.mark.parametrize("case", ["five breakpoints", "breakpoint below the minimum"])
def test_breakpoint_rules_say_nothing_for_an_unknown_provider(case: str) -> None:
    _, body, _ = BODIES[case]
    layout = layout_from_request(body, locate=lambda path: SourceLocation("req.json", 1, 0))
    assert findings(replace(layout, provider="no-such-provider")) == []


def test_a_tool_segment_that_is_not_json_is_not_a_named_tool() -> None:
    def tool_seg(label: str, text: str, line: int) -> Segment:
        return Segment(Section.TOOLS, text=text, label=label, location=SourceLocation("req.json", line, 0))

    segs = [tool_seg("tools[0]", '{"name": "zeta"}', 1), tool_seg("tools[1]", "not json", 2)]
    segs += [tool_seg("tools[2]", '{"name": "alpha"}', 3), Segment(Section.SYSTEM, text=RULES)]
    layout = count_layout_tokens(Layout(segments=segs, provider="openai", model="gpt-4.1", samples=1))
    assert findings(layout) == [("PFX404", 3)]
    segs[2] = tool_seg("tools[2]", '{"name": "zeta2"}', 3)
    assert (
        findings(count_layout_tokens(Layout(segments=segs, provider="openai", model="gpt-4.1", samples=1)))
        == []
    )
