"""LangChain: message classes, chat prompt templates and chat-model calls."""

from prefixlint.plugins import Plugin, SinkSpec

# A bare ``PromptTemplate(...)`` counts only when imported from one of these.
LANGCHAIN = ("langchain", "langchain_core", "langchain_community")

PLUGIN = Plugin(
    name="langchain",
    sinks=(
        SinkSpec(
            name="langchain ChatPromptTemplate.from_messages",
            calls=("ChatPromptTemplate.from_messages", "ChatPromptTemplate"),
            provider="auto",
            messages=("messages",),
            positional={0: "messages"},
            template_style="format",
            module=LANGCHAIN,
        ),
        SinkSpec(
            name="langchain PromptTemplate",
            calls=("PromptTemplate.from_template", "PromptTemplate"),
            provider="auto",
            prompt=("template",),
            positional={0: "prompt"},
            template_style="format",
            module=LANGCHAIN,
        ),
        SinkSpec(
            name="langchain chat model invoke",
            # any runnable: layouts without static text or cache settings are dropped by the builder
            calls=("*.invoke", "*.ainvoke", "*.stream", "*.astream"),
            provider="auto",
            messages=("input",),
            positional={0: "messages"},
        ),
    ),
    message_constructors={
        "SystemMessage": "system",
        "HumanMessage": "user",
        "AIMessage": "assistant",
        "ToolMessage": "tool",
        "SystemMessagePromptTemplate.from_template": "system",
        "from_template": "system",
        "SystemMessagePromptTemplate": "system",
        "HumanMessagePromptTemplate": "user",
    },
    template_constructors={"ChatPromptTemplate.from_messages": "format", "PromptTemplate": "format"},
    dynamic_calls={
        "retrieved_context": ["*.retriever.invoke", "*.as_retriever().invoke"],
        "memory": ["*.load_memory_variables"],
    },
)
