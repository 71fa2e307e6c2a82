"""GOOD: static blocks first with cache breakpoints (1h before 5m); the profile travels with the
question."""

import anthropic

client = anthropic.Anthropic()

POLICY = "You are the support assistant of Parcel. Help with tracking, returns and customs paperwork."
EXAMPLES = "Q: Where is my parcel? A: Please share the tracking number and I will look it up."


def reply(user, question: str):
    return client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=500,
        system=[
            {"type": "text", "text": POLICY, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            {"type": "text", "text": EXAMPLES, "cache_control": {"type": "ephemeral"}},
        ],
        messages=[{"role": "user", "content": f"I am {user.full_name}. {question}"}],
    )
