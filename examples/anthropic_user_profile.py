"""BAD (PFX104, PFX503): the user's name and plan open the system prompt, and the cache breakpoint
sits on the block that holds them, so every request writes a new cache entry that is never read."""

import anthropic

client = anthropic.Anthropic()

POLICY = (
    "You are the support assistant of Parcel, a shipping platform. Help with tracking, returns, "
    "customs paperwork and label printing. Never promise delivery dates; quote the carrier's estimate. "
    "For lost parcels, collect the tracking number and open a claim. Keep answers short and friendly. "
    "Returns are free within 30 days with the original label; after that the customer pays the "
    "carrier's rate. Customs forms need the value, the weight and the country of origin of each item. "
    "Hand the conversation to a person when the customer asks for one or reports damaged goods."
)


def reply(user, question: str):
    return client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=500,
        system=[
            {
                "type": "text",
                "text": f"The customer is {user.full_name} on the {user.plan} plan.\n{POLICY}",
                "cache_control": {"type": "ephemeral"},
            }
        ],
        messages=[{"role": "user", "content": question}],
    )
