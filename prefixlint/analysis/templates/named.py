"""Prompt templates a registry looks up by name: the top-level entries of the project's YAML files.

Many applications keep their prompts in YAML files (``summarise:`` with a ``template:`` under it),
load them all into a prompt store at start-up, and later ask for one by name with a dict of inputs
(``prompts.get("summarise", inputs={"doc": doc})``). Each top-level entry holding a string with
placeholders is a named template here: its name, where its text lies (file and key path), which
placeholders it has, and their style (``{x}`` is ``format``, ``{{ x }}`` is ``jinja``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from prefixlint.analysis.templates.files import _index
from prefixlint.analysis.templates.structured import KeyedText, yaml_scalar_text

_SUFFIXES = (".yaml", ".yml")
_MAX_BYTES = 512_000
_MAX_DEPTH = 3  # keys below a top-level entry searched for its template text
# ``${VAR}`` and ``${{ github.x }}`` (compose files, workflows) are not prompt placeholders
_FORMAT = re.compile(r"(?<![{$])\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
_JINJA = re.compile(r"(?<!\$)\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class NamedTemplate:
    """One template a registry can look up by ``name``."""

    name: str
    path: str
    keys: tuple[str, ...]  # key path of its text in the YAML document
    placeholders: frozenset[str]
    style: str  # "format" or "jinja"
    body: KeyedText  # its text, and where that starts in the file


def placeholders_of(text: str) -> tuple[frozenset[str], str]:
    """The placeholder names in ``text`` and their style (``format`` wins when ``{x}`` occurs)."""
    found = frozenset(_FORMAT.findall(text))
    if found:
        return found, "format"
    return frozenset(_JINJA.findall(text)), "jinja"


@lru_cache(maxsize=8)
def named_templates(root: str) -> tuple[NamedTemplate, ...]:
    """Every named template in the YAML files under ``root`` (skipping virtualenvs and build folders)."""
    out: list[NamedTemplate] = []
    for name, paths in sorted(_index(root).items()):
        if not name.endswith(_SUFFIXES):
            continue
        for path in paths:
            out.extend(_templates_in(path))
    return tuple(out)


def _templates_in(path: str) -> list[NamedTemplate]:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_BYTES + 1)
        if len(data) > _MAX_BYTES:
            return []
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if not _FORMAT.search(text) and not _JINJA.search(text):
        return []
    try:
        import yaml

        doc = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except Exception:  # not YAML we can read: no templates
        return []
    if not isinstance(doc, yaml.MappingNode):
        return []
    out: list[NamedTemplate] = []
    for key, value in doc.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        found = _first_template(value, (key.value,), 0, text)
        if found is not None:
            keys, body = found
            names, style = placeholders_of(body.text)
            out.append(NamedTemplate(key.value, path, keys, names, style, body))
    return out


def _first_template(
    node: object, keys: tuple[str, ...], depth: int, text: str
) -> tuple[tuple[str, ...], KeyedText] | None:
    """The key path and text of the first multi-line string with a placeholder at or under ``node``."""
    import yaml

    if isinstance(node, yaml.ScalarNode):
        value = node.value
        if isinstance(value, str) and "\n" in value.strip() and placeholders_of(value)[0]:
            body = yaml_scalar_text(node, text)
            return (keys, body) if body is not None else None
        return None
    if isinstance(node, yaml.MappingNode) and depth < _MAX_DEPTH:
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                found = _first_template(value, (*keys, key.value), depth + 1, text)
                if found is not None:
                    return found
    return None
