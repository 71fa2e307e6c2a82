"""Entry points of installed distributions, read from their ``entry_points.txt`` files.

``importlib.metadata.entry_points`` imports some 30 modules and reads every distribution's metadata:
about 60 ms, paid twice by every ``check`` (the plugins are part of the lint cache key, and each
worker loads them). Only ``entry_points.txt`` matters here, so this reads that file in each
``*.dist-info`` and ``*.egg-info`` folder on ``sys.path``; as in importlib.metadata, the first
distribution of a (normalized) name wins and later copies of it are ignored.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

_INFO_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class EntryPoint:
    """One ``name = module:attr`` line of a group, with the distribution that declares it."""

    name: str
    value: str
    group: str
    dist: str  # ``name==version`` of the distribution, from its metadata
    folder: str

    def load(self) -> Any:
        """The object the entry point names (``module`` or ``module:attr.attr``), imported."""
        module, _, attrs = self.value.partition(":")
        obj = importlib.import_module(module.strip())
        for attr in attrs.split("[", 1)[0].strip().split("."):
            if attr:
                obj = getattr(obj, attr)
        return obj


def entry_points(group: str) -> list[EntryPoint]:
    """Every entry point of ``group`` declared by a distribution on ``sys.path``, in path order."""
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:  # not a folder (a zip file), or gone
            continue
        for name in names:
            if not name.lower().endswith(_INFO_SUFFIXES):
                continue
            key = _normalize(name.rsplit(".", 1)[0].split("-", 1)[0])
            if key in seen:
                continue
            seen.add(key)
            folder = os.path.join(entry or ".", name)
            try:
                with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            if f"[{group}]" in text:
                found.extend(_parse(text, group, folder))
    return found


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _parse(text: str, group: str, folder: str) -> list[EntryPoint]:
    """The entries of ``[group]`` in an ``entry_points.txt`` (INI: sections, ``name = value``)."""
    out: list[EntryPoint] = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == group and "=" in line:
            name, value = line.split("=", 1)
            out.append(EntryPoint(name.strip(), value.strip(), group, _dist(folder), folder))
    return out


def _dist(folder: str) -> str:
    """``name==version`` from the folder's ``METADATA`` (``PKG-INFO`` for an egg), else its name."""
    fields: dict[str, str] = {}
    for meta in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, meta), encoding="utf-8") as fh:
                for line in fh:
                    if not line.strip():
                        break  # the headers end at the first blank line
                    key, _, value = line.partition(":")
                    if key in ("Name", "Version") and key not in fields:
                        fields[key] = value.strip()
        except OSError:
            continue
        break
    stem = os.path.basename(folder).rsplit(".", 1)[0]
    return f"{fields.get('Name', stem)}=={fields.get('Version', '')}"
