"""BAD (PFX301): the time is appended at the end of the system prompt, but the conversation history
follows it, so every earlier turn is re-prefilled on every request."""

import time

from openai import OpenAI

client = OpenAI()

PERSONA = """You are Sage, a patient maths tutor for secondary-school students.
Explain one step at a time, ask a check question after each step, and never give the final answer
before the student has tried. Use LaTeX for formulas and keep each reply under 120 words."""


def tutor_turn(history: list[dict], student_message: str) -> str:
    system = PERSONA + f"\nLocal time: {time.strftime('%H:%M')}"
    messages = [{"role": "system", "content": system}]
    for turn in history:
        messages.append({"role": turn["role"], "content": turn["content"]})
    messages.append({"role": "user", "content": student_message})
    response = client.chat.completions.create(model="gpt-4.1", messages=messages)
    return response.choices[0].message.content or ""
