"""Framework knowledge as plugins, discovered through the ``prefixlint.plugins`` entry-point group.

A plugin is a :class:`Plugin` instance exposed by an entry point, for example in a third party's
``pyproject.toml``::

    [project.entry-points."prefixlint.plugins"]
    mylib = "mylib_prefixlint:PLUGIN"

It can declare sinks (calls that send a prompt to a model), message constructors, dynamic calls, and
extra rules. Built-in plugins for openai, anthropic, litellm, langchain, llama-index and pydantic-ai
live next to this file and are registered the same way in prefixlint's own ``pyproject.toml``.

Takes nothing from the rest of the package but ``model``; gives the analyzers and rules their
framework knowledge (sink and constructor names, dynamic calls, extra rules).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cache
from typing import Any

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "prefixlint.plugins"
BUILTIN = ("openai", "anthropic", "litellm", "langchain", "llama_index", "pydantic_ai")


@dataclass(frozen=True)
class SinkSpec:
    """A call that sends a layout to a model, and which arguments hold which part of it.

    ``calls`` are dotted-name suffixes matched against the call (``chat.completions.create``).
    Keyword names map to sections: ``system`` (a string or block list), ``messages`` (a message
    list), ``tools``, ``prompt`` (one string sent as the user turn or the whole prompt), and
    ``cache_key`` (e.g. ``prompt_cache_key``). ``positional`` maps argument positions to those roles.
    A ``provider`` of ``"auto"`` means: guess it from the ``model`` argument (litellm, langchain).
    """

    name: str
    calls: tuple[str, ...]
    provider: str
    system: tuple[str, ...] = ()
    messages: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    prompt: tuple[str, ...] = ()
    response_format: tuple[str, ...] = ()
    cache_key: tuple[str, ...] = ()
    positional: dict[int, str] = field(default_factory=dict)
    model_kw: str = "model"
    # Top-level modules a bare call name must be imported from (``completion`` from ``litellm``).
    module: tuple[str, ...] = ()
    # When set, the prompt/system/messages arguments are templates of this style ("format",
    # "mustache", "jinja"), e.g. LangChain's ``PromptTemplate``; their placeholders become slots.
    template_style: str = ""
    # Text the framework sends right after the system prompt, as dotted keyword paths into the
    # call's arguments: ``output_format.template`` is ``template=`` of the ``output_format=Parser(...)``
    # (or ``dict(...)``) argument (lagent sends the parser's instruction as the next system message).
    system_follows: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plugin:
    """What a framework contributes to the analyzer and the rules."""

    name: str
    sinks: tuple[SinkSpec, ...] = ()
    # Class or function names that build one message: ``SystemMessage`` -> "system".
    message_constructors: dict[str, str] = field(default_factory=dict)
    # Calls whose return value is a prompt template (``ChatPromptTemplate.from_messages``).
    template_constructors: dict[str, str] = field(default_factory=dict)
    # Decorators that register a system-prompt function (pydantic-ai ``@agent.system_prompt``).
    system_prompt_decorators: tuple[str, ...] = ()
    dynamic_calls: dict[str, list[str]] = field(default_factory=dict)
    rules: tuple[Any, ...] = ()


@cache
def load_plugins() -> tuple[Plugin, ...]:
    """Every installed plugin: built-ins first, then third-party entry points. Broken ones are logged."""
    import importlib

    from prefixlint.plugins.entry_points import entry_points

    plugins: list[Plugin] = []
    seen: set[str] = set()
    for name in BUILTIN:
        try:
            module = importlib.import_module(f"prefixlint.plugins.{name}")
        except ImportError:
            continue
        plugin = getattr(module, "PLUGIN", None)
        if isinstance(plugin, Plugin):
            plugins.append(plugin)
            seen.add(plugin.name)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in seen:
            continue
        try:
            plugin = ep.load()
        except Exception as exc:
            log.warning("prefixlint plugin %s failed to load: %s", ep.name, exc)
            continue
        if isinstance(plugin, Plugin):
            plugins.append(plugin)
            seen.add(plugin.name)
        else:
            log.warning("prefixlint plugin %s is not a prefixlint.plugins.Plugin", ep.name)
    return tuple(plugins)
