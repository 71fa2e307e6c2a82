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
from collections.abc import Callable
from dataclasses import dataclass, field
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


@dataclass
class Fixed:
    """The fixed request, the head texts with their recognised values cut (what the next request
    of the template is compared with), and the moved context: its text and estimated tokens."""

    body: dict[str, Any]
    heads: dict[str, str] = field(default_factory=dict)
    context: str | None = None
    context_tokens: int = 0


def fixed_request(
    body: dict[str, Any],
    api: str,
    pieces: list[Piece],
    previous_heads: dict[str, str] | None,
    add_breakpoints: bool,
    spans_of: Callable[[Piece], list[tuple[int, int]]] = lambda p: volatile_spans(p.text or ""),
) -> Fixed:
    """The fixed form of ``body``. In each head text the recognised values (``spans_of``) are cut
    first; what then still differs from the previous request of the template (``previous_heads``,
    the :attr:`Fixed.heads` of that request) is cut too, so two separate changes (a timestamp at the
    top, retrieved text at the end) never take the static text between them along.
    ``add_breakpoints``: the request has no ``cache_control`` and the provider caches at breakpoints.
    ``Fixed.body`` is ``body`` itself when nothing changes."""
    out = body
    fixed = Fixed(body)
    moved: list[str] = []
    moved_tokens = 0.0
    for p in pieces:
        if p.section is Section.MESSAGES:
            break
        if p.section is not Section.SYSTEM or not p.text:
            continue
        text = p.text
        first, cut = _cut(text, spans_of(p)) if spans_of(p) else (text, [])
        fixed.heads[p.path] = first
        before = (previous_heads or {}).get(p.path)
        kept = first
        if before is not None and before != first:
            start, end, _ = differing_span(first, before)
            if end > start:
                kept, more = _cut(first, [(start, end)])
                cut = cut + more
        if not cut:
            continue
        replaced = _replace_at(out, _path_keys(p.path), kept)
        if replaced is not None:
            out = replaced
            moved.extend(cut)
            moved_tokens += p.tokens * (1 - len(kept) / len(text))
    tools = out.get("tools")
    if isinstance(tools, list):
        ordered = _sorted_tools(tools)
        if ordered is not tools:
            out = {**out, "tools": ordered}
    if moved:
        fixed.context = CONTEXT_HEADER + "\n" + "\n".join(moved)
        fixed.context_tokens = round(moved_tokens) + 4
        context = {"role": "user", "content": fixed.context}
        key = "input" if api == "responses" else "messages"
        msgs = out.get(key)
        if isinstance(msgs, str):
            msgs = [{"role": "user", "content": msgs}]
        out = {**out, key: [*(msgs or []), context]}
    if add_breakpoints and api == "messages":
        out = _with_system_breakpoint(out)
    fixed.body = out
    return fixed
