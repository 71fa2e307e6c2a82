"""Automatic Anthropic ``cache_control`` breakpoints.

At most the model's limit (4), 1h ones before 5m ones, only on stable blocks, and only where the
prefix up to the block reaches the model's minimum. Candidates, in prefix order: the last tool, the
last system block, the last stable block before the final user turn (history), and the last stable
block of the request. A request that already carries ``cache_control`` is left alone.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from prefixlint.model.layout import Section
from prefixlint.model.pieces import Piece
from prefixlint.model.providers import ModelCacheRules

_STEP = re.compile(r"([a-z_]+)(?:\[(\d+)\])?")


def has_cache_control(body: dict[str, Any], pieces: list[Piece]) -> bool:
    return "cache_control" in body or any(p.ttl for p in pieces)


def choose(pieces: list[Piece], rules: ModelCacheRules, static_ttl: str = "5m") -> list[tuple[int, str]]:
    """(piece index, ttl) of the breakpoints to add, in prefix order."""
    if rules.max_breakpoints <= 0 or not rules.supports_caching:
        return []
    stable = [i for i, p in enumerate(pieces) if p.stable]
    if not stable:
        return []
    last_tool = max(
        (i for i in stable if pieces[i].section is Section.TOOLS and pieces[i].path.startswith("tools[")),
        default=None,
    )
    last_sys = max((i for i in stable if pieces[i].section is Section.SYSTEM), default=None)
    last_user_msg = max(
        (p.message_index for p in pieces if p.role == "user" and p.message_index is not None), default=None
    )
    history = max(
        (
            i
            for i in stable
            if pieces[i].message_index is not None
            and last_user_msg is not None
            and pieces[i].message_index < last_user_msg
        ),
        default=None,
    )
    cands: list[tuple[int, str]] = []
    for idx, ttl in ((last_tool, static_ttl), (last_sys, static_ttl), (history, "5m"), (stable[-1], "5m")):
        if idx is None or any(idx == c for c, _ in cands):
            continue
        if pieces[idx].end >= rules.min_cacheable_tokens:
            cands.append((idx, ttl))
    cands.sort()
    # 1h entries must precede 5m ones: a 1h candidate after a 5m one becomes 5m.
    seen_5m = False
    ordered = []
    for idx, ttl in cands:
        if ttl == "5m":
            seen_5m = True
        ordered.append((idx, "5m" if seen_5m else ttl))
    return ordered[-rules.max_breakpoints :]


def _control(ttl: str) -> dict[str, str]:
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}


def _mark(container: Any, steps: list[tuple[str, int | None]], cc: dict[str, str]) -> Any:
    """A copy of ``container`` with ``cc`` on the block at ``steps`` (copies only along the path)."""
    (name, idx), rest = steps[0], steps[1:]
    node = dict(container)
    val = node[name]
    if idx is None:
        if rest:
            node[name] = _mark(val, rest, cc)
        elif isinstance(val, str):
            node[name] = [{"type": "text", "text": val, "cache_control": cc}]
        return node
    items = list(val)
    if rest:
        items[idx] = _mark(items[idx], rest, cc)
    else:
        item = items[idx]
        items[idx] = (
            {"type": "text", "text": item, "cache_control": cc}
            if isinstance(item, str)
            else {**item, "cache_control": cc}
        )
    node[name] = items
    return node


def apply(body: dict[str, Any], pieces: list[Piece], marks: list[tuple[int, str]]) -> dict[str, Any]:
    """``body`` with ``cache_control`` added at ``marks``; sets the pieces' ttl."""
    out = body
    for idx, ttl in marks:
        steps = [
            (m.group(1), int(m.group(2)) if m.group(2) is not None else None)
            for m in _STEP.finditer(pieces[idx].path)
        ]
        out = _mark(out, steps, _control(ttl))
        pieces[idx] = replace(pieces[idx], ttl=ttl)  # pieces may be shared with a cached snapshot
    return out
