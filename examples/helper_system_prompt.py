"""BAD (PFX102): a helper builds the system prompt and puts the session id in its header."""

import uuid

from openai import OpenAI

client = OpenAI()

RULES = """Rules:
1. Only discuss the user's own orders.
2. Confirm the order number before changing anything.
3. Refunds above 200 EUR need a human agent; offer to hand over.
4. Be concise and polite; never share internal notes.
5. Orders ship within two working days; say so when asked about delivery, never promise a date.
6. Returns are accepted within 30 days with the receipt; the refund goes to the card that paid.
7. For damaged goods, ask for a photo and the order number, then open a claim.
8. Reply in the user's language, in at most five sentences."""


def session_header(session_id: str) -> str:
    return f"Session: {session_id}"


def build_system_prompt(session_id: str) -> str:
    return session_header(session_id) + "\n" + RULES


def handle(message: str) -> str:
    session_id = uuid.uuid4().hex
    response = client.chat.completions.create(
        model="gpt-4.1",
        messages=[
            {"role": "system", "content": build_system_prompt(session_id)},
            {"role": "user", "content": message},
        ],
    )
    return response.choices[0].message.content or ""
