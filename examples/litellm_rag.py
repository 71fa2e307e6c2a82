"""BAD (PFX105): retrieved chunks are added by one helper and the static guidelines by another, so
the guidelines come after the per-query context and are re-prefilled on every request."""

import litellm

GUIDELINES = """
Answer only from the articles above. If they do not contain the answer, say so and suggest
contacting support. Cite the article title in brackets after each claim. Never invent settings,
prices or URLs. Use at most five sentences and a short bullet list of next steps.
When two articles disagree, prefer the newer one and say that the older one is out of date.
Never reveal internal article ids or draft articles, and answer in the language of the question.
If the question is about billing, an account's data or a security incident, do not answer from the
articles: hand the conversation to a support agent and say how long the wait usually is.
"""


def with_context(prompt: str, chunks: list[str]) -> str:
    return prompt + "\n\n".join(chunks)


def with_guidelines(prompt: str) -> str:
    return prompt + GUIDELINES


def answer(retriever, question: str):
    chunks = [doc.page_content for doc in retriever.get_relevant_documents(question)]
    prompt = with_context("Relevant help-centre articles:\n", chunks)
    prompt = with_guidelines(prompt)
    return litellm.completion(
        model="gpt-4.1-mini",
        messages=[{"role": "system", "content": prompt}, {"role": "user", "content": question}],
    )
