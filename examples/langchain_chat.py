"""BAD (PFX111): a LangChain chat template with the date placeholder ahead of the instructions."""

from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

prompt = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "Today is {current_date}.\n"
            "You are Atlas, a travel-planning assistant. Suggest itineraries that fit the traveller's "
            "budget and dates, list visa requirements for their passport, and always add the local "
            "emergency number. Prefer trains over short flights. Never book anything yourself.",
        ),
        MessagesPlaceholder("chat_history"),
        ("human", "{question}"),
    ]
)
