"""Shared base for the rules about a dynamic value ahead of static text (PFX1xx, PFX201)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import ClassVar

from prefixlint.model.edits import Applicability, Fix
from prefixlint.model.findings import Finding, Impact, Severity
from prefixlint.model.layout import DynamicKind, Layout, Segment, SourceLocation, Timing
from prefixlint.rules.base import Rule, RuleContext
from prefixlint.rules.cost import cardinality, coarse, cost_words, granularity_words, severity_cap
from prefixlint.rules.impact import LAST_MESSAGE_MIN_STATIC_TOKENS, breaking_values, impact_at

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
    """Add the chain (origin -> sink), confidence, fix and what is known of the value to a finding."""
    chain = clean_chain((*seg.chain, *((layout.sink,) if layout.sink else ())), finding.location)
    card = cardinality(seg)
    return replace(
        finding,
        chain=chain,
        confidence=seg.confidence,
        fix=fix,
        snippet=seg.label or seg.text,
        extra={
            "kind": (seg.kind or DynamicKind.UNKNOWN).value,
            "timing": seg.timing.value,
            "granularity": seg.granularity.value if seg.granularity else None,
            "cardinality": card.value if card else None,
            "sink": layout.sink_name,
            "conditional": seg.conditional,
        },
    )


def with_also(finding: Finding, others: Sequence[Segment], alternatives: Sequence[Fix] = ()) -> Finding:
    """``finding`` with the other values of the same cause in the same prompt listed in ``also``, and
    fixes it offers besides its own in ``alternative_fixes`` (shown, never applied)."""
    extra = dict(finding.extra)
    seen = {(finding.location.path, finding.location.line, finding.location.col)}
    also = []
    for seg in others:
        loc = seg.location
        if loc is None or (loc.path, loc.line, loc.col) in seen:
            continue
        seen.add((loc.path, loc.line, loc.col))
        also.append(
            {
                "path": loc.path,
                "line": loc.line,
                "col": loc.col,
                "label": label_of(seg),
                "kind": (seg.kind or DynamicKind.UNKNOWN).value,
            }
        )
    if also:
        extra["also"] = also
    if alternatives:
        extra["alternative_fixes"] = [
            {"message": f.message, "applicability": f.applicability.value, "purpose": f.purpose}
            for f in alternatives
        ]
    return replace(finding, extra=extra)


def label_of(seg: Segment) -> str:
    what = KIND_WORDS.get(seg.kind or DynamicKind.UNKNOWN, "value")
    return (seg.label or seg.text or what).strip()[:60]


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


# Fewer static tokens than this after a value (a label such as ``Output:``, a closing sentence or
# two) are not worth moving it for: nothing is reported unless conversation history follows it.
# About a paragraph, the bar of the labelled dev set and of the last-user-message rule
# (``impact.LAST_MESSAGE_MIN_STATIC_TOKENS``); less is under one block of a provider's cache
# (OpenAI extends a cached prefix in 128-token steps), so moving the value gains one block at most.
MIN_STATIC_TOKENS_AFTER = LAST_MESSAGE_MIN_STATIC_TOKENS


class DynamicBeforeStatic(Rule):
    """Base: a dynamic value of ``kind`` computed at ``timing`` with static text after it.

    One finding per prompt (layout): the first matching value that sits ahead of static text, with
    the later ones of the same rule listed in its ``also``. Severity follows the tokens at stake and
    the value's cost (:mod:`prefixlint.rules.cost`).
    """

    kind: ClassVar[DynamicKind]
    timing: ClassVar[Timing] = Timing.REQUEST
    fix_applicability = Applicability.UNSAFE
    default_severity = Severity.HIGH

    def matches(self, seg: Segment) -> bool:
        return seg.kind is self.kind and seg.timing is self.timing and not coarse(seg)

    def reportable(self, impact: Impact, ctx: RuleContext) -> bool:
        """Whether a matching value with this impact is reported: a static body worth moving it
        for follows it (:data:`MIN_STATIC_TOKENS_AFTER`), or conversation history does."""
        if impact.history_follows:
            return impact.tokens_lost > 0
        return impact.tokens_lost >= MIN_STATIC_TOKENS_AFTER

    def when(self, seg: Segment) -> str:
        """What is known of when the value is computed, as the message says it."""
        return "is computed per request" if seg.timing is Timing.REQUEST else "is computed once per process"

    def advice(self, seg: Segment, impact: Impact) -> str:
        return (
            "Move it after the static text"
            + (" or into the last user message" if impact.history_priced else "")
            + "."
        )

    def message(self, layout: Layout, index: int, seg: Segment, impact: Impact) -> str:
        what = KIND_WORDS.get(seg.kind or DynamicKind.UNKNOWN, "value")
        label = label_of(seg)
        if layout.samples > 1:
            return _varies_message(layout, index, what, label, impact.describe())
        maybe = " (conditionally)" if seg.conditional else ""
        cost = cost_words(seg) if seg.timing is Timing.REQUEST else ""
        return (
            f"{what.capitalize()} `{label}`{granularity_words(seg)} {self.when(seg)} ahead of static "
            f"text{maybe}"
            + (f"; {cost}" if cost else "")
            + f": {impact.describe()}. "
            + self.advice(seg, impact)
        )

    def fixes(self, seg: Segment) -> tuple[Fix | None, list[Fix]]:
        """The fix to apply and the alternatives to show."""
        return pick_fix(seg, "move-to-end"), []

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        hits: list[tuple[int, Segment, Impact]] = []
        for i, seg in breaking_values(layout):
            if not self.matches(seg) or seg.location is None:
                continue
            impact = impact_at(layout, i, ctx.settings)
            if self.reportable(impact, ctx):
                hits.append((i, seg, impact))
        if not hits:
            return
        i, seg, impact = hits[0]
        message = self.message(layout, i, seg, impact)
        where = seg.site or seg.location  # a value in an included template: the include to move
        finding = self.finding(where, impact, ctx, message=message, cap=severity_cap(seg))  # type: ignore[arg-type]
        fix, alternatives = self.fixes(seg)
        finding = decorate(finding, layout, seg, fix)
        yield with_also(finding, [s for _, s, _ in hits[1:]], alternatives)
