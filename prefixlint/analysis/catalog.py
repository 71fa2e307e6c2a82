"""The catalog of dynamic calls and names, loaded from ``data/catalog.toml`` plus config and plugins.

Besides the kind of a call or a name, it holds what the code can tell about a value's cost: the
granularity of time values (by call and name), the cardinality of values (by name and call), the
objects whose methods return dynamic values (retrievers, vector stores), and the names, calls and
types of configuration read once at start-up (process values).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import cache
from typing import TypeVar

from prefixlint.model.data import data_toml
from prefixlint.model.layout import Cardinality, DynamicKind, Granularity

_V = TypeVar("_V")


_GLOB = re.compile(r"[*?\[]")
# Attribute names that name their owner: ``x.name`` is whatever ``x`` is the name of.
_OWNER_WORDS = frozenset({"name"})
# Bounds of the remembered answers: a long-lived process (an editor, the SDK) must not grow without
# bound. A full table is wiped, not trimmed: the same few names come back in every file.
MAX_ANSWERS = 50_000  # per catalog, for calls and for prompt names
MAX_CATALOGS = 32  # catalogs kept, one per distinct set of configured sources


def call_matches(dotted: str, pattern: str) -> bool:
    """True when the dotted call name matches a catalog glob.

    ``from datetime import datetime; datetime.now`` and ``dt.datetime.now`` both match ``datetime.now``.
    Most catalog entries are plain names or ``*.name``: those are compared as strings, so a run does
    not compile a regular expression for each of the hundreds of entries (as ``fnmatch`` would).
    """
    if pattern.startswith("*"):
        rest = pattern[1:]
        return dotted.endswith(rest) if not _GLOB.search(rest) else fnmatch.fnmatchcase(dotted, pattern)
    if dotted == pattern or ("." in pattern and dotted.endswith("." + pattern)):
        return True
    return _GLOB.search(pattern) is not None and fnmatch.fnmatchcase(dotted, pattern)


@dataclass(frozen=True)
class ObjectSpec:
    """A kind of object whose methods return dynamic values (a retriever, a vector store...).

    It is recognised by the call that made it, the annotation of the name holding it, or that name.
    """

    what: str
    kind: DynamicKind
    made_by: tuple[str, ...] = ()
    typed: tuple[str, ...] = ()
    named: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()

    def made(self, dotted: str) -> bool:
        return any(call_matches(dotted, p) for p in self.made_by)

    def typed_as(self, type_name: str) -> bool:
        return any(fnmatch.fnmatchcase(type_name, p) for p in self.typed)

    def named_as(self, name: str) -> bool:
        low = name.lower()
        return any(fnmatch.fnmatchcase(low, p) for p in self.named)

    def returns_from(self, method_path: str) -> bool:
        """True when calling ``method_path`` (``invoke``, ``query.near_text``) returns ``kind``."""
        return any(fnmatch.fnmatchcase(method_path, p) for p in self.methods)


@dataclass
class Catalog:
    """Call globs and name words that mark a value as dynamic, by kind."""

    calls: dict[DynamicKind, list[str]] = field(default_factory=dict)
    names: dict[DynamicKind, set[str]] = field(default_factory=dict)
    name_regexes: list[tuple[re.Pattern[str], DynamicKind]] = field(default_factory=list)
    prompt_name_patterns: list[str] = field(default_factory=list)
    # configuration read once at start-up (Timing.PROCESS)
    process_names: frozenset[str] = frozenset()
    process_calls: tuple[str, ...] = ()
    process_types: tuple[str, ...] = ()
    # parts of an object fixed for a project or a run (``state.project.name``, ``state.specification``)
    project_parts: frozenset[str] = frozenset()
    # time values: granularity by call and by name
    call_granularity: dict[Granularity, list[str]] = field(default_factory=dict)
    name_granularity: dict[str, Granularity] = field(default_factory=dict)
    # cardinality by name (whole name or a run of its words) and by call
    name_cardinality: dict[str, Cardinality] = field(default_factory=dict)
    call_cardinality: dict[Cardinality, list[str]] = field(default_factory=dict)
    flag_prefixes: tuple[str, ...] = ()
    objects: tuple[ObjectSpec, ...] = ()
    # content nouns (``feedback``, ``question``) and persons (``user``) of compound names
    content_words: frozenset[str] = frozenset()
    person_words: frozenset[str] = frozenset()
    # answers already given (the same few names are asked about in every file)
    _calls_seen: dict[str, DynamicKind | None] = field(default_factory=dict, repr=False, compare=False)
    _prompt_names_seen: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)
    _prompt_regex: re.Pattern[str] | None = field(default=None, repr=False, compare=False)
    # ``calls`` by the last part a matching name must end in; entries without one are under ""
    _call_index: dict[str, list[tuple[int, DynamicKind, str]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def classify_call(self, dotted: str) -> DynamicKind | None:
        """The kind of value a call such as ``datetime.now`` or ``store.similarity_search`` yields."""
        if not dotted:
            return None
        seen = self._calls_seen
        if dotted not in seen:
            if len(seen) >= MAX_ANSWERS:
                seen.clear()
            seen[dotted] = self._classify_call(dotted)
        return seen[dotted]

    def _classify_call(self, dotted: str) -> DynamicKind | None:
        """The kind of the first entry of ``calls`` (in order) that ``dotted`` matches; only the
        entries whose last part is ``dotted``'s, and those without a fixed last part, are tried."""
        index = self._call_index or self._index_calls()
        tried = [*index.get(dotted.rpartition(".")[2], ()), *index.get("", ())]
        tried.sort(key=lambda entry: entry[0])
        for _order, kind, pattern in tried:
            if call_matches(dotted, pattern):
                return kind
        return None

    def _index_calls(self) -> dict[str, list[tuple[int, DynamicKind, str]]]:
        """``name``, ``a.name`` and ``*.name`` match only a dotted name whose last part is ``name``
        (see :func:`call_matches`); any other glob is kept under ""."""
        index = self._call_index
        order = 0
        for kind, patterns in self.calls.items():
            for pattern in patterns:
                plain = pattern[1:] if pattern.startswith("*.") else pattern
                key = "" if plain.startswith("*") or _GLOB.search(plain) else plain.rpartition(".")[2]
                index.setdefault(key, []).append((order, kind, pattern))
                order += 1
        index.setdefault("", [])
        return index

    def granularity_of_call(self, dotted: str) -> Granularity | None:
        """How often the time value a call returns changes (``date.today`` -> DAY)."""
        for grain, patterns in self.call_granularity.items():
            if any(call_matches(dotted, p) for p in patterns):
                return grain
        return None

    def cardinality_of_call(self, dotted: str) -> Cardinality | None:
        """How many texts a call's result takes (``uuid.uuid4`` -> PER_REQUEST)."""
        for card, patterns in self.call_cardinality.items():
            if any(call_matches(dotted, p) for p in patterns):
                return card
        return None

    def is_process_call(self, dotted: str) -> bool:
        """True for a call that returns configuration read once (``get_settings()``, ``os.getenv``)."""
        return any(call_matches(dotted, p) for p in self.process_calls)

    def is_process_name(self, name: str) -> bool:
        """True for a name that holds configuration (``config``, ``settings``, ``app_config``)."""
        return name.strip("_").lower() in self.process_names

    def is_fixed_part(self, name: str) -> bool:
        """True for an attribute that names configuration or the project a run works on
        (``config``, ``settings``, ``project``, ``specification``): fixed for the process or the run."""
        low = name.strip("_").lower()
        return low in self.process_names or low in self.project_parts

    def is_process_type(self, type_name: str) -> bool:
        """True for a class that holds configuration (``AgentConfig``, ``Settings``)."""
        return bool(type_name) and any(fnmatch.fnmatchcase(type_name, p) for p in self.process_types)

    def name_traits(self, name: str) -> tuple[Granularity | None, Cardinality | None]:
        """Granularity and cardinality that a name tells (``current_date`` -> DAY, ``user_id`` -> PER_USER).

        The whole name is looked up first, then runs of its ``_``-separated words, longest first.
        """
        last = name.rpartition(".")[2].strip("_").lower()
        if not last:
            return None, None
        card = _lookup_words(last, self.name_cardinality)
        if card is None and last.startswith(self.flag_prefixes):
            card = Cardinality.FEW  # ``is_admin``, ``use_tools``: a flag takes two values
        return _lookup_words(last, self.name_granularity), card

    def classify_name(self, name: str) -> tuple[DynamicKind | None, float]:
        """Kind and confidence for a variable/placeholder name such as ``current_date`` or ``docs``.

        An exact word match gives 0.9; a match on one ``_``-separated word of a longer name gives 0.6
        (``user_docs`` -> retrieved context). Returns ``(None, 0.0)`` for names that say nothing.
        """
        last = name.rpartition(".")[2].strip("_").lower()
        if not last:
            return None, 0.0
        if last in _OWNER_WORDS and "." in name:
            # ``user.name`` is a user's identity; ``project.name``, ``tool.name`` or ``self.name`` is the
            # name of something else, which says nothing about who asks
            kind, confidence = self.classify_name(name.rsplit(".", 1)[0])
            return (kind, confidence) if kind is DynamicKind.USER_IDENTITY else (None, 0.0)
        for regex, kind in self.name_regexes:
            if regex.fullmatch(last):
                return kind, 0.8
        for kind, words in self.names.items():
            if last in words:
                return kind, 0.9
        parts = [p for p in re.split(r"_+", last) if p]
        head = self._head_kind(parts)
        if head is not None:
            return head, 0.6
        content = [i for i, p in enumerate(parts) if p in self.content_words]
        if content and any(p in self.person_words for p in parts[: content[-1]]):
            return DynamicKind.USER_INPUT, 0.6  # ``user_feedback``: what a person wrote
        for kind in _MODIFIER_KINDS:
            if content and kind is DynamicKind.USER_IDENTITY:
                continue  # ``tool_feedback_for_user``: text, whoever it is about
            words = self.names.get(kind, set())
            for i in range(len(parts)):
                for j in range(len(parts), i, -1):
                    if (i, j) != (0, len(parts)) and "_".join(parts[i:j]) in words and j - i >= 1:
                        if len(parts[i:j]) == 1 and parts[i] in _WEAK_WORDS:
                            continue
                        return kind, 0.6
        return None, 0.0

    def _head_kind(self, parts: list[str]) -> DynamicKind | None:
        """The kind of a compound name's head noun: its longest tail of words that is a name of the
        catalog (``retrieved_docs`` -> documents, ``current_user_id`` -> a user id). A single word too
        common to say anything (``text``, ``name``) is no head."""
        for i in range(1, len(parts)):
            tail = "_".join(parts[i:])
            if i == len(parts) - 1 and tail in _WEAK_WORDS:
                return None
            for kind in _HEAD_KINDS:
                if tail in self.names.get(kind, ()):
                    return kind
        return None

    def is_prompt_name(self, name: str) -> bool:
        """True when a name says it holds a prompt (``SYSTEM_PROMPT``, ``agent_instructions``...)."""
        last = name.rpartition(".")[2].lower()
        seen = self._prompt_names_seen
        if last not in seen:
            if len(seen) >= MAX_ANSWERS:
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
            process_names=self.process_names,
            process_calls=self.process_calls,
            process_types=self.process_types,
            project_parts=self.project_parts,
            call_granularity=self.call_granularity,
            name_granularity=self.name_granularity,
            name_cardinality=self.name_cardinality,
            call_cardinality=self.call_cardinality,
            flag_prefixes=self.flag_prefixes,
            objects=self.objects,
            content_words=self.content_words,
            person_words=self.person_words,
        )


