"""SDK objects in a request as the plain dicts they are sent as.

Applications append what a client returned to their history: Anthropic content blocks
(``{"role": "assistant", "content": resp.content}``), OpenAI ``ChatCompletionMessage`` objects.
The clients serialize such pydantic models themselves; the wrapper turns them into the same dicts
first (``model_dump(exclude_unset=True, mode="json", by_alias=True)``, as the clients do), so that
breakpoints, volatile values and pieces see one shape. Only the path to a model is copied; a
request without models comes back as the same object.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_KEYS = ("messages", "input", "system", "tools")


def dump_model(model: BaseModel) -> dict[str, Any]:
    """A pydantic model as its client sends it in a request body."""
    exclude = getattr(model, "__api_exclude__", None)
    return model.model_dump(exclude_unset=True, mode="json", by_alias=True, exclude=exclude)


def plain(obj: Any) -> Any:
    """``obj`` with every pydantic model inside turned into a dict (``obj`` itself when there is none)."""
    kind = type(obj)
    if kind is str or obj is None:
        return obj
    if kind is dict:
        out = None
        for k, v in obj.items():
            p = plain(v)
            if p is not v:
                if out is None:
                    out = dict(obj)
                out[k] = p
        return obj if out is None else out
    if kind is list or kind is tuple:
        items = list(map(plain, obj))
        if kind is list and all(map(_same, items, obj)):
            return obj
        return items
    if isinstance(obj, BaseModel):
        return plain(dump_model(obj))
    return obj


def _same(a: Any, b: Any) -> bool:
    return a is b


def _all_plain_messages(msgs: Any) -> bool:
    """True when every message is a dict whose content is a string (checked in C)."""
    if type(msgs) is not list:
        return False
    if set(map(type, msgs)) - {dict}:
        return False
    contents = map(dict.get, msgs, ("content",) * len(msgs))
    return not (set(map(type, contents)) - {str, type(None)}) and not any(
        map(dict.get, msgs, ("tool_calls",) * len(msgs))
    )


def plain_request(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the SDK objects in its messages, system blocks and tools as plain dicts."""
    out = body
    for key in _KEYS:
        val = body.get(key)
        if val is None or type(val) is str:
            continue
        if key in ("messages", "input") and _all_plain_messages(val):
            continue
        new = plain(val)
        if new is not val:
            if out is body:
                out = dict(body)
            out[key] = new
    return out
