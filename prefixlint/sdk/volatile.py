"""Volatile values: per-request text that must sit behind the static prefix.

Two ways to mark them:

* wrap the value: ``volatile(f"Today is {date}", name="date")`` anywhere in the system prompt,
  instructions or earlier messages (as a whole content string or as a text part);
* pass them per call: ``create(..., prefixlint_volatile={"date": today, "request_id": rid})``.

The wrapper removes marked values from where they are and appends them, in order, as one text part
at the end of the last user message (``volatile_placement="last_user"``) or as a trailing user
message (``"trailing_message"``). Everything before that stays byte-identical between requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import repeat
from typing import Any

from prefixlint.analysis.payloads.markers import VolatileText, is_volatile


def volatile(value: object, name: str = "value") -> VolatileText:
    """Mark ``value`` as changing on every request (a plain ``str`` to everything else)."""
    return VolatileText(value, name)


def has_volatile(body: dict[str, Any], api: str) -> bool:
    """True when a marked value sits anywhere in the system prompt, instructions or messages."""
    for key in ("system", "instructions"):
        val = body.get(key)
        if isinstance(val, VolatileText) or (isinstance(val, list) and any(is_volatile(p) for p in val)):
            return True
    msgs = body.get("input" if api == "responses" else "messages")
    if isinstance(msgs, VolatileText):
        return True
    if isinstance(msgs, list):
        try:  # the common case, checked in C: every message is a dict whose content is a plain str
            if set(map(type, map(dict.get, msgs, repeat("content", len(msgs))))) <= {str}:
                return False
        except TypeError:  # a message that is not a dict
            pass
        for m in msgs:
            if type(m) is dict:
                c = m.get("content")
                if type(c) is str:  # the common case: plain text (a VolatileText is a subclass)
                    continue
            elif isinstance(m, dict):
                c = m.get("content")
            else:
                continue
            if isinstance(c, VolatileText) or (isinstance(c, list) and any(is_volatile(p) for p in c)):
                return True
    return False


def _strip(content: Any, found: list[VolatileText]) -> tuple[Any, bool]:
    """Content without volatile parts; (new content, changed)."""
    if isinstance(content, VolatileText):
        found.append(content)
        return None, True
    if isinstance(content, list):
        keep = []
        for part in content:
            if isinstance(part, VolatileText):
                found.append(part)
            elif is_volatile(part):
                found.append(part["text"])
            else:
                keep.append(part)
        if len(keep) != len(content):
            return keep, True
    return content, False


def _render(items: list[tuple[str, str]], header: str) -> VolatileText:
    lines = [header] if header else []
    lines.extend(text if name is None else f"{name}: {text}" for name, text in items)  # type: ignore[comparison-overlap]
    return VolatileText("\n".join(lines), "+".join(n or "value" for n, _ in items))


def _text_part(api: str, text: str) -> dict[str, Any]:
    return {"type": "input_text" if api == "responses" else "text", "text": text}


def move_volatile(
    body: dict[str, Any],
    api: str,
    per_call: Mapping[str, Any] | None,
    placement: str = "last_user",
    header: str = "Request context:",
) -> tuple[dict[str, Any], list[str]]:
    """Move marked values behind the static prefix; returns (body copy, changes)."""
    found: list[VolatileText] = []
    out = dict(body)
    changes: list[str] = []
    key = "input" if api == "responses" else "messages"
    msgs = out.get(key)
    if isinstance(msgs, str):
        msgs = [{"role": "user", "content": msgs}]
    msgs = list(msgs) if isinstance(msgs, list) else []
    last_user = max(
        (i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "user"), default=None
    )
    for skey in ("system", "instructions"):
        if skey in out:
            new, changed = _strip(out[skey], found)
            if changed:
                changes.append(f"{skey}: moved volatile value(s) to the end")
                if new is None or new == []:
                    del out[skey]
                else:
                    out[skey] = new
    new_msgs = []
    for i, msg in enumerate(msgs):
        if isinstance(msg, dict) and "content" in msg and i != last_user:
            new, changed = _strip(msg["content"], found)
            if changed:
                changes.append(f"{key}[{i}]: moved volatile value(s) to the end")
                if new is None or new == []:
                    continue
                msg = {**msg, "content": new}
        new_msgs.append(msg)
    items: list[tuple[Any, str]] = [(None, str(v)) for v in found]
    for name, value in (per_call or {}).items():
        if isinstance(value, (list, tuple)):
            items.extend((f"{name}[{j}]", str(v)) for j, v in enumerate(value))
        else:
            items.append((name, str(value)))
    if not items:
        return body, []
    block = _render(items, header)
    last_user = max(
        (i for i, m in enumerate(new_msgs) if isinstance(m, dict) and m.get("role") == "user"), default=None
    )
    if placement == "last_user" and last_user is not None:
        msg = new_msgs[last_user]
        content = msg.get("content")
        if isinstance(content, str):
            content = [_text_part(api, content)]
        content = [*(content or []), _text_part(api, block)]
        new_msgs[last_user] = {**msg, "content": content}
        changes.append(f"{key}[{last_user}]: volatile values appended to the last user message")
    else:
        new_msgs.append({"role": "user", "content": [_text_part(api, block)]})
        changes.append(f"{key}: volatile values sent as a trailing message")
    out[key] = new_msgs
    return out, changes