def _lookup_words(name: str, table: dict[str, _V]) -> _V | None:
    """``table[name]``, else the value of its longest tail of ``_``-separated words in the table.

    The tail carries what a compound name is (``current_user_id`` is a user id, ``start_date`` a
    date); its head only qualifies it (``user_question`` is a question, not a user).
    """
    got = table.get(name)
    if got is not None:
        return got
    parts = [p for p in name.split("_") if p]
    for i in range(1, len(parts)):
        got = table.get("_".join(parts[i:]))
        if got is not None:
            return got
    return None


# Words too common to classify a longer name on their own (``run_name``, ``tool_output_format``).
_WEAK_WORDS = {"name", "date", "time", "output", "input", "text", "message", "content", "state", "host"}
# Kinds a word inside a longer name can give it (a modifier: ``chat_history_window``)...
_MODIFIER_KINDS = (
    DynamicKind.TIMESTAMP,
    DynamicKind.IDENTIFIER,
    DynamicKind.USER_IDENTITY,
    DynamicKind.RETRIEVED_CONTEXT,
    DynamicKind.MEMORY,
    DynamicKind.HISTORY,
)
# ... and its head noun. User input is told by a content noun that a person qualifies
# (``user_feedback``), not by a head alone: ``current_task`` or ``search_query`` may come from
# anywhere; environment, tool and random words are too often something else at the end of a name
# (``base_env``, ``model_outputs``).
_HEAD_KINDS = _MODIFIER_KINDS


