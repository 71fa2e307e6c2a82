"""The catalog of dynamic calls and names, loaded from ``data/catalog.toml`` plus config and plugins."""

from __future__ import annotations

import fnmatch
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from prefixlint.model.layout import DynamicKind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class Catalog:
    """Call globs and name words that mark a value as dynamic, by kind."""

    calls: dict[DynamicKind, list[str]] = field(default_factory=dict)
    names: dict[DynamicKind, set[str]] = field(default_factory=dict)
    name_regexes: list[tuple[re.Pattern[str], DynamicKind]] = field(default_factory=list)
    prompt_name_patterns: list[str] = field(default_factory=list)
    # answers already given (the same few names are asked about in every file)
    _calls_seen: dict[str, DynamicKind | None] = field(default_factory=dict, repr=False, compare=False)
    _prompt_names_seen: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)
    _prompt_regex: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    def classify_call(self, dotted: str) -> DynamicKind | None:
        """The kind of value a call such as ``datetime.now`` or ``store.similarity_search`` yields."""
        if not dotted:
            return None
        seen = self._calls_seen
        if dotted not in seen:
            if len(seen) > 50_000:
                seen.clear()
            seen[dotted] = self._classify_call(dotted)
        return seen[dotted]

    def _classify_call(self, dotted: str) -> DynamicKind | None:
        for kind, patterns in self.calls.items():
            for pattern in patterns:
                if fnmatch.fnmatchcase(dotted, pattern):
                    return kind
                # ``from datetime import datetime; datetime.now`` and ``dt.datetime.now`` both match.
                if "." in pattern and not pattern.startswith("*") and dotted.endswith("." + pattern):
                    return kind
        return None

    def classify_name(self, name: str) -> tuple[DynamicKind | None, float]:
        """Kind and confidence for a variable/placeholder name such as ``current_date`` or ``docs``.

        An exact word match gives 0.9; a match on one ``_``-separated word of a longer name gives 0.6
        (``user_docs`` -> retrieved context). Returns ``(None, 0.0)`` for names that say nothing.
        """
        last = name.rsplit(".", 1)[-1].strip("_").lower()
        if not last:
            return None, 0.0
        for regex, kind in self.name_regexes:
            if regex.fullmatch(last):
                return kind, 0.8
        for kind, words in self.names.items():
            if last in words:
                return kind, 0.9
        parts = [p for p in re.split(r"_+", last) if p]
        for kind in (
            DynamicKind.TIMESTAMP,
            DynamicKind.IDENTIFIER,
            DynamicKind.USER_IDENTITY,
            DynamicKind.RETRIEVED_CONTEXT,
            DynamicKind.MEMORY,
            DynamicKind.HISTORY,
        ):
            words = self.names.get(kind, set())
            for i in range(len(parts)):
                for j in range(len(parts), i, -1):
                    if (i, j) != (0, len(parts)) and "_".join(parts[i:j]) in words and j - i >= 1:
                        if len(parts[i:j]) == 1 and parts[i] in _WEAK_WORDS:
                            continue
                        return kind, 0.6
        return None, 0.0

    def is_prompt_name(self, name: str) -> bool:
        """True when a name says it holds a prompt (``SYSTEM_PROMPT``, ``agent_instructions``...)."""
        last = name.rsplit(".", 1)[-1].lower()
        seen = self._prompt_names_seen
        if last not in seen:
            if len(seen) > 50_000:
                seen.clear()
            seen[last] = self._prompt_name_regex().match(last) is not None
        return seen[last]

    def _prompt_name_regex(self) -> re.Pattern[str]:
        """The prompt-name globs as one regular expression (what ``fnmatchcase`` would match)."""
        if self._prompt_regex is None:
            globs = "|".join(fnmatch.translate(p) for p in self.prompt_name_patterns)
            self._prompt_regex = re.compile(globs or r"(?!)")
        return self._prompt_regex

    def extended(
        self, extra_calls: dict[DynamicKind, list[str]], extra_names: list[tuple[str, DynamicKind]]
    ) -> Catalog:
        """A copy with project or plugin entries added."""
        calls = {k: list(v) for k, v in self.calls.items()}
        for kind, pats in extra_calls.items():
            calls.setdefault(kind, []).extend(pats)
        regexes = list(self.name_regexes) + [(re.compile(p, re.I), k) for p, k in extra_names]
        return Catalog(
            calls=calls,
            names=self.names,
            name_regexes=regexes,
            prompt_name_patterns=self.prompt_name_patterns,
        )


# Words too common to classify a longer name on their own (``run_name``, ``tool_output_format``).
_WEAK_WORDS = {"name", "date", "time", "output", "input", "text", "message", "content", "state", "host"}


@cache
def builtin_catalog() -> Catalog:
    """The catalog shipped in ``data/catalog.toml``."""
    raw = tomllib.loads(resources.files("prefixlint.model.data").joinpath("catalog.toml").read_text("utf-8"))
    calls = {DynamicKind(k): list(v) for k, v in raw["calls"].items()}
    names = {DynamicKind(k): set(v) for k, v in raw["names"].items()}
    return Catalog(calls=calls, names=names, prompt_name_patterns=list(raw["prompt_names"]["patterns"]))


def catalog_for(settings: object | None = None) -> Catalog:
    """The built-in catalog extended with ``dynamic-sources`` from settings and plugin entries.

    One catalog per distinct set of sources, so its remembered answers serve every file.
    """
    sources = tuple(
        (src.pattern, src.kind, src.match) for src in getattr(settings, "dynamic_sources", None) or ()
    )
    got = _CATALOGS.get(sources)
    if got is None:
        if len(_CATALOGS) > 32:
            _CATALOGS.clear()
        got = _CATALOGS[sources] = _build_catalog(sources)
    return got


_CATALOGS: dict[tuple[tuple[str, str, str], ...], Catalog] = {}


def _build_catalog(sources: tuple[tuple[str, str, str], ...]) -> Catalog:
    base = builtin_catalog()
    from prefixlint.plugins import load_plugins

    extra_calls: dict[DynamicKind, list[str]] = {}
    extra_names: list[tuple[str, DynamicKind]] = []
    for plugin in load_plugins():
        for kind, pats in plugin.dynamic_calls.items():
            extra_calls.setdefault(DynamicKind(kind), []).extend(pats)
    for pattern, kind_name, match in sources:
        kind = DynamicKind(kind_name)
        if match == "call":
            extra_calls.setdefault(kind, []).append(pattern)
        else:
            extra_names.append((pattern, kind))
    if not extra_calls and not extra_names:
        return base
    return base.extended(extra_calls, extra_names)
