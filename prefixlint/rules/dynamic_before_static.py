"""PFX101-PFX109: a per-request dynamic value ahead of static text, one rule per kind of value.

A date is PFX111 (:mod:`.date_before_static`); a value of unknown nature is PFX120
(:mod:`.unknown_value_before_static`).
"""

from __future__ import annotations

from prefixlint.model.edits import Fix
from prefixlint.model.findings import Impact
from prefixlint.model.layout import DynamicKind, Segment
from prefixlint.rules._dynamic import DynamicBeforeStatic, pick_fix
from prefixlint.rules._examples import bad, chat
from prefixlint.rules.base import Example

# The static body of an inline example: long enough to be worth moving a value for.
_SUPPORT = (
    "You are a support agent for a bicycle shop. Answer questions about orders, repairs and returns "
    "in at most three sentences. Never promise delivery dates or prices that the order does not show, "
    "and ask for the order number when it is missing. Reply in the language of the customer, "
    "and hand the conversation to a person when the customer asks for one. Repairs take five working "
    "days; a return needs the receipt and the original packaging, and refunds go back to the card "
    "that paid. Keep a friendly tone, never blame the customer, and close with the next step."
)


class TimestampBeforeStatic(DynamicBeforeStatic):
    """A timestamp computed per request, finer than a day, sits ahead of static prompt text.

    Providers cache only an exact prefix from the first token. A time value that changes on every
    request (``datetime.now()``, ``time.time()``, ``%H:%M:%S``...) makes every token after it a
    cache miss, so the static instructions behind it are prefilled again on each call. The message
    says the value's granularity where the code shows it (to the second, to the minute, to the
    hour). A date (changes once a day) is PFX111 instead.

    Fix: put the static text first and the timestamp at the end of the prompt, or better in the
    last user message. The unsafe fix moves the line that holds the value to the end. Where the
    model needs only the day, coarsening the value to the date is the alternative the finding
    offers: then it costs about one miss per cache per day.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. Coarsening to the date changes what the model
    knows. The program itself runs as before; review the new prompt, then apply it with
    ``--unsafe-fixes``.
    """

    code = "PFX101"
    name = "timestamp-before-static"
    kind = DynamicKind.TIMESTAMP

    def advice(self, seg: Segment, impact: Impact) -> str:
        move = super().advice(seg, impact)
        if seg.granularity is None or not seg.granularity.sub_day:
            return move
        return move[:-1] + ", or coarsen it to the date if the model needs only the day (one miss a day)."

    def fixes(self, seg: Segment) -> tuple[Fix | None, list[Fix]]:
        move, coarsen = pick_fix(seg, "move-to-end"), pick_fix(seg, "coarsen-to-date")
        if move is None:
            return coarsen, []
        return move, [coarsen] if coarsen is not None else []

    INVALID = [
        bad(
            chat(
                'f"Now: {datetime.now():%H:%M}.\\n' + _SUPPORT + '"',
                imports="from datetime import datetime\n",
            ),
            fixed=chat(
                'f"' + _SUPPORT + '\\nNow: {datetime.now():%H:%M}."',
                imports="from datetime import datetime\n",
            ),
            unsafe=True,
        ),
        bad(
            chat('f"Time: {time.time()}\\n" + RULES', imports="import time\n"),
            fixed=chat('RULES + f"Time: {time.time()}\\n"', imports="import time\n"),
            unsafe=True,
        ),
    ]
    VALID = [
        Example(
            chat(
                'RULES + f"\\nCurrent time: {datetime.now().isoformat()}"',
                imports="from datetime import datetime\n",
            ),
            note="end of system prompt, single turn",
        ),
        Example(
            chat("RULES", user='f"(now: {datetime.now()}) {q}"', imports="from datetime import datetime\n"),
            note="the time is in the last user message",
        ),
        Example(
            chat('"Log lines use the format {datetime.now()} - message.\\n" + RULES'),
            note="a plain string that only contains the text of a call",
        ),
    ]


class IdentifierBeforeStatic(DynamicBeforeStatic):
    """A per-request identifier (uuid, token, request/session/trace id) sits ahead of static text.

    An id differs on every request by design, so nothing after it can be served from the cache.

    Fix: send ids as headers or metadata, not in the prompt; if the model needs one, put it in the
    last user message.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX102"
    name = "identifier-before-static"
    kind = DynamicKind.IDENTIFIER
    INVALID = [
        bad(chat('f"Request {uuid.uuid4()}.\\n" + RULES', imports="import uuid\n")),
        bad(chat('f"Session {session_id}.\\n" + RULES', params="q, session_id")),
    ]
    VALID = [
        Example(
            chat("RULES", before="    rid = uuid.uuid4().hex\n", imports="import uuid\n"),
            note="id computed but never reaches the prompt",
        ),
    ]


class RandomBeforeStatic(DynamicBeforeStatic):
    """A random value (``random.*``, ``secrets.choice``, numpy random) sits ahead of static text.

    Random greetings, shuffled examples or sampled personas change the bytes of the prefix on every
    request, so the static text after them is never cached.

    Fix: pick deterministically (e.g. by a hash of a stable key), or move the value to the end.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX103"
    name = "random-before-static"
    kind = DynamicKind.RANDOM
    INVALID = [
        bad(chat('random.choice(["Hi!", "Hello!"]) + "\\n" + RULES', imports="import random\n")),
    ]
    VALID = [Example(chat('RULES + "\\n" + random.choice(["Hi!", "Hello!"])', imports="import random\n"))]


