"""Anthropic: Messages API (system string or blocks with ``cache_control``, messages, tools)."""

from prefixlint.plugins import Plugin, SinkSpec

PLUGIN = Plugin(
    name="anthropic",
    sinks=(
        SinkSpec(
            name="anthropic messages.create",
            calls=(
                "messages.create",
                "messages.stream",
                "beta.messages.create",
                "messages.count_tokens",
                "beta.prompt_caching.messages.create",
            ),
            provider="anthropic",
            system=("system",),
            messages=("messages",),
            tools=("tools",),
        ),
    ),
)
