"""GOOD: static system prompt first, history next, and the date in the last user message."""

from datetime import date

from openai import OpenAI

client = OpenAI()

SYSTEM = """You are Ledger, the billing assistant of an invoicing SaaS.
Answer questions about invoices, credit notes and payment methods. Quote amounts exactly."""


def user_turn(question: str) -> dict:
    return {"role": "user", "content": f"{question}\n\n(Today is {date.today().isoformat()}.)"}


def answer(history: list[dict], question: str):
    return client.chat.completions.create(
        model="gpt-4.1",
        messages=[{"role": "system", "content": SYSTEM}, *history, user_turn(question)],
        prompt_cache_key="ledger-v3",
    )
