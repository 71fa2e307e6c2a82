"""GOOD: tools in sorted order and JSON with sort_keys, so the bytes are the same in every process."""

import json

from openai import OpenAI

client = OpenAI()

REGISTRY = {
    "get_order": {"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}},
    "refund": {"type": "function", "function": {"name": "refund", "parameters": {"type": "object"}}},
}
ENABLED = {"get_order", "refund"}


def run(customer: dict, question: str):
    tools = [REGISTRY[name] for name in sorted(ENABLED)]
    system = "Use the tools to answer; never guess order data.\nCustomer record:\n" + json.dumps(customer, sort_keys=True)
    return client.chat.completions.create(
        model="gpt-4.1",
        tools=tools,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],
    )
