"""What a replay produces: sums that merge, so partitions replayed apart add up to one audit.

Every field is a count, a sum or a bounded list of examples; :meth:`AuditSummary.merge` is
associative, which is what lets ``--workers`` and Dask replay partitions anywhere and fold the results.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Lower edges (tokens) of the divergence-position histogram bins.
POSITION_BINS = (0, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
TIMELINE_STEP = 60.0  # seconds per timeline bucket
MAX_EXAMPLES = 3
MAX_SITES = 200
MAX_TEMPLATES = 500


def position_bin(tokens: int) -> int:
    """The lower edge of the histogram bin of a divergence at token ``tokens``."""
    edge = 0
    for b in POSITION_BINS:
        if tokens >= b:
            edge = b
    return edge


def _add(a: list[float], b: list[float]) -> None:
    for i, v in enumerate(b):
        a[i] += v


@dataclass
class ModelStats:
    """Sums for one provider and model (token counts are local counts unless named reported)."""

    requests: int = 0
    prompt: int = 0
    simulated: int = 0
    fixed: int = 0
    written: int = 0
    fixed_written: int = 0
    reported_requests: int = 0
    reported_prompt: int = 0
    reported_cached: int = 0
    simulated_on_reported: int = 0  # simulated cached tokens of the requests with usage
    prompt_on_reported: int = 0  # their local prompt tokens
    cost_uncached: float = 0.0
    cost_now: float = 0.0
    cost_fixed: float = 0.0
    cost_reported: float = 0.0
    tokens_exact: bool = True

    def merge(self, o: ModelStats) -> None:
        for name in self.__dataclass_fields__:
            if name == "tokens_exact":
                self.tokens_exact = self.tokens_exact and o.tokens_exact
            else:
                setattr(self, name, getattr(self, name) + getattr(o, name))

    def rates(self) -> dict[str, Any]:
        """Hit rates as fractions of prompt tokens (``None`` where nothing was reported)."""
        sim = self.simulated / self.prompt if self.prompt else 0.0
        rep = self.reported_cached / self.reported_prompt if self.reported_prompt else None
        sim_rep = self.simulated_on_reported / self.prompt_on_reported if self.prompt_on_reported else None
        return {
            "simulated": sim,
            "reported": rep,
            "simulated_on_reported": sim_rep,
            "gap": (rep - sim_rep) if rep is not None and sim_rep is not None else None,
            "fixed": self.fixed / self.prompt if self.prompt else 0.0,
        }


@dataclass
class CauseStats:
    requests: int = 0
    tokens_lost: int = 0
    usd_lost: float = 0.0
    examples: list[dict[str, Any]] = field(default_factory=list)

    def merge(self, o: CauseStats) -> None:
        self.requests += o.requests
        self.tokens_lost += o.tokens_lost
        self.usd_lost += o.usd_lost
        self.examples.extend(o.examples[: MAX_EXAMPLES - len(self.examples)])


@dataclass
class SiteStats:
    """One divergence site: a template, where in the request, and what kind of text."""

    template: str
    section: str
    role: str
    kind: str
    count: int = 0
    tokens_lost: int = 0
    position_sum: int = 0
    example: dict[str, Any] = field(default_factory=dict)

    def merge(self, o: SiteStats) -> None:
        self.count += o.count
        self.tokens_lost += o.tokens_lost
        self.position_sum += o.position_sum
        if not self.example:
            self.example = o.example


@dataclass
class AuditSummary:
    """The mergeable result of replaying one or more partitions."""

    requests: int = 0
    models: dict[tuple[str, str], ModelStats] = field(default_factory=dict)
    tenants: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)
    templates: dict[str, list[float]] = field(default_factory=dict)
    causes: dict[str, CauseStats] = field(default_factory=dict)
    sites: dict[tuple[str, str, str, str], SiteStats] = field(default_factory=dict)
    flags: Counter[str] = field(default_factory=Counter)
    verdicts: Counter[str] = field(default_factory=Counter)
    positions: Counter[int] = field(default_factory=Counter)
    timeline: dict[int, list[float]] = field(default_factory=dict)
    capacity: dict[tuple[str, str], dict[int, list[int]]] = field(default_factory=dict)
    sessions: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)
    verdict_examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def model(self, provider: str, model: str) -> ModelStats:
        key = (provider, model)
        s = self.models.get(key)
        if s is None:
            s = self.models[key] = ModelStats()
        return s

    def cause(self, name: str, tokens: int, usd: float, example: dict[str, Any] | None) -> None:
        c = self.causes.get(name)
        if c is None:
            c = self.causes[name] = CauseStats()
        c.requests += 1
        c.tokens_lost += tokens
        c.usd_lost += usd
        if example is not None and len(c.examples) < MAX_EXAMPLES:
            c.examples.append(example)

    def site(
        self, key: tuple[str, str, str, str], tokens: int, position: int, example: dict[str, Any]
    ) -> None:
        s = self.sites.get(key)
        if s is None:
            s = self.sites[key] = SiteStats(*key, example=example)
        s.count += 1
        s.tokens_lost += tokens
        s.position_sum += position
        self.positions[position_bin(position)] += 1

    def verdict(self, name: str, example: dict[str, Any]) -> None:
        self.verdicts[name] += 1
        if name.startswith("unexpected"):
            ex = self.verdict_examples.setdefault(name, [])
            if len(ex) < MAX_EXAMPLES:
                ex.append(example)

    def merge(self, o: AuditSummary) -> AuditSummary:
        self.requests += o.requests
        for k, m in o.models.items():
            self.model(*k).merge(m)
        for d_self, d_o in (
            (self.tenants, o.tenants),
            (self.templates, o.templates),
            (self.timeline, o.timeline),
        ):
            for k, v in d_o.items():  # type: ignore[attr-defined]
                if k in d_self:
                    _add(d_self[k], v)  # type: ignore[index]
                else:
                    d_self[k] = list(v)  # type: ignore[index]
        for k, c in o.causes.items():
            self.causes.setdefault(k, CauseStats()).merge(c)
        for k, s in o.sites.items():
            if k in self.sites:
                self.sites[k].merge(s)
            else:
                self.sites[k] = s
        for k2, curve in o.capacity.items():
            mine = self.capacity.setdefault(k2, {})
            for cap, v in curve.items():
                if cap in mine:
                    _add(mine[cap], v)  # type: ignore[arg-type]
                else:
                    mine[cap] = list(v)
        for mine_c, other_c in (
            (self.flags, o.flags),
            (self.verdicts, o.verdicts),
            (self.positions, o.positions),
            (self.sessions, o.sessions),
            (self.notes, o.notes),
        ):
            mine_c.update(other_c)
        for k, ex in o.verdict_examples.items():
            mine_ex = self.verdict_examples.setdefault(k, [])
            mine_ex.extend(ex[: MAX_EXAMPLES - len(mine_ex)])
        self.trim()
        return self

    def trim(self) -> None:
        """Keep the sites and templates that matter most (bounded memory when merging many partitions)."""
        if len(self.sites) > MAX_SITES:
            keep = sorted(self.sites.items(), key=lambda kv: (-kv[1].tokens_lost, -kv[1].count))[:MAX_SITES]
            self.sites = dict(keep)
        if len(self.templates) > MAX_TEMPLATES:
            keep_t = sorted(self.templates.items(), key=lambda kv: -kv[1][1])[:MAX_TEMPLATES]
            self.templates = dict(keep_t)
