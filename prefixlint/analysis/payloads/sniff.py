"""A cheap look at the first keys of a JSON or JSON Lines file: is it a provider request?

A directory walk meets many JSON files (package manifests, fixtures, data). Each is read only up to
:data:`SNIFF_BYTES`, and only its top-level keys are looked at, so an unrelated file costs one short
read. A file is a request when those keys show a request shape:

- ``messages`` holding a list (OpenAI chat, Anthropic messages);
- ``input`` or ``instructions`` next to ``model`` (OpenAI responses);
- ``tools`` or ``system`` next to ``model`` (a body whose messages come after a long tools list);
- ``custom_id`` with ``body`` or ``params`` (a line of an OpenAI or Anthropic batch file).

JSON Lines files are judged by their first line.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring

SNIFF_BYTES = 8192
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
JSONL_SUFFIXES = (".jsonl", ".ndjson")

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\r\n]*")


def top_level_keys(head: str) -> dict[str, str]:
    """The keys of the top-level object seen in ``head``, each with the first character of its value.

    Keys are read with :func:`json.decoder.scanstring` and each value is skipped whole with the C
    decoder, so a long nested value costs no Python loop. The scan stops at the end of that object
    (so a JSON Lines file gives its first line's keys) or where ``head`` cuts a key or a value off.
    """
    pos = _WS.match(head, 1 if head.startswith("\ufeff") else 0).end()
    if head[pos : pos + 1] != "{":
        return {}
    keys: dict[str, str] = {}
    skip = _DECODER.raw_decode
    pos += 1
    try:
        while True:
            pos = _WS.match(head, pos).end()
            if head[pos : pos + 1] != '"':
                return keys
            key, pos = scanstring(head, pos + 1)
            pos = _WS.match(head, pos).end()
            if head[pos : pos + 1] != ":":
                return keys
            pos = _WS.match(head, pos + 1).end()
            keys[key] = head[pos : pos + 1]
            _, pos = skip(head, pos)
            pos = _WS.match(head, pos).end()
            if head[pos : pos + 1] != ",":
                return keys
            pos += 1
    except ValueError:  # cut off by the end of the head
        return keys


def is_request_head(keys: dict[str, str]) -> bool:
    """True when a request body (or a batch line holding one) starts with these top-level keys."""
    if keys.get("messages") == "[":
        return True
    if "model" in keys and (
        keys.get("input") in ('"', "[")
        or keys.get("instructions") == '"'
        or keys.get("tools") == "["
        or keys.get("system") in ('"', "[")
    ):
        return True
    return "custom_id" in keys and (keys.get("body") == "{" or keys.get("params") == "{")


# A request head names at least one of these keys; a file without any of them needs no parsing.
_MARKS = re.compile(rb'"(?:messages|input|instructions|tools|system|custom_id)"')


def sniff_request(head: bytes) -> bool:
    """True when the first bytes of a JSON or JSON Lines file show a request shape."""
    if _MARKS.search(head) is None:
        return False
    return is_request_head(top_level_keys(head.decode("utf-8", errors="ignore")))


def looks_like_request_file(path: str) -> bool:
    """Read the first :data:`SNIFF_BYTES` of ``path`` and sniff them; False when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    return sniff_request(head)
