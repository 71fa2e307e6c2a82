"""Group requests into templates (shared structure) and conversations (sessions), automatically.

A **template** is named by the tools and the head (tools and system text) with volatile values
masked: two requests whose heads match at the start *or* at the end share a template, so a timestamp
at the top and retrieved text at the bottom both stay inside one template.

A **session** continues when a request repeats the previous request's message blocks and adds new
ones. Two rewrites are recognised instead of starting a new session: a **sliding window** (up to 16
of the oldest blocks dropped, the rest repeated) and an **edited history** (at least 60% of the
previous blocks still there, in order: old tool results truncated, a turn summarised). An explicit
session id in the log wins over all of this.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from hashlib import blake2b

from prefixlint.audit.classify import tool_names, volatile_spans
from prefixlint.model.layout import Section
from prefixlint.model.pieces import Piece

SLIDE_DEPTH = 16
EDIT_KEPT = 0.6
_DIGITS = re.compile(r"\d")
_SIG_CHARS = 256
_RANK = {"continuation": 3, "sliding-window": 2, "edited-history": 1}


@dataclass(slots=True)
class Request:
    """What the grouping keeps of one request (its pieces hold their text)."""

    pieces: list[Piece]
    blocks: list[bytes]  # digests of the message pieces, in order
    time: float
    head_end: int  # index of the first message piece (pieces before it are tools and system)
    stable_end: int  # index of the first piece of the last user turn
    template_end: int  # the head, extended to the last breakpoint before the last user turn
    tools: object = None
    params: dict[str, object] = field(default_factory=dict)
    breakpoints: tuple[int, ...] = ()  # token positions where cache_control breakpoints end


@dataclass(slots=True)
class Session:
    id: str
    template: str
    last: Request
    requests: int = 1


def head_end(pieces: list[Piece]) -> int:
    for i, p in enumerate(pieces):
        if p.section is Section.MESSAGES:
            return i
    return len(pieces)


def stable_end(pieces: list[Piece]) -> int:
    """Index of the first piece of the last user turn (the prefix an application means to keep)."""
    last_user = None
    for i in range(len(pieces) - 1, -1, -1):
        p = pieces[i]
        if p.role == "user" and p.section is Section.MESSAGES:
            last_user = p.message_index
            j = i
            while j > 0 and pieces[j - 1].message_index == last_user:
                j -= 1
            return j
    return len(pieces)


def template_end(pieces: list[Piece], head: int, stable: int) -> int:
    """The part a template keeps stable: the head, or up to the last ``cache_control`` before ``stable``."""
    for i in range(stable - 1, head - 1, -1):
        if pieces[i].ttl:
            return i + 1
    return head


def _mask(text: str) -> str:
    """``text`` with recognised per-request values as ``#`` and every digit as ``9``."""
    out, pos = [], 0
    for a, b in volatile_spans(text):
        out.append(text[pos:a])
        out.append("#")
        pos = b
    out.append(text[pos:])
    return _DIGITS.sub("9", "".join(out))


class Templates:
    """Template ids by masked head prefix or suffix (bounded)."""

    def __init__(self, max_templates: int = 2000) -> None:
        self.max_templates = max_templates
        self._by_sig: OrderedDict[bytes, str] = OrderedDict()

    def of(self, api: str, pieces: list[Piece], end: int, tools: object) -> str:
        names = ",".join(sorted(tool_names(tools)))
        texts = [p.text or "" for p in pieces[:end] if p.section is Section.SYSTEM]
        first = _mask(texts[0][: 2 * _SIG_CHARS])[:_SIG_CHARS] if texts else ""
        last = _mask(texts[-1][-2 * _SIG_CHARS :])[-_SIG_CHARS:] if texts else ""
        base = f"{api}\x00{names}\x00{end}\x00"
        sigs = [
            blake2b((base + "<" + first).encode("utf-8", "surrogatepass"), digest_size=8).digest(),
            blake2b((base + ">" + last).encode("utf-8", "surrogatepass"), digest_size=8).digest(),
        ]
        found = next((self._by_sig[s] for s in sigs if s in self._by_sig), None)
        tid = found or sigs[0].hex()
        for s in sigs:
            self._by_sig[s] = tid
            self._by_sig.move_to_end(s)
        while len(self._by_sig) > 2 * self.max_templates:
            self._by_sig.popitem(last=False)
        return tid


class Sessions:
    """Open sessions of one replay partition (bounded: the least recently used are closed)."""

    def __init__(self, max_sessions: int = 5000) -> None:
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._by_block: dict[bytes, str] = {}
        self._count = 0
        self.links: dict[str, int] = {"new": 0, "continuation": 0, "sliding-window": 0, "edited-history": 0}

    def match(self, req: Request, template: str, explicit: str | None) -> tuple[Session | None, str]:
        """The session ``req`` continues and how ("continuation", "sliding-window", "edited-history",
        "explicit"), or (None, "new")."""
        if explicit is not None:
            s = self._sessions.get(f"x:{explicit}")
            return (s, "explicit") if s is not None else (None, "new")
        best: tuple[int, int, Session, str] | None = None
        seen: set[str] = set()
        for block in req.blocks[:4]:
            sid = self._by_block.get(block)
            if sid is None or sid in seen:
                continue
            seen.add(sid)
            s = self._sessions.get(sid)
            if s is None or s.template != template:
                continue
            how = link(s.last.blocks, req.blocks)
            if how:
                score = (_RANK[how], len(s.last.blocks), s, how)
                if best is None or score[:2] > best[:2]:
                    best = score
        return (best[2], best[3]) if best is not None else (None, "new")

    def add(
        self, req: Request, template: str, session: Session | None, how: str, explicit: str | None
    ) -> Session:
        """Append ``req`` to ``session`` (or open a new one) and index its blocks."""
        self.links[how if how in self.links else "continuation"] += 1
        if session is None:
            self._count += 1
            sid = f"x:{explicit}" if explicit is not None else f"s{self._count}"
            session = Session(sid, template, req)
            self._sessions[sid] = session
        else:
            session.last = req
            session.requests += 1
        self._sessions.move_to_end(session.id)
        for b in req.blocks[: SLIDE_DEPTH + 4]:
            self._by_block[b] = session.id
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        if len(self._by_block) > 8 * self.max_sessions:
            live = self._sessions
            self._by_block = {b: s for b, s in self._by_block.items() if s in live}
        return session

    def close_idle(self, now: float, idle: float) -> None:
        """Forget sessions idle for longer than ``idle`` seconds (their cache entries are gone too)."""
        while self._sessions:
            sid, s = next(iter(self._sessions.items()))
            if s.last.time >= now - idle:
                break
            del self._sessions[sid]


def link(prev: list[bytes], cur: list[bytes]) -> str:
    """How message blocks ``cur`` continue ``prev``: "continuation", "sliding-window",
    "edited-history", or "" when they do not."""
    if not prev or not cur:
        return ""
    n = len(prev)
    if len(cur) >= n and cur[:n] == prev:
        return "continuation"
    for k in range(1, min(SLIDE_DEPTH, n - 1) + 1):
        rest = prev[k:]
        if len(cur) >= len(rest) and cur[: len(rest)] == rest:
            return "sliding-window"
    if cur[0] != prev[0] or n < 3:
        return ""
    kept = pos = 0
    for b in prev:  # blocks of prev found in cur, in order
        try:
            pos = cur.index(b, pos) + 1
        except ValueError:
            continue
        kept += 1
    return "edited-history" if kept >= EDIT_KEPT * n and len(cur) > kept else ""
