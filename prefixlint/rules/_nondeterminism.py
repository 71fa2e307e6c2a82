"""Shared base for serialization rules (PFX401-PFX403): bytes that differ for the same request."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from prefixlint.model.findings import Finding
from prefixlint.model.layout import Layout, Nondeterminism
from prefixlint.rules._dynamic import decorate, pick_fix
from prefixlint.rules.base import Rule, RuleContext
from prefixlint.rules.impact import impact_at


class NondeterministicSerialization(Rule):
    """Base: a segment flagged with ``what`` ahead of (or inside) the cached prefix."""

    what: ClassVar[Nondeterminism]
    fix_purpose: ClassVar[str] = ""
    detail: ClassVar[str] = ""

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        seen = set()
        for i, seg in enumerate(layout.segments):
            if seg.nondeterminism is not self.what or seg.is_last_user_message or seg.location is None:
                continue
            if seg.location in seen:
                continue
            seen.add(seg.location)
            impact = impact_at(layout, i, ctx.settings)
            where = seg.section.value
            message = f"{self.detail} in the {where} section: {impact.describe()}."
            finding = self.finding(seg.location, impact, ctx, message=message)
            yield decorate(
                finding, layout, seg, pick_fix(seg, self.fix_purpose) if self.fix_purpose else None
            )
