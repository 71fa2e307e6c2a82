"""LlamaIndex: ``ChatMessage`` and chat engines built with a ``system_prompt``."""

from prefixlint.plugins import Plugin, SinkSpec

PLUGIN = Plugin(
    name="llama_index",
    sinks=(
        SinkSpec(
            name="llama-index chat engine",
            calls=(
                "SimpleChatEngine.from_defaults",
                "ContextChatEngine.from_defaults",
                "CondensePlusContextChatEngine.from_defaults",
                "as_chat_engine",
                "as_query_engine",
                "ReActAgent.from_tools",
                "FunctionAgent",
                "OpenAIAgent.from_tools",
            ),
            provider="auto",
            system=("system_prompt",),
            messages=("prefix_messages", "chat_history"),
        ),
        SinkSpec(
            name="llama-index llm.chat",
            calls=("llm.chat", "llm.achat", "llm.stream_chat", "Settings.llm.chat"),
            provider="auto",
            messages=("messages",),
            positional={0: "messages"},
        ),
    ),
    message_constructors={"ChatMessage": "user", "ChatMessage.from_str": "user"},
    dynamic_calls={"retrieved_context": ["*.as_retriever().retrieve", "*.retriever.retrieve"]},
)
