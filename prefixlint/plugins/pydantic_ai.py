"""pydantic-ai: ``Agent(system_prompt=..., instructions=...)`` and ``@agent.system_prompt`` hooks."""

from prefixlint.plugins import Plugin, SinkSpec

PLUGIN = Plugin(
    name="pydantic_ai",
    sinks=(
        SinkSpec(
            name="pydantic-ai Agent",
            calls=("Agent", "pydantic_ai.Agent"),
            provider="auto",
            system=("system_prompt", "instructions"),
            model_kw="model",
            module=("pydantic_ai",),
        ),
    ),
    system_prompt_decorators=("system_prompt", "instructions"),
)
