"""Canonicalization: stable JSON key order, stable tool order, text normalisation. All opt-in."""

from __future__ import annotations

import unicodedata
from typing import Any

from prefixlint.analysis.payloads.markers import VolatileText
from prefixlint.model.tools import tool_name

__all__ = ["canonicalize", "normalize_text", "sorted_json", "tool_name"]

_JSON_KEYS = ("response_format",)
_NESTED_JSON = (("text", "format"), ("output_config", "format"))


def sorted_json(obj: Any) -> Any:
    """A copy of ``obj`` whose dicts (at every depth) have their keys in sorted order."""
    if isinstance(obj, dict):
        return {k: sorted_json(obj[k]) for k in sorted(obj, key=str)}
    if isinstance(obj, list):
        return [sorted_json(v) for v in obj]
    return obj


def normalize_text(text: str, newlines: bool, trailing: bool, nfc: bool) -> str:
    """CRLF to LF, trailing whitespace per line removed, Unicode NFC, as asked."""
    out = text
    if newlines and "\r" in out:
        out = out.replace("\r\n", "\n")
    if trailing:
        out = "\n".join(line.rstrip() for line in out.split("\n"))
    if nfc and not out.isascii():
        out = unicodedata.normalize("NFC", out)
    if isinstance(text, VolatileText) and out is not text:
        return VolatileText(out, text.name)
    return out


def _normalize_content(content: Any, n: tuple[bool, bool, bool]) -> Any:
    if isinstance(content, str):
        return normalize_text(content, *n)
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                part = {**part, "text": normalize_text(part["text"], *n)}
            out.append(part)
        return out
    return content


def canonicalize(body: dict[str, Any], api: str, opts: Any) -> tuple[dict[str, Any], list[str]]:
    """Apply the opted-in canonicalization to ``body`` (a shallow copy is returned) and list changes."""
    changes: list[str] = []
    out = dict(body)
    tools = out.get("tools")
    if isinstance(tools, list) and tools:
        new = tools
        keys_moved = False
        if opts.sort_keys:
            new = [sorted_json(t) for t in tools]
            keys_moved = repr(new) != repr(tools)  # at any depth; dict equality ignores key order
        if opts.sort_tools:
            new = sorted(new, key=tool_name)
        if new != tools:  # equal dicts in another order: the tools moved
            changes.append("tools: canonical order")
        if keys_moved:
            changes.append("tools: sorted keys")
        out["tools"] = new
    if opts.sort_keys:
        for key in _JSON_KEYS:
            if isinstance(out.get(key), dict):
                new = sorted_json(out[key])
                if repr(new) != repr(out[key]):
                    changes.append(f"{key}: sorted keys")
                out[key] = new
        for key, sub in _NESTED_JSON:
            val = out.get(key)
            if isinstance(val, dict) and isinstance(val.get(sub), dict):
                new = sorted_json(val[sub])
                if repr(new) != repr(val[sub]):
                    changes.append(f"{key}.{sub}: sorted keys")
                out[key] = {**val, sub: new}
    n = (opts.normalize_newlines, opts.strip_trailing_whitespace, opts.unicode_nfc)
    if any(n):
        for key in ("system", "instructions"):
            if key in out:
                new = _normalize_content(out[key], n)
                if new != out[key]:
                    changes.append(f"{key}: normalized text")
                out[key] = new
        key = "input" if api == "responses" else "messages"
        msgs = out.get(key)
        if isinstance(msgs, str):
            out[key] = _normalize_content(msgs, n)
            if out[key] != msgs:
                changes.append(f"{key}: normalized text")
        elif isinstance(msgs, list):
            new_msgs = []
            for msg in msgs:
                if isinstance(msg, dict) and "content" in msg:
                    c = _normalize_content(msg["content"], n)
                    if c != msg["content"]:
                        msg = {**msg, "content": c}
                new_msgs.append(msg)
            if new_msgs != msgs:
                changes.append(f"{key}: normalized text")
            out[key] = new_msgs
    return out, changes
