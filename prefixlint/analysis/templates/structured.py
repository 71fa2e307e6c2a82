"""Prompt templates kept under a key of a YAML or TOML file, and where their text starts in it.

``yaml.safe_load(f)["agent"]["system"]`` and ``tomllib.load(f)["pr_review"]["system"]`` are
template text read from a file. :func:`keyed_value` returns that text and the line and column its
first character sits at, so placeholders found in it are reported on the file's own lines. A YAML
literal block (``|``) keeps its lines; a folded block (``>``) is read as its lines are written (the
model sees a space where the file has a newline, the same text for the cache).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class KeyedText:
    """The string under a key path, and where it starts (0-based line, column) in the file."""

    text: str
    line: int
    col: int
    indent: int = 0  # columns each later line lost (a YAML block scalar is dedented)


def keyed_value(text: str, keys: Sequence[str | int], kind: str) -> KeyedText | None:
    """The string at ``keys`` in a YAML (``kind="yaml"``) or TOML (``"toml"``) document, or None."""
    try:
        if kind == "yaml":
            return _yaml_value(text, keys)
        if kind == "toml":
            return _toml_value(text, keys)
    except Exception:  # a file that does not parse is not a template we can read
        return None
    return None


def _yaml_value(text: str, keys: Sequence[str | int]) -> KeyedText | None:
    import yaml

    node = yaml.compose(text, Loader=yaml.SafeLoader)
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
        elif (
            isinstance(node, yaml.SequenceNode)
            and isinstance(key, int)
            and -len(node.value) <= key < len(node.value)
        ):
            node = node.value[key]
        else:
            return None
        if node is None:
            return None
    return yaml_scalar_text(node, text)


def yaml_scalar_text(node: object, text: str) -> KeyedText | None:
    """The string a composed YAML scalar ``node`` of the document ``text`` holds, and where it starts."""
    import yaml

    if not isinstance(node, yaml.ScalarNode) or not isinstance(node.value, str):
        return None
    mark = node.start_mark
    if node.style in ("|", ">"):
        # the content starts on the line after the indicator (a leading blank line is part of it), at
        # the indentation of its first non-blank line
        lines = text.split("\n")
        first = line = mark.line + 1
        while line < len(lines) and not lines[line].strip():
            line += 1
        col = len(lines[line]) - len(lines[line].lstrip(" ")) if line < len(lines) else 0
        if node.style == ">":
            # a folded block joins its lines with spaces; its lines as written keep each placeholder
            # on its own line in the file (a space or a newline: the same text to the model)
            end = node.end_mark.line + (1 if node.end_mark.column else 0)
            return KeyedText(_unfolded(lines[first:end], col, node.value), first, col, col)
        return KeyedText(node.value, first, col, col)
    quote = 1 if node.style in ("'", '"') else 0
    return KeyedText(node.value, mark.line, mark.column + quote)


def _unfolded(lines: list[str], indent: int, value: str) -> str:
    """The lines of a folded block scalar as written, less its indentation, with its final newline."""
    body = []
    for ln in lines:
        if ln.strip() and len(ln) - len(ln.lstrip(" ")) < indent:
            break  # the next key: the block ended
        body.append(ln[indent:] if ln.strip() else "")
    while body and not body[-1]:
        body.pop()
    return "\n".join(body) + ("\n" if value.endswith("\n") else "")


def _toml_value(text: str, keys: Sequence[str | int]) -> KeyedText | None:
    import tomllib

    value: object = tomllib.loads(text)
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    if not isinstance(value, str) or not keys or not isinstance(keys[-1], str):
        return None
    start = _toml_table_start(text, [str(k) for k in keys[:-1]])
    key_line = re.compile(
        rf"^[ \t]*(?:\"{re.escape(keys[-1])}\"|'{re.escape(keys[-1])}'|{re.escape(keys[-1])})[ \t]*=[ \t]*",
        re.M,
    )
    m = key_line.search(text, start)
    if m is None:
        return None
    at = m.end()
    for quote in ('"""', "'''"):
        if text.startswith(quote, at):
            at += 3
            if text.startswith("\n", at):
                at += 1
            break
    else:
        if text[at : at + 1] in ('"', "'"):
            at += 1
    line = text.count("\n", 0, at)
    col = at - (text.rfind("\n", 0, at) + 1)
    return KeyedText(value, line, col)


def _toml_table_start(text: str, tables: list[str]) -> int:
    """Offset just after the ``[a.b]`` header of the table path ``tables`` (0 for the top level)."""
    if not tables:
        return 0
    parts = r"[ \t]*\.[ \t]*".join(rf"(?:\"{re.escape(t)}\"|'{re.escape(t)}'|{re.escape(t)})" for t in tables)
    m = re.search(rf"^[ \t]*\[[ \t]*{parts}[ \t]*\][ \t]*(?:#.*)?$", text, re.M)
    return m.end() if m else 0
