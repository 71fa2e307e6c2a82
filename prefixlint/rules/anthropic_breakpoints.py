"""PFX501-PFX503: Anthropic ``cache_control`` breakpoints that the API rejects or that cannot hit."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from prefixlint.model.findings import Finding, Severity
from prefixlint.model.layout import DynamicKind, Layout
from prefixlint.model.providers import get_provider
from prefixlint.rules._examples import bad
from prefixlint.rules.base import Example, Rule, RuleContext
from prefixlint.rules.impact import impact_at

_HEAD = "import anthropic\n\nclient = anthropic.Anthropic()\n\n\n"


def _block(text: str, cc: str | None) -> str:
    return '{"type": "text", "text": ' + text + (f', "cache_control": {cc}' if cc else "") + "}"


def _call(blocks: list[str], params: str = "q") -> str:
    return (
        _HEAD + f"def ask({params}):\n"
        '    return client.messages.create(model="claude-sonnet-4-5", max_tokens=300, system=[\n'
        + "".join(f"        {b},\n" for b in blocks)
        + '    ], messages=[{"role": "user", "content": q}])\n'
    )


_EPH = '{"type": "ephemeral"}'
_1H = '{"type": "ephemeral", "ttl": "1h"}'


_LAST_TURN = (
    "from datetime import datetime\n\n" + _HEAD + "def ask(history, q):\n"
    '    return client.messages.create(model="claude-sonnet-4-5", max_tokens=300, system="Be brief.", '
    'messages=[*history, {"role": "user", "content": [{"type": "text", "text": f"{datetime.now()}: {q}", '
    '"cache_control": {"type": "ephemeral"}}]}])\n'
)


def _max_breakpoints(layout: Layout) -> int:
    try:
        return get_provider(layout.provider).rules_for(layout.model).max_breakpoints
    except ValueError:
        return 0


class TooManyBreakpoints(Rule):
    """More ``cache_control`` breakpoints than the provider allows (4 for Anthropic).

    Anthropic rejects a request with more than four cache breakpoints. The request fails rather
    than missing the cache.

    Fix: keep at most four breakpoints; put them at the ends of the largest stable sections.

    Fix safety: There is no automatic fix: which breakpoints to keep depends on the size and
    lifetime of each section, which the code does not say.
    """

    code = "PFX501"
    name = "too-many-breakpoints"
    default_severity = Severity.HIGH
    INVALID = [
        bad(_call([_block(f'"part {i}"', _EPH) for i in range(5)]), marker="part 4", provider="anthropic")
    ]
    VALID = [Example(_call([_block(f'"part {i}"', _EPH) for i in range(4)]), provider="anthropic")]

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        limit = _max_breakpoints(layout)
        bps = layout.breakpoints()
        if limit <= 0 or len(bps) <= limit:
            return
        _, cc = bps[limit]
        loc = cc.location or layout.sink
        if loc is None:
            return
        yield Finding(
            self.code,
            f"{len(bps)} cache_control breakpoints; the provider allows at most {limit}, "
            "so the request is rejected.",
            loc,
            Severity.HIGH,
            rule_name=self.name,
            chain=(layout.sink,) if layout.sink else (),
        )


class LongTtlAfterShort(Rule):
    """A ``ttl: "1h"`` breakpoint comes after a 5-minute one.

    Anthropic requires longer TTLs to come first: a 1-hour breakpoint after a 5-minute breakpoint
    is rejected. A bare ``{"type": "ephemeral"}`` counts as 5 minutes.

    Fix: order breakpoints from the longest TTL to the shortest.

    Fix safety: There is no automatic fix: putting the longer TTL first means reordering the blocks
    of the request, which changes the prompt.
    """

    code = "PFX502"
    name = "ttl-order"
    default_severity = Severity.HIGH
    INVALID = [
        bad(
            _call([_block('"rules"', _EPH), _block('"more rules"', _1H)]), marker='"1h"', provider="anthropic"
        )
    ]
    VALID = [Example(_call([_block('"rules"', _1H), _block('"more rules"', _EPH)]), provider="anthropic")]

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        seen_short = False
        for _, cc in layout.breakpoints():
            if cc.ttl in ("5m", "300s", "300"):
                seen_short = True
            elif cc.ttl in ("1h", "3600s", "60m") and seen_short:
                loc = cc.location or layout.sink
                if loc is not None:
                    yield Finding(
                        self.code,
                        'A `ttl: "1h"` breakpoint follows a 5-minute breakpoint; longer '
                        "TTLs must come first, so the request is rejected.",
                        loc,
                        Severity.HIGH,
                        rule_name=self.name,
                        chain=(layout.sink,) if layout.sink else (),
                    )


class BreakpointOnDynamic(Rule):
    """A ``cache_control`` breakpoint sits on a block that holds per-request content.

    The breakpoint writes a cache entry ending with that block. When the block changes on every
    request, the entry is never read again: each request pays the cache-write premium for nothing.

    Fix: put the breakpoint on the last static block, before the dynamic content.

    Fix safety: There is no automatic fix: moving the breakpoint to another block changes which
    prefix is cached and what each request pays; the author chooses the block.
    """

    code = "PFX503"
    name = "breakpoint-on-dynamic"
    INVALID = [
        bad(
            _call([_block('"rules"', None), _block('f"Today is {date.today()}"', _EPH)]).replace(
                "import anthropic\n", "from datetime import date\n\nimport anthropic\n"
            ),
            marker="Today is",
            provider="anthropic",
        )
    ]
    VALID = [
        Example(
            _call([_block('"rules"', _EPH), _block('f"Today is {date.today()}"', None)]).replace(
                "import anthropic\n", "from datetime import date\n\nimport anthropic\n"
            ),
            provider="anthropic",
        ),
        Example(
            _LAST_TURN, provider="anthropic", note="a breakpoint on the new turn caches the conversation"
        ),
    ]

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        segs = layout.segments
        for i, cc in layout.breakpoints():
            seg = segs[i]
            if seg.is_last_user_message or seg.role in ("user", "assistant", "history", "tool"):
                continue  # a conversation turn is re-sent unchanged next turn: caching it is right
            block = [
                j
                for j in range(len(segs))
                if segs[j].section is seg.section and segs[j].message_index == seg.message_index and j <= i
            ]
            dyn = next(
                (
                    segs[j]
                    for j in block
                    if segs[j].per_request
                    and segs[j].kind not in (DynamicKind.HISTORY, DynamicKind.USER_INPUT)
                ),
                None,
            )
            if dyn is None:
                continue
            loc = cc.location or dyn.location or layout.sink
            if loc is None:
                continue
            impact = impact_at(layout, segs.index(dyn), ctx.settings)
            finding = self.finding(
                loc,
                impact,
                ctx,
                message=(
                    f"cache_control marks a block holding `{(dyn.label or dyn.text)[:50]}`, "
                    "which changes per request: "
                    "the cache entry is written on every request and never read."
                ),
            )
            yield replace(finding, chain=tuple(x for x in (dyn.location, layout.sink) if x is not None))