def catalog_toml() -> dict:
    """``data/catalog.toml`` as parsed, once per process (the catalog and the sinks both read it;
    :func:`~prefixlint.model.data.data_toml` keeps it)."""
    return data_toml("catalog.toml")


@cache
def builtin_catalog() -> Catalog:
    """The catalog shipped in ``data/catalog.toml``."""
    raw = catalog_toml()
    calls = {DynamicKind(k): list(v) for k, v in raw["calls"].items()}
    names = {DynamicKind(k): set(v) for k, v in raw["names"].items()}
    process = raw.get("process", {})
    grain = raw.get("granularity", {})
    card = raw.get("cardinality", {})
    return Catalog(
        calls=calls,
        names=names,
        prompt_name_patterns=list(raw["prompt_names"]["patterns"]),
        process_names=frozenset(n.lower() for n in process.get("names", ())),
        process_calls=tuple(process.get("calls", ())),
        process_types=tuple(process.get("types", ())),
        project_parts=frozenset(n.lower() for n in process.get("parts", ())),
        call_granularity={Granularity(k): list(v) for k, v in grain.get("calls", {}).items()},
        name_granularity={n: Granularity(k) for k, v in grain.get("names", {}).items() for n in v},
        name_cardinality={n: Cardinality(k) for k, v in card.get("names", {}).items() for n in v},
        call_cardinality={Cardinality(k): list(v) for k, v in card.get("calls", {}).items()},
        flag_prefixes=tuple(card.get("flag_prefixes", ())),
        objects=tuple(_object_spec(o) for o in raw.get("objects", ())),
        content_words=frozenset(raw.get("words", {}).get("content", ())),
        person_words=frozenset(raw.get("words", {}).get("persons", ())),
    )


def _object_spec(raw: dict) -> ObjectSpec:
    return ObjectSpec(
        what=raw["what"],
        kind=DynamicKind(raw["kind"]),
        made_by=tuple(raw.get("made_by", ())),
        typed=tuple(raw.get("typed", ())),
        named=tuple(n.lower() for n in raw.get("named", ())),
        methods=tuple(raw.get("methods", ())),
    )


def catalog_for(settings: object | None = None) -> Catalog:
    """The built-in catalog extended with ``dynamic-sources`` from settings and plugin entries.

    One catalog per distinct set of sources, so its remembered answers serve every file.
    """
    sources = tuple(
        (src.pattern, src.kind, src.match) for src in getattr(settings, "dynamic_sources", None) or ()
    )
    got = _CATALOGS.get(sources)
    if got is None:
        if len(_CATALOGS) >= MAX_CATALOGS:
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