class UserIdentityBeforeStatic(DynamicBeforeStatic):
    """The user's or tenant's identity (name, id, email, company, locale) sits ahead of static text.

    Personalising the top of the system prompt splits the cache per user: each user pays the full
    prefill of the shared instructions that follow.

    Fix: keep the shared instructions first and add the user's details after them, or in the last
    user message.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX104"
    name = "user-identity-before-static"
    kind = DynamicKind.USER_IDENTITY
    INVALID = [
        bad(chat('f"You are helping {user.name}.\\n" + RULES', params="q, user")),
    ]
    VALID = [Example(chat('RULES + f"\\nYou are helping {user.name}."', params="q, user"))]


class RetrievedContextBeforeStatic(DynamicBeforeStatic):
    """Retrieved context (RAG chunks, search results, documents) sits ahead of static text.

    Retrieval results differ per query. Static guidelines placed after them are re-prefilled on
    every request; chunks are large, so this is often the most expensive layout mistake.

    Fix: put the static guidelines first and the retrieved context after them (or in the user turn).

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX105"
    name = "retrieved-context-before-static"
    kind = DynamicKind.RETRIEVED_CONTEXT
    INVALID = [
        bad(
            chat(
                '"Context:\\n" + "\\n".join(d.page_content for d in docs) + "\\n" + RULES',
                before="    docs = store.similarity_search(q, k=4)\n",
                params="q, store",
            )
        ),
    ]
    VALID = [
        Example(
            chat(
                'RULES + "\\nContext:\\n" + "\\n".join(docs)',
                before="    docs = store.similarity_search(q, k=4)\n",
                params="q, store",
            )
        )
    ]


class ToolOutputBeforeStatic(DynamicBeforeStatic):
    """Tool or function output sits ahead of static text.

    Tool results change per call; instructions placed after them lose the cache.

    Fix: send tool results as tool messages after the conversation, and keep instructions first.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX106"
    name = "tool-output-before-static"
    kind = DynamicKind.TOOL_OUTPUT
    INVALID = [bad(chat('f"Observation: {observation}\\n" + RULES', params="q, observation"))]
    VALID = [Example(chat('RULES + f"\\nObservation: {observation}"', params="q, observation"))]


class MemoryBeforeStatic(DynamicBeforeStatic):
    """Memory (summaries, long-term facts, agent state) sits ahead of static text.

    Memory grows or changes between turns; anything static after it is re-prefilled.

    Fix: keep the static instructions first and append memory after them.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX107"
    name = "memory-before-static"
    kind = DynamicKind.MEMORY
    INVALID = [bad(chat('f"Known facts: {memory}\\n" + RULES', params="q, memory"))]
    VALID = [Example(chat('RULES + f"\\nKnown facts: {memory}"', params="q, memory"))]


class EnvironmentBeforeStatic(DynamicBeforeStatic):
    """An environment value (hostname, pid, cwd, environment variable) sits ahead of static text.

    These differ between replicas and runs, so a shared cache is split per host or process.

    Fix: leave them out of the prompt, or place them after the static text.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX108"
    name = "environment-before-static"
    kind = DynamicKind.ENVIRONMENT
    INVALID = [bad(chat('f"Host: {socket.gethostname()}\\n" + RULES', imports="import socket\n"))]
    VALID = [Example(chat('RULES + f"\\nHost: {socket.gethostname()}"', imports="import socket\n"))]


_PLAN_NOTE = '[tool.prefixlint]\ndynamic-sources = [{pattern = "plans.current_note", kind = "unknown"}]\n'


class UnknownBeforeStatic(DynamicBeforeStatic):
    """A value computed per request, of a kind prefixlint cannot name, sits ahead of static text.

    The analysis knows the value changes between requests (the user's own input placed ahead of the
    instructions, a configured ``dynamic-sources`` call of kind ``unknown``, a value derived from a
    per-request one) but not what it is. The static text after it is never cached. A value whose
    nature is not known at all (an attribute read, a parameter with no visible caller) is not this
    rule: it is PFX120, which never claims the value is computed per request.

    Fix: move it after the static text; if it is in fact constant, make it a module constant.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX109"
    name = "unknown-before-static"
    kind = DynamicKind.UNKNOWN

    def matches(self, seg: Segment) -> bool:
        # the user's own input (a question, a topic) is as unknown in content and changes per request
        return seg.kind in (DynamicKind.UNKNOWN, DynamicKind.USER_INPUT) and seg.timing is self.timing

    INVALID = [
        bad(chat('f"Question: {question}\\n" + RULES', params="question", user='"Answer now."')),
        bad(
            chat('f"Plan: {plans.current_note()}\\n" + RULES', imports="import plans\n"),
            files={"pyproject.toml": _PLAN_NOTE},
        ),
    ]
    VALID = [
        Example(
            chat('f"{PREAMBLE}\\n{RULES}"', before="", imports='PREAMBLE = "Harbor v2."\n'),
            note="an f-string over module constants",
        ),
        Example(
            chat('RULES + f"\\nPlan: {plans.current_note()}"', imports="import plans\n"),
            files={"pyproject.toml": _PLAN_NOTE},
            note="the value comes after the static text",
        ),
    ]
