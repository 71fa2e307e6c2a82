"""Sinks: the calls that send a layout to a model, matched against plugin and config SinkSpecs."""

from __future__ import annotations

import fnmatch
from functools import cache

from prefixlint.analysis.catalog import catalog_toml
from prefixlint.analysis.python.collect import ModuleInfo
from prefixlint.model.settings import Settings
from prefixlint.plugins import Plugin, SinkSpec, load_plugins


def sink_specs(settings: Settings) -> list[SinkSpec]:
    """Every SinkSpec from plugins, plus the project's ``[[tool.prefixlint.sinks]]``."""
    specs: list[SinkSpec] = []
    for plugin in load_plugins():
        specs.extend(plugin.sinks)
    specs.extend(catalog_sinks())
    for extra in settings.sinks:
        specs.append(
            SinkSpec(
                name=extra.call,
                calls=(extra.call,),
                provider=extra.provider,
                system=(extra.system,) if extra.system else (),
                messages=(extra.messages,) if extra.messages else (),
                prompt=(extra.prompt,) if extra.prompt else (),
                tools=(extra.tools,) if extra.tools else (),
            )
        )
    return specs


@cache
def catalog_sinks() -> tuple[SinkSpec, ...]:
    """The ``[[sinks]]`` of ``data/catalog.toml`` (google-genai, agent frameworks...)."""
    out = []
    for raw in catalog_toml().get("sinks", []):
        out.append(
            SinkSpec(
                name=raw["name"],
                calls=tuple(raw["calls"]),
                provider=raw.get("provider", "auto"),
                system=tuple(raw.get("system", ())),
                messages=tuple(raw.get("messages", ())),
                tools=tuple(raw.get("tools", ())),
                prompt=tuple(raw.get("prompt", ())),
                positional={int(k): v for k, v in raw.get("positional", {}).items()},
                model_kw=raw.get("model_kw", "model"),
                module=tuple(raw.get("module", ())),
                system_follows=tuple(raw.get("system_follows", ())),
            )
        )
    return tuple(out)


@cache
def system_prompt_keywords() -> frozenset[str]:
    """Keyword arguments that hold a system prompt whatever the callee (``system_prompt=``)."""
    return frozenset(catalog_toml().get("system-prompt-arguments", {}).get("keywords", ()))


@cache
def keyword_sink() -> SinkSpec:
    """The spec of a call that passes a system prompt by keyword to a callee we cannot see."""
    keywords = tuple(sorted(system_prompt_keywords()))
    return SinkSpec(
        name="system prompt argument",
        calls=(),
        provider="auto",
        system=keywords,
        prompt=("prompt", "query", "input", "question"),
        messages=("messages", "history_messages"),
        positional={0: "prompt"},
    )


def passes_system_prompt(call_keywords: list[str]) -> bool:
    """True when a call names one of the system-prompt keywords."""
    kws = system_prompt_keywords()
    return any(k in kws for k in call_keywords)


def decorator_names() -> dict[str, Plugin]:
    """Decorator suffixes that register a system-prompt function, with their plugin."""
    out: dict[str, Plugin] = {}
    for plugin in load_plugins():
        for deco in plugin.system_prompt_decorators:
            out[deco] = plugin
    return out


def _matches(dotted: str, pattern: str) -> bool:
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(dotted, pattern)
    return dotted == pattern or dotted.endswith("." + pattern)


# (call patterns and modules of every spec) -> (dotted, import of a bare name) -> index or -1
_MEMO: dict[tuple, dict[tuple[str, object], int]] = {}


def match_sink(dotted: str, mod: ModuleInfo, specs: list[SinkSpec]) -> SinkSpec | None:
    """The spec whose call pattern matches ``dotted`` (``client.chat.completions.create``)."""
    if not dotted:
        return None
    sig = tuple((spec.calls, spec.module) for spec in specs)
    memo = _MEMO.get(sig)
    if memo is None:
        if len(_MEMO) > 64:
            _MEMO.clear()
        memo = _MEMO[sig] = {}
    key = (dotted, None if "." in dotted else mod.imports.get(dotted))
    got = memo.get(key)
    if got is None:
        spec = _match_sink(dotted, mod, specs)
        got = memo[key] = -1 if spec is None else specs.index(spec)
    return None if got < 0 else specs[got]


def _match_sink(dotted: str, mod: ModuleInfo, specs: list[SinkSpec]) -> SinkSpec | None:
    head = dotted.split(".", 1)[0]
    for spec in specs:
        for pattern in spec.calls:
            if not _matches(dotted, pattern):
                continue
            if "." not in dotted and "." not in pattern and spec.module:
                # a bare name (``completion``) counts only when imported from the framework
                imp = mod.imports.get(head)
                if imp is None or imp[0].split(".")[0] not in spec.module:
                    continue
            return spec
    return None
