"""A cheap test on raw bytes: a Python file without any prompt word cannot build or send a prompt."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from prefixlint.model.settings import Settings

log = logging.getLogger(__name__)


# Words without which a Python file cannot build or send a prompt (raw bytes, any case unless marked).
# Library names cover sinks; the rest covers message lists, prompt variables and provider keywords.
# Plain "prompt" alone is too common (cmd, pdb, getpass), so it counts only in prompt-ish shapes.
# They are literals: the pre-filter searches them with ``bytes.__contains__`` (see _Prefilter).
def _quoted(word: bytes) -> tuple[bytes, ...]:
    return tuple(a + word + b for a in (b'"', b"'") for b in (b'"', b"'"))


PREFILTER_LITERALS: tuple[bytes, ...] = (
    b"openai",
    b"anthropic",
    b"litellm",
    b"langchain",
    b"llama_index",
    b"pydantic_ai",
    b"ollama",
    b"mistralai",
    b"cohere",
    b"genai",
    b"bedrock",
    b"jinja",
    b"cache_control",
    b"_prompt",
    b"prompt_",
    b"prompt=",
    b"prompts",
    b"messages=",
    *_quoted(b"messages"),
    b"messages.create",
    b"completions.create",
    b"completion(",
    b"instructions=",
    *_quoted(b"role"),
    *_quoted(b"system"),
    b"system=",
    b"SystemMessage",
    b"HumanMessage",
)
# Case-sensitive words.
PREFILTER_CASED: tuple[bytes, ...] = (b"PROMPT", b"Prompt")


def prefilter_literals(settings: Settings) -> list[bytes]:
    """Every case-insensitive pre-filter word: built-ins, plugin marks, the last part of extra sinks."""
    return _literals(tuple(sink.call for sink in settings.sinks))


def _literals(sink_calls: tuple[str, ...]) -> list[bytes]:
    words = list(PREFILTER_LITERALS) + plugin_literals()
    for call in sink_calls:
        last = call.rsplit(".", 1)[-1].strip("*")
        if last:
            words.append(last.encode())
    return words


# Substrings shared by several words: a file without the anchor is not searched for its words.
_ANCHORS = (b"prompt", b"message", b"system", b"role", b"complet", b"respons", b"chat", b"from_", b"llm")


@dataclass(frozen=True)
class _Prefilter:
    """Literal search over raw bytes: one ``bytes.lower()`` and a few ``in`` scans per file.

    ``groups`` pairs an anchor with the lower-cased words that contain it (empty when the anchor is
    itself a word); ``cased`` are the case-sensitive words, under their lower-cased anchor.
    """

    groups: tuple[tuple[bytes, tuple[bytes, ...]], ...]
    cased: tuple[tuple[bytes, tuple[bytes, ...]], ...]

    @classmethod
    def build(cls, literals: Iterable[bytes], cased: Iterable[bytes]) -> _Prefilter:
        words = sorted({w.lower() for w in literals if w})
        # A word that contains another word adds nothing: the shorter one matches first.
        words = [w for w in words if not any(o != w and o in w for o in words)]
        groups: dict[bytes, list[bytes]] = {}
        for w in words:
            anchor = next((a for a in _ANCHORS if a in w), w)
            groups.setdefault(anchor, []).append(w)
        by_anchor: dict[bytes, list[bytes]] = {}
        for w in cased:
            by_anchor.setdefault(w.lower(), []).append(w)
        return cls(
            tuple((a, () if ws == [a] else tuple(ws)) for a, ws in groups.items()),
            tuple((a, tuple(ws)) for a, ws in by_anchor.items()),
        )

    def search(self, data: bytes) -> bool:
        low = data.lower()  # ASCII-only, like re.IGNORECASE on bytes
        for anchor, words in self.groups:
            if anchor in low and (not words or any(w in low for w in words)):
                return True
        return any(anchor in low and any(w in data for w in words) for anchor, words in self.cased)


def prefilter_for(settings: Settings) -> _Prefilter:
    """The pre-filter of ``settings`` (only its extra sinks change it), built once for each."""
    return _prefilter(tuple(sink.call for sink in settings.sinks))


# Lets every file through: the pre-filter cannot know which words matter (the empty anchor is in all).
_PASS_ALL = _Prefilter(((b"", ()),), ())


@lru_cache(maxsize=32)
def _prefilter(sink_calls: tuple[str, ...]) -> _Prefilter:
    try:
        words = _literals(sink_calls)
    except Exception as exc:  # the plugins could not be read: skipping files would hide findings
        log.warning(
            "prefixlint: the pre-filter cannot read the plugins (%s); every Python file is analysed", exc
        )
        return _PASS_ALL
    return _Prefilter.build(words, PREFILTER_CASED)


def plugin_literals() -> list[bytes]:
    """Marks from the installed plugins: ``a.b`` endings of their sink calls and message classes."""
    from prefixlint.plugins import load_plugins

    words: set[bytes] = set()
    for plugin in load_plugins():
        words.add(plugin.name.encode())
        for sink in plugin.sinks:
            for call in sink.calls:
                parts = [p for p in call.split(".") if p and "*" not in p]
                if len(parts) >= 2:
                    words.add(".".join(parts[-2:]).encode())
        for name in (*plugin.message_constructors, *plugin.template_constructors):
            words.add(name.split(".")[0].encode())
    return sorted(words)


def may_build_prompts(data: bytes, settings: Settings) -> bool:
    """Cheap test on raw bytes: False means the file cannot build or send a prompt."""
    return prefilter_for(settings).search(data)
