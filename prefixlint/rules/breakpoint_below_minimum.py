"""PFX505: a ``cache_control`` breakpoint asks for caching, but the prefix is below the model's minimum."""

from __future__ import annotations

from collections.abc import Iterable

from prefixlint.model.findings import Finding, Severity
from prefixlint.model.layout import Layout
from prefixlint.model.providers import get_provider
from prefixlint.rules._payload_examples import LONG_RULES, as_json, claude_body, line_of, text_block
from prefixlint.rules.base import Example, Rule, RuleContext

# Counts for models without a public tokenizer are estimates (o200k). The finding is given only when
# the estimate, raised by this factor, is still below the minimum: newer Claude tokenizers produce up
# to about a third more tokens for the same text.
ESTIMATE_MARGIN = 1.35

_SHORT = as_json(claude_body([text_block("You are a terse assistant. Answer in one line.", "5m")]))
_HAIKU = as_json(
    claude_body([text_block(LONG_RULES, "1h")], model="claude-haiku-4-5"),
)
_AUTO = as_json(claude_body([text_block("Be brief.")], cache_control={"type": "ephemeral"}))


class BreakpointBelowMinimum(Rule):
    """A ``cache_control`` breakpoint asks for caching, but the prefix up to it is below the minimum.

    Anthropic caches a prefix only from a per-model minimum length on (1,024 tokens for Claude
    Sonnet 4.5, 4,096 for Haiku 4.5 and Opus 4.5, 2,048 for Haiku 3.5; see ``providers.toml``). A
    shorter prefix is processed without caching even though a breakpoint asks for it: nothing is
    written, nothing is ever read, and the breakpoint only takes one of the four slots. The finding is
    given when the last breakpoint (the longest prefix) is too short, so the request caches nothing.
    Counts for Claude are estimates, so the estimate must stay below the minimum even when raised by
    a third. The rule reads rendered payloads, whose text is exactly what was sent.

    Fix: put the breakpoint after enough static content to reach the minimum (more tools or system
    text ahead of it), or drop it.

    Fix safety: There is no automatic fix: whether to move the breakpoint after more static content
    or to drop it is a choice about the request's structure, and a payload file has no source to
    edit.
    """

    code = "PFX505"
    name = "breakpoint-below-minimum"
    default_severity = Severity.LOW
    INVALID = [
        Example(_SHORT, path="request.json", line=line_of(_SHORT, '"cache_control"')),
        Example(_HAIKU, path="haiku_request.json", line=line_of(_HAIKU, '"cache_control"')),
        Example(_AUTO, path="auto_request.json", line=line_of(_AUTO, '"cache_control"')),
    ]
    VALID = [
        Example(as_json(claude_body([text_block(LONG_RULES * 3, "5m")])), path="request.json"),
        Example(as_json(claude_body([text_block("Be brief.")])), path="request.json", note="no breakpoint"),
    ]

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        bps = layout.breakpoints()
        if not bps or layout.samples == 0:
            return  # rendered payloads only: their text is exactly what was sent
        try:
            rules = get_provider(layout.provider).rules_for(layout.model)
        except ValueError:
            return
        minimum = rules.min_cacheable_tokens
        last, cc = bps[-1]
        if not rules.supports_caching or minimum <= 1 or cc.location is None:
            return
        head = layout.segments[: last + 1]
        prefix = sum(s.tokens for s in head)
        if prefix * (1 if layout.tokens_exact else ESTIMATE_MARGIN) >= minimum:
            return
        approx = "" if layout.tokens_exact else "~"
        model = layout.model or rules.provider
        yield self.finding(
            cc.location,
            None,
            ctx,
            message=(
                f"cache_control asks to cache a prefix of {approx}{prefix:,} tokens, below the "
                f"{minimum:,}-token minimum of {model}: nothing is cached. Put the breakpoint after "
                f"at least {minimum:,} tokens of static content, or drop it."
            ),
        )
