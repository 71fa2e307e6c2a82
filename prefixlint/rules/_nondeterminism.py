"""Shared base for serialization rules (PFX401-PFX403): bytes that differ for the same request."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from prefixlint.model.findings import Finding
from prefixlint.model.layout import DynamicKind, Layout, Nondeterminism
from prefixlint.rules._dynamic import decorate, pick_fix
from prefixlint.rules.base import Rule, RuleContext
from prefixlint.rules.impact import impact_at


class NondeterministicSerialization(Rule):
    """Base: a segment flagged with ``what`` ahead of (or inside) the cached prefix; not after a
    per-request value, which already ends the prefix two requests share."""

    what: ClassVar[Nondeterminism]
    fix_purpose: ClassVar[str] = ""
    detail: ClassVar[str] = ""

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        seen = set()
        for i, seg in enumerate(layout.segments):
            if seg.nondeterminism is not self.what or seg.is_last_user_message or seg.location is None:
                continue
            if seg.location in seen or _broken_before(layout, i):
                continue
            seen.add(seg.location)
            impact = impact_at(layout, i, ctx.settings)
            where = seg.section.value
            message = f"{self.detail} in the {where} section: {impact.describe()}."
            finding = self.finding(seg.location, impact, ctx, message=message)
            yield decorate(
                finding, layout, seg, pick_fix(seg, self.fix_purpose) if self.fix_purpose else None
            )


def _broken_before(layout: Layout, index: int) -> bool:
    """True when a value computed per request (not the append-only history) sits ahead of segment
    ``index``: its bytes never reach a prefix two requests share, so their order costs nothing more
    (the value ahead has its own finding)."""
    return any(s.per_request and s.kind is not DynamicKind.HISTORY for s in layout.segments[:index])
