"""BAD (PFX104, across modules): the template lives in prompts.py, the customer's name is bound here."""

from openai import OpenAI

from .prompts import SYSTEM_TEMPLATE

client = OpenAI()


def ask(customer, question: str):
    system = SYSTEM_TEMPLATE.format(customer_name=customer.name)
    return client.chat.completions.create(
        model="gpt-4.1",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],
    )
