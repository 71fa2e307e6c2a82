"""PFX404: the tools of a rendered payload are not in a stable order."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import replace

from prefixlint.model.findings import Finding, Severity
from prefixlint.model.layout import Layout, Nondeterminism, Section
from prefixlint.model.tools import tool_name
from prefixlint.rules._payload_examples import (
    LONG_RULES,
    anthropic_tool,
    as_json,
    as_jsonl,
    chat_body,
    claude_body,
    line_of_object,
    openai_tool,
    text_block,
)
from prefixlint.rules.base import Example, Rule, RuleContext
from prefixlint.rules.impact import impact_at, static_tokens_lost

_SEARCH = openai_tool("search_docs", "Search the product documentation.")
_TICKET = openai_tool("create_ticket", "Open a support ticket.")
_REFUND = openai_tool("refund_order", "Refund an order.")
_UNSORTED = as_json(chat_body(LONG_RULES, tools=[_SEARCH, _TICKET]))
_CLAUDE_UNSORTED = as_json(
    claude_body(
        [text_block(LONG_RULES, "5m")],
        tools=[
            anthropic_tool("lookup_order", "Find an order."),
            anthropic_tool("cancel_order", "Cancel one."),
        ],
    )
)
_REORDERED = as_jsonl(
    [
        chat_body(LONG_RULES, user="Where is my order?", tools=[_TICKET, _REFUND, _SEARCH]),
        chat_body(LONG_RULES, user="Refund it.", tools=[_SEARCH, _TICKET, _REFUND]),
    ]
)


def _tool_line(text: str, name: str) -> int:
    """The line where the chat-completions tool named ``name`` opens (around its ``function``)."""
    return line_of_object(text, f'"function": {{\n        "name": "{name}"')


def _names(layout: Layout) -> list[tuple[int, str]]:
    """``(segment index, tool name)`` of the named tools, in request order."""
    out = []
    for i, seg in enumerate(layout.segments):
        if seg.section is not Section.TOOLS or not seg.static or not seg.label.startswith("tools["):
            continue
        try:
            name = tool_name(json.loads(seg.text))
        except ValueError:
            continue
        if name:
            out.append((i, name))
    return out


class UnstableToolOrder(Rule):
    """The tools of a rendered payload are not in a stable order.

    Tools come first in the prefix every provider caches. A list assembled from a registry, plugin
    discovery or MCP servers can come back in another order after a restart or a reconnect, and a
    reordered list misses the cache for the whole request. When several payloads of one template are
    checked together and the same tools come in different orders, that is reported as fact. In a
    single payload only the order itself is known: tools that are not sorted by name are reported at
    low severity, since nothing shows whether their order ever changes.

    Fix: sort the tools by name (or another total order) before they reach the request; the SDK
    wrapper does it with ``sort_tools=True``.

    Fix safety: There is no automatic fix: the order is set by the code that assembles the tools (a
    registry, plugin discovery, MCP servers), not by the payload file that shows it.
    """

    code = "PFX404"
    name = "unstable-tool-order"
    default_severity = Severity.LOW
    INVALID = [
        Example(
            _REORDERED, path="requests.jsonl", line=1, note="two samples send the same tools in two orders"
        ),
        Example(_UNSORTED, path="request.json", line=_tool_line(_UNSORTED, "create_ticket")),
        Example(
            _CLAUDE_UNSORTED,
            path="claude_request.json",
            line=line_of_object(_CLAUDE_UNSORTED, "cancel_order"),
        ),
    ]
    VALID = [
        Example(as_json(chat_body(LONG_RULES, tools=[_TICKET, _SEARCH])), path="request.json"),
        Example(as_json(chat_body(LONG_RULES, tools=[_SEARCH])), path="request.json", note="one tool"),
        Example(
            as_jsonl([chat_body(LONG_RULES, user=q, tools=[_SEARCH, _TICKET]) for q in ("a?", "b?")]),
            path="requests.jsonl",
            note="two samples show the order does not change",
        ),
    ]

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        for i, seg in enumerate(layout.segments):
            if seg.nondeterminism is Nondeterminism.TOOL_ORDER and seg.location is not None:
                yield self._finding(
                    layout,
                    i,
                    ctx,
                    seg.location,
                    f"The tools come in different orders in the {layout.samples} samples",
                    Severity.HIGH,
                )
                return
        if layout.samples != 1:
            return
        named = _names(layout)
        for (_, before), (j, name) in itertools.pairwise(named):
            if name < before:
                loc = layout.segments[j].location
                if loc is None:
                    return
                yield self._finding(
                    layout,
                    named[0][0],
                    ctx,
                    loc,
                    f"The {len(named)} tools are not sorted by name (`{name}` comes after `{before}`); "
                    "if the list is assembled at run time, its order can change between requests",
                    None,
                )
                return

    def _finding(
        self,
        layout: Layout,
        first: int,
        ctx: RuleContext,
        location: object,
        what: str,
        severity: Severity | None,
    ) -> Finding:
        impact = impact_at(layout, first, ctx.settings)
        own = layout.segments[first].tokens
        impact = replace(impact, tokens_lost=static_tokens_lost(layout, first) + own)
        message = f"{what}: each new order costs {impact.describe()}. Sort the tools by name."
        finding = self.finding(location, impact, ctx, message=message)  # type: ignore[arg-type]
        if severity is None or finding.severity is Severity.INFO:  # informational: nothing at stake
            return finding
        return replace(finding, severity=severity)
