"""Shared base for the rules about a dynamic value ahead of static text (PFX1xx, PFX201)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import ClassVar

from prefixlint.model.edits import Applicability, Fix
from prefixlint.model.findings import Finding
from prefixlint.model.layout import DynamicKind, Layout, Segment, SourceLocation, Timing
from prefixlint.rules.base import Rule, RuleContext
from prefixlint.rules.impact import breaking_values, impact_at

KIND_WORDS = {
    DynamicKind.TIMESTAMP: "timestamp",
    DynamicKind.IDENTIFIER: "identifier",
    DynamicKind.RANDOM: "random value",
    DynamicKind.USER_IDENTITY: "user or tenant identity",
    DynamicKind.RETRIEVED_CONTEXT: "retrieved context",
    DynamicKind.TOOL_OUTPUT: "tool output",
    DynamicKind.MEMORY: "memory",
    DynamicKind.ENVIRONMENT: "environment value",
    DynamicKind.UNKNOWN: "interpolated value",
    DynamicKind.USER_INPUT: "user input",
}


def pick_fix(seg: Segment, purpose: str) -> Fix | None:
    return next((f for f in seg.fixes if f.purpose == purpose), None)


def decorate(finding: Finding, layout: Layout, seg: Segment, fix: Fix | None) -> Finding:
    """Add the chain (origin -> sink), confidence and fix to a finding."""
    chain = clean_chain((*seg.chain, *((layout.sink,) if layout.sink else ())), finding.location)
    return replace(
        finding,
        chain=chain,
        confidence=seg.confidence,
        fix=fix,
        snippet=seg.label or seg.text,
        extra={
            "kind": (seg.kind or DynamicKind.UNKNOWN).value,
            "timing": seg.timing.value,
            "sink": layout.sink_name,
            "conditional": seg.conditional,
        },
    )


def clean_chain(chain: tuple[SourceLocation, ...], location: SourceLocation) -> tuple[SourceLocation, ...]:
    """The chain without repeats and without the finding's own location, in first-seen order."""
    seen = {(location.path, location.line, location.col)}
    out = []
    for loc in chain:
        key = (loc.path, loc.line, loc.col)
        if key not in seen:
            seen.add(key)
            out.append(loc)
    return tuple(out)


def _varies_message(layout: Layout, index: int, what: str, label: str, impact: str) -> str:
    """The message for a span seen to vary between aligned payload samples."""
    first = layout.first_breaking_index()
    stable = layout.tokens_before(first if first is not None else index)
    approx = "" if layout.tokens_exact else "~"
    what = "value" if what == "interpolated value" else what
    return (
        f"{what.capitalize()} `{label}` varies between the {layout.samples} samples ahead of static text: "
        f"{impact}; the samples share a stable prefix of {approx}{stable:,} tokens. "
        "Move it after the static text, into the last user message."
    )


class DynamicBeforeStatic(Rule):
    """Base: a dynamic value of ``kind`` computed at ``timing`` with static text after it."""

    kind: ClassVar[DynamicKind]
    timing: ClassVar[Timing] = Timing.REQUEST
    fix_applicability = Applicability.UNSAFE

    def matches(self, seg: Segment) -> bool:
        return seg.kind is self.kind and seg.timing is self.timing

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        for i, seg in breaking_values(layout):
            if not self.matches(seg) or seg.location is None:
                continue
            impact = impact_at(layout, i, ctx.settings)
            if impact.tokens_lost <= 0:
                continue
            what = KIND_WORDS.get(seg.kind or DynamicKind.UNKNOWN, "value")
            label = (seg.label or seg.text or what).strip()[:60]
            if layout.samples > 1:
                message = _varies_message(layout, i, what, label, impact.describe())
            else:
                when = "per request" if seg.timing is Timing.REQUEST else "once per process"
                maybe = " (conditionally)" if seg.conditional else ""
                message = (
                    f"{what.capitalize()} `{label}` is computed {when} ahead of static text{maybe}: "
                    f"{impact.describe()}. Move it after the static text"
                    + (" or into the last user message" if impact.history_priced else "")
                    + "."
                )
            finding = self.finding(seg.location, impact, ctx, message=message)
            yield decorate(finding, layout, seg, pick_fix(seg, "move-to-end"))
