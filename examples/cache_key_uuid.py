"""BAD (PFX504): a fresh uuid as prompt_cache_key sends every request to a different cache."""

import uuid

from openai import OpenAI

client = OpenAI()

INSTRUCTIONS = "You summarise support tickets in three bullet points: problem, impact, next step."


def summarise(ticket_text: str):
    return client.responses.create(
        model="gpt-4.1",
        instructions=INSTRUCTIONS,
        input=ticket_text,
        prompt_cache_key=f"req-{uuid.uuid4()}",
    )
