"""PFX110: text that looks per-request (a timestamp, a uuid...) early in a rendered payload."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from prefixlint.model.findings import Finding
from prefixlint.model.json_text import locate_in_string
from prefixlint.model.layout import Layout, Section
from prefixlint.model.tokens import tokenizer_for
from prefixlint.model.volatile_patterns import find_volatile
from prefixlint.rules._examples import RULES
from prefixlint.rules._payload_examples import (
    LONG_RULES,
    WEATHER_TOOL,
    as_json,
    as_jsonl,
    chat_body,
    claude_body,
    line_of,
    text_block,
)
from prefixlint.rules.base import Example, Rule, RuleContext
from prefixlint.rules.impact import impact_at

# Static tokens that must follow a match for it to be worth a finding: one step of OpenAI's cache.
MIN_TAIL_TOKENS = 128
# Words that, shortly before a match, make it an example of a format rather than a value.
_EXAMPLE = re.compile(r"(?i)\b(?:e\.?g\.?|i\.e\.|example|such as|like|format|formatted|pattern)\b")

_STAMPED = as_json(chat_body(f"Current time: 2026-11-29T10:15:03Z.\n{LONG_RULES}"))
_TRACED = as_json(
    claude_body(
        [
            text_block("Trace 4bf92f3577b34da6a3ce929d0e0e4736 for the support desk."),
            text_block(LONG_RULES, "5m"),
        ]
    )
)


class VolatilePatternBeforeStatic(Rule):
    """A value that looks per-request sits early in a rendered payload, ahead of a long static tail.

    A rendered request payload carries no code to say where its text came from; its text is all there
    is. A timestamp with a time of day, a UUID, a long hexadecimal or prefixed id, a JSON Web Token or
    a long run of digits in the system prompt usually changes on every request, and then no request
    can reuse the cached tokens after it. The patterns live in the catalog (``[[volatile-patterns]]``
    in ``data/catalog.toml``), each with texts it must and must not match.

    Only the system prompt, the instructions and developer messages are searched: tool schemas hold
    example values, earlier turns of the conversation stay fixed as it grows, and the new user turn is
    where per-request values belong. A value shortly after "e.g.", "for example", "such as", "like" or
    "format" is an example, not a value. A match needs at least 128 static tokens after it. When
    several payloads of one template are checked together (the lines of a JSON Lines file, or the
    payload files of a directory), what actually varies between them is reported instead
    (PFX101-PFX109), and this rule stays silent.

    Fix: move the value into the last user message, or leave it out of the prompt.

    Fix safety: There is no automatic fix: a rendered payload is what was sent, not the code that
    built it, so there is no source to edit; the change belongs where the payload is built.
    """

    code = "PFX110"
    name = "volatile-pattern-before-static"
    INVALID = [
        Example(_STAMPED, path="request.json", line=line_of(_STAMPED, "2026-11-29")),
        Example(_TRACED, path="claude_request.json", line=line_of(_TRACED, "4bf92f")),
    ]
    VALID = [
        Example(
            as_json(
                chat_body(LONG_RULES, user="Current time: 2026-11-29T10:15:03Z. How do I add an employee?")
            ),
            path="request.json",
            note="the timestamp travels in the last user message",
        ),
        Example(
            as_json(chat_body(f"Knowledge cutoff: 2024-06-01.\n{LONG_RULES}", tools=[WEATHER_TOOL])),
            path="request.json",
            note="a date alone changes once a day at most",
        ),
        Example(
            as_json(chat_body(f"{LONG_RULES}\nCurrent time: 2026-11-29T10:15:03Z.")),
            path="request.json",
            note="nothing static follows the timestamp",
        ),
        Example(
            as_json(chat_body(f"Write times in ISO 8601, e.g. 2026-01-01T09:30:00Z.\n{LONG_RULES}")),
            path="request.json",
            note="an example of a format",
        ),
        Example(
            as_json(
                chat_body(
                    LONG_RULES,
                    tools=[
                        {
                            "type": "function",
                            "function": {
                                "name": "book_slot",
                                "description": "Book a slot starting at 2026-11-29T10:15:00Z or later.",
                                "parameters": {"type": "object"},
                            },
                        }
                    ],
                )
            ),
            path="request.json",
            note="a tool schema holds examples, not per-request values",
        ),
        Example(
            as_json(
                {
                    "model": "gpt-4.1",
                    "messages": [
                        {"role": "system", "content": LONG_RULES},
                        {"role": "user", "content": "Order 100482739201774 is late."},
                        {"role": "assistant", "content": f"Sorry about that. {RULES}"},
                        {"role": "user", "content": "When will it arrive?"},
                    ],
                }
            ),
            path="request.json",
            note="an earlier turn of the conversation stays fixed as it grows",
        ),
        Example(
            as_jsonl(
                [
                    chat_body(f"Build 4bf92f3577b34da6a3ce929d0e0e4736.\n{LONG_RULES}", user=q)
                    for q in ("a?", "b?")
                ]
            ),
            path="requests.jsonl",
            note="two samples show the id does not change",
        ),
    ]

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        if layout.samples != 1:
            return
        tok = None
        for i, seg in enumerate(layout.segments):
            if not seg.static or seg.section is not Section.SYSTEM or seg.is_last_user_message:
                continue
            if seg.location is None or not seg.text:
                continue
            for match in find_volatile(seg.text):
                if _EXAMPLE.search(seg.text, max(0, match.start - 40), match.start):
                    continue  # "dates look like 2026-01-01T00:00:00Z": an example, not a value
                tok = tok or tokenizer_for(layout.provider, layout.model)
                base = impact_at(layout, i, ctx.settings)
                lost = base.tokens_lost + tok.count(seg.text[match.end :])
                if lost < MIN_TAIL_TOKENS:
                    continue
                overhead = max(0, seg.tokens - tok.count(seg.text))  # the message's role markers
                impact = replace(
                    base,
                    tokens_lost=lost,
                    prefix_tokens=base.prefix_tokens + overhead + tok.count(seg.text[: match.start]),
                )
                impact = replace(impact, reaches_minimum=impact.prefix_tokens >= impact.minimum)
                location = (
                    locate_in_string(ctx.source, seg.location, match.start, match.end) if ctx.source else None
                )
                message = (
                    f"`{match.text}` in {seg.label or seg.section.value} looks like "
                    f"{match.pattern.description}, which usually changes on every request: "
                    f"{impact.describe()}. If it changes, move it into the last user message."
                )
                finding = self.finding(location or seg.location, impact, ctx, message=message)
                yield replace(
                    finding,
                    confidence=0.7,
                    snippet=match.text,
                    extra={"pattern": match.pattern.name, "kind": match.pattern.kind.value},
                )
