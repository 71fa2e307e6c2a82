"""BAD (PFX401, PFX402): tools come from a set (hash order differs per process) and the customer
record is serialized without sort_keys."""

import json

from openai import OpenAI

client = OpenAI()

REGISTRY = {
    "get_order": {"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}},
    "refund": {"type": "function", "function": {"name": "refund", "parameters": {"type": "object"}}},
    "track": {"type": "function", "function": {"name": "track", "parameters": {"type": "object"}}},
}
ENABLED = {"get_order", "refund", "track"}


def run(customer: dict, question: str):
    tools = [REGISTRY[name] for name in ENABLED]
    system = (
        "Customer record:\n"
        + json.dumps(customer)
        + "\nUse the tools to answer; never guess order data. Confirm a refund with the customer before"
        " you issue it, and say when a tracking number is not yet available. Refunds above 200 EUR need"
        " a human agent; offer to hand over. Orders ship within two working days, and returns are"
        " accepted within 30 days with the receipt. Reply in the customer's language, in at most five"
        " sentences. Never share another customer's data, never read out a full card number, and hand"
        " the conversation to a person when the customer asks for one or reports a security problem."
    )
    return client.chat.completions.create(
        model="gpt-4.1",
        tools=tools,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],
    )
