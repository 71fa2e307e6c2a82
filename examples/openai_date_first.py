"""BAD (PFX101): the date is the first line of the system prompt, so nothing after it is cached."""

from datetime import datetime

from openai import OpenAI

client = OpenAI()

GUIDELINES = """\
You are Ledger, the billing assistant of an invoicing SaaS.
- Answer questions about invoices, credit notes, payment methods and dunning.
- Quote amounts exactly as they appear in the customer's account; never estimate.
- If a question needs account data, ask for the invoice number first.
- Escalate disputes over 500 EUR to a human agent.
- Reply in the customer's language, in at most six sentences.
- A credit note cancels an invoice in full or in part; it never changes the invoice number.
- Dunning sends reminders 7, 14 and 30 days after the due date; the third one adds a late fee.
- Payment methods: card, SEPA direct debit and bank transfer. Card changes take effect next cycle.
"""


def answer(question: str) -> str:
    system = f"Current date and time: {datetime.now():%Y-%m-%d %H:%M}.\n{GUIDELINES}"
    response = client.chat.completions.create(
        model="gpt-4.1",
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": question},
        ],
    )
    return response.choices[0].message.content or ""
