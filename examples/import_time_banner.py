"""BAD (PFX201, lower severity): the deploy time is baked into the prompt at import. Each replica and
each restart gets different bytes, which splits a cache shared across replicas."""

from datetime import datetime, timezone

from openai import OpenAI

client = OpenAI()

SYSTEM_PROMPT = (
    f"Build {datetime.now(timezone.utc):%Y%m%d%H%M}.\n"
    "You are the internal IT helpdesk bot. Help employees reset passwords, request software licences "
    "and report hardware faults. Never ask for a password. Link to the IT portal for every request. "
    "Password resets need the employee id and a code sent to the registered phone. Software licences "
    "need the manager's approval, which the portal asks for. Hardware faults get a ticket with the "
    "asset tag and a short description; urgent faults (no laptop at all) go to the on-call technician. "
    "Answer in at most five sentences, in the employee's language, and close with the ticket number."
)


def ask(question: str):
    return client.chat.completions.create(
        model="gpt-4.1",
        messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}],
    )
