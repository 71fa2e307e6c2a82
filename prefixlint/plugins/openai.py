"""OpenAI: Chat Completions, Responses and the legacy Completions API."""

from prefixlint.plugins import Plugin, SinkSpec

PLUGIN = Plugin(
    name="openai",
    sinks=(
        SinkSpec(
            name="openai chat.completions.create",
            calls=(
                "chat.completions.create",
                "chat.completions.parse",
                "beta.chat.completions.parse",
                "chat.completions.stream",
            ),
            provider="openai",
            messages=("messages",),
            tools=("tools", "functions"),
            response_format=("response_format",),
            cache_key=("prompt_cache_key",),
        ),
        SinkSpec(
            name="openai responses.create",
            calls=("responses.create", "responses.parse", "responses.stream"),
            provider="openai",
            system=("instructions",),
            messages=("input",),
            tools=("tools",),
            response_format=("text",),
            cache_key=("prompt_cache_key",),
        ),
        SinkSpec(
            name="openai completions.create",
            calls=("completions.create",),
            provider="openai",
            prompt=("prompt",),
            cache_key=("prompt_cache_key",),
        ),
    ),
)
