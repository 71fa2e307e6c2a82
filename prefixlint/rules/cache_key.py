"""PFX504: an OpenAI ``prompt_cache_key`` built from a per-request value."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from prefixlint.model.findings import Finding, Severity
from prefixlint.model.layout import DynamicKind, Layout
from prefixlint.rules._examples import HEADER
from prefixlint.rules.base import Example, Rule, RuleContext

_CODE = (
    "import uuid\n" + HEADER + "\n\n"
    "def ask(q, user_id):\n"
    '    return client.chat.completions.create(model="gpt-4.1", messages=[{{"role": "user", "content": q}}], '
    "prompt_cache_key={key})\n"
)


# Ids that stay the same for a whole conversation or user, not per request.
_CONVERSATION_WORDS = ("session", "conversation", "thread", "chat", "user", "tenant", "customer", "org")


def _article(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


class PerRequestCacheKey(Rule):
    """``prompt_cache_key`` is built from a per-request value (uuid, timestamp, random).

    OpenAI routes requests with the same ``prompt_cache_key`` to the same cache. A key that is new
    on every request routes each request somewhere else, so it can never hit.

    Fix: use a stable key: the prompt version, the tenant, or the user id.

    Fix safety: There is no automatic fix: a stable key must follow what should share a cache (a
    tenant, a prompt version), which the code does not say.
    """

    code = "PFX504"
    name = "per-request-cache-key"
    default_severity = Severity.HIGH
    INVALID = [Example(_CODE.format(key="str(uuid.uuid4())"), line=8)]
    VALID = [
        Example(_CODE.format(key="user_id")),
        Example(_CODE.format(key='"harbor-v2"')),
        Example(_CODE.format(key='f"conv-{session_id}"').replace("q, user_id", "q, session_id")),
    ]

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        key = layout.cache_key
        if key is None or key.static or not key.per_request:
            return
        if key.kind not in (DynamicKind.IDENTIFIER, DynamicKind.TIMESTAMP, DynamicKind.RANDOM):
            return
        label = (key.label or key.text).lower()
        if key.kind is DynamicKind.IDENTIFIER and any(w in label for w in _CONVERSATION_WORDS):
            return  # one key per conversation is a sensible routing choice
        loc = key.location or layout.sink
        if loc is None:
            return
        finding = self.finding(
            loc,
            None,
            ctx,
            message=(
                f"prompt_cache_key is built from `{(key.label or key.text)[:50]}`, "
                f"{_article(key.kind.value)} "
                "that changes per request, so requests never share a cache entry. "
                "Use a stable key (prompt version, tenant or user)."
            ),
        )
        yield replace(finding, chain=(layout.sink,) if layout.sink else ())
