"""The counterfactual "fixed" request: what the log would have sent with a cache-friendly layout.

In the head (tools and system text, before the first message), volatile spans are cut out and
appended as a trailing ``Request context:`` user message (where the SDK puts marked values). A span is
volatile when it looks like a per-request value (a timestamp, an id) or when it is the part of a head
text that differs from the previous request of the same template. Tools are sorted by name. An
Anthropic request with no ``cache_control`` gets a breakpoint on its system prompt and automatic
caching. The request is otherwise unchanged, and the same object comes back when nothing applies.
"""

from __future__ import annotations

import json
import re
from typing import Any

from prefixlint.audit.classify import differing_span, tool_names, volatile_spans
from prefixlint.model.layout import Section
from prefixlint.model.pieces import Piece

_PATH = re.compile(r"([A-Za-z_]+)|\[(\d+)\]")
CONTEXT_HEADER = "Request context:"


def _path_keys(path: str) -> list[str | int]:
    return [name if name else int(idx) for name, idx in _PATH.findall(path)]


def _replace_at(body: dict[str, Any], keys: list[str | int], text: str) -> dict[str, Any] | None:
    """A copy of ``body`` with the text at ``keys`` replaced (containers copied along the way)."""

    def walk(node: Any, i: int) -> Any:
        if i == len(keys):
            if isinstance(node, str):
                return text
            if isinstance(node, dict) and isinstance(node.get("text"), str):
                return {**node, "text": text}
            raise LookupError
        k = keys[i]
        if isinstance(k, int):
            if not isinstance(node, list) or k >= len(node):
                raise LookupError
            out = list(node)
            out[k] = walk(node[k], i + 1)
            return out
        if not isinstance(node, dict) or k not in node:
            raise LookupError
        return {**node, k: walk(node[k], i + 1)}

    try:
        return walk(body, 0)  # type: ignore[no-any-return]
    except LookupError:
        return None


def _cut(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[str]]:
    spans = sorted(spans)
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    kept, cut, pos = [], [], 0
    for a, b in merged:
        kept.append(text[pos:a])
        cut.append(text[a:b])
        pos = b
    kept.append(text[pos:])
    return "".join(kept), [c for c in cut if c.strip()]


def _sorted_tools(tools: Any) -> Any:
    names = tool_names(tools)
    if not names or names == sorted(names) or len(names) != len(tools):
        return tools
    return sorted(tools, key=lambda t: (tool_names([t])[0], json.dumps(t, sort_keys=True, default=str)))


def _with_system_breakpoint(body: dict[str, Any]) -> dict[str, Any]:
    system = body.get("system")
    cc = {"type": "ephemeral"}
    if isinstance(system, str) and system:
        body = {**body, "system": [{"type": "text", "text": system, "cache_control": cc}]}
    elif isinstance(system, list) and system and isinstance(system[-1], dict):
        body = {**body, "system": [*system[:-1], {**system[-1], "cache_control": cc}]}
    return {**body, "cache_control": cc}


def fixed_request(
    body: dict[str, Any],
    api: str,
    pieces: list[Piece],
    previous_head: dict[str, str] | None,
    add_breakpoints: bool,
) -> dict[str, Any]:
    """The fixed form of ``body``; ``previous_head`` maps head piece paths to the text the previous
    request of the same template had there; ``add_breakpoints``: the request has no ``cache_control``
    and the provider caches at breakpoints. Returns ``body`` itself when nothing changes."""
    out = body
    moved: list[str] = []
    for p in pieces:
        if p.section is Section.MESSAGES:
            break
        if p.section is not Section.SYSTEM or not p.text:
            continue
        spans = volatile_spans(p.text)
        before = (previous_head or {}).get(p.path)
        if before is not None and before != p.text:
            start, _, end = differing_span(before, p.text)
            if end > start:
                spans.append((start, end))
        if not spans:
            continue
        kept, cut = _cut(p.text, spans)
        if not cut:
            continue
        replaced = _replace_at(out, _path_keys(p.path), kept)
        if replaced is not None:
            out = replaced
            moved.extend(cut)
    tools = out.get("tools")
    if isinstance(tools, list):
        ordered = _sorted_tools(tools)
        if ordered is not tools:
            out = {**out, "tools": ordered}
    if moved:
        context = {"role": "user", "content": CONTEXT_HEADER + "\n" + "\n".join(moved)}
        key = "input" if api == "responses" else "messages"
        msgs = out.get(key)
        if isinstance(msgs, str):
            msgs = [{"role": "user", "content": msgs}]
        out = {**out, key: [*(msgs or []), context]}
    if add_breakpoints and api == "messages":
        out = _with_system_breakpoint(out)
    return out
