"""litellm: ``completion``/``acompletion`` (OpenAI-shaped, provider guessed from ``model``)."""

from prefixlint.plugins import Plugin, SinkSpec

PLUGIN = Plugin(
    name="litellm",
    sinks=(
        SinkSpec(
            name="litellm completion",
            calls=(
                "litellm.completion",
                "litellm.acompletion",
                "completion",
                "acompletion",
                "Router.completion",
                "router.completion",
                "router.acompletion",
            ),
            provider="auto",
            messages=("messages",),
            tools=("tools",),
            response_format=("response_format",),
            cache_key=("prompt_cache_key",),
            positional={1: "messages"},
            module=("litellm",),
        ),
    ),
)
