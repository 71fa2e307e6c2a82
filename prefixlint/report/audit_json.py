"""The audit as a JSON document (``prefixlint audit --output-format json``); the other audit reporters
read this document too, so every number appears the same everywhere.

Top level: ``read``, ``used``, ``malformed`` (record counts), ``models`` (per provider and model, the
``simulated``, ``reported`` and ``fixed`` hit rates as fractions of prompt tokens), then the details.
"""

from __future__ import annotations

import json
from typing import Any

from prefixlint.audit.causes import CAUSES
from prefixlint.audit.run import AuditResult
from prefixlint.audit.summary import TIMELINE_STEP, AuditSummary, ModelStats

SCHEMA_VERSION = 1
MAX_TIMELINE = 240  # points of the hit-rate-over-time series


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _model_row(provider: str, model: str, m: ModelStats) -> dict[str, Any]:
    r = m.rates()
    return {
        "provider": provider,
        "model": model or None,
        "requests": m.requests,
        "prompt_tokens": m.prompt,
        "simulated": r["simulated"],
        "reported": r["reported"],
        "fixed": r["fixed"],
        "gap": r["gap"],
        "simulated_on_reported": r["simulated_on_reported"],
        "simulated_cached_tokens": m.simulated,
        "fixed_cached_tokens": m.fixed,
        "reported_requests": m.reported_requests,
        "reported_prompt_tokens": m.reported_prompt,
        "reported_cached_tokens": m.reported_cached,
        "cache_write_tokens": m.written,
        "tokens_exact": m.tokens_exact,
        "cost_usd": {
            "uncached": m.cost_uncached,
            "now": m.cost_now,
            "fixed": m.cost_fixed,
            "saving_if_fixed": m.cost_now - m.cost_fixed,
            "reported": m.cost_reported if m.reported_requests else None,
        },
    }


def _timeline(s: AuditSummary) -> list[dict[str, Any]]:
    if not s.timeline:
        return []
    keys = sorted(s.timeline)
    span = keys[-1] - keys[0] + 1
    step = max(1, -(-span // MAX_TIMELINE))
    bins: dict[int, list[float]] = {}
    for k in keys:
        b = keys[0] + (k - keys[0]) // step * step
        row = bins.setdefault(b, [0.0] * 7)
        for i, v in enumerate(s.timeline[k]):
            row[i] += v
    return [
        {
            "start": b * TIMELINE_STEP,
            "seconds": step * TIMELINE_STEP,
            "prompt_tokens": int(row[0]),
            "simulated": _ratio(row[1], row[0]),
            "fixed": _ratio(row[2], row[0]),
            "reported": _ratio(row[4], row[3]),
            "simulated_on_reported": _ratio(row[6], row[5]),
        }
        for b, row in sorted(bins.items())
    ]


def audit_document(result: AuditResult, top: int = 20) -> dict[str, Any]:
    """Everything the audit found, as plain JSON types."""
    s = result.summary
    inp = result.input
    total = ModelStats()
    for m in s.models.values():
        total.merge(m)
    models = [_model_row(p, m, st) for (p, m), st in sorted(s.models.items())]
    causes = [
        {
            "cause": name,
            "equivalent": CAUSES[name].equivalent if name in CAUSES else None,
            "meaning": CAUSES[name].meaning if name in CAUSES else "",
            "requests": c.requests,
            "tokens_lost": c.tokens_lost,
            "usd_lost": c.usd_lost,
            "examples": c.examples,
        }
        for name, c in sorted(s.causes.items(), key=lambda kv: (-kv[1].tokens_lost, -kv[1].requests, kv[0]))
    ]
    sites = sorted(s.sites.values(), key=lambda x: (-x.tokens_lost, -x.count))[:top]
    return {
        "version": SCHEMA_VERSION,
        "read": inp.read,
        "used": inp.used,
        "malformed": inp.malformed,
        "models": models,
        "total": _model_row("all", "", total),
        "records": inp.to_dict(),
        "prices": result.options.prices.describe(),
        "causes": causes,
        "flags": [
            {
                "cause": k,
                "equivalent": CAUSES[k].equivalent if k in CAUSES else None,
                "meaning": CAUSES[k].meaning if k in CAUSES else "",
                "requests": v,
            }
            for k, v in sorted(s.flags.items())
        ],
        "divergence_sites": [
            {
                "template": x.template,
                "section": x.section,
                "role": x.role or None,
                "kind": x.kind,
                "count": x.count,
                "tokens_lost": x.tokens_lost,
                "mean_position": x.position_sum / x.count if x.count else 0,
                "example": x.example,
            }
            for x in sites
        ],
        "divergence_positions": [{"from_token": k, "count": v} for k, v in sorted(s.positions.items())],
        "templates": [
            {
                "template": t,
                "requests": int(v[0]),
                "prompt_tokens": int(v[1]),
                "simulated": _ratio(v[2], v[1]),
                "fixed": _ratio(v[3], v[1]),
                "tokens_lost": int(v[4]),
            }
            for t, v in sorted(s.templates.items(), key=lambda kv: -kv[1][1])[:top]
        ],
        "tenants": [
            {
                "tenant": t,
                "provider": p,
                "model": m or None,
                "requests": int(v[0]),
                "prompt_tokens": int(v[1]),
                "simulated": _ratio(v[2], v[1]),
                "fixed": _ratio(v[3], v[1]),
                "reported": _ratio(v[5], v[4]),
            }
            for (t, p, m), v in sorted(s.tenants.items())
        ],
        "capacity": [
            {
                "provider": p,
                "model": m or None,
                "points": [
                    {"capacity_tokens": cap, "hit_rate": _ratio(v[1], v[0]) or 0.0}
                    for cap, v in sorted(curve.items())
                ],
            }
            for (p, m), curve in sorted(s.capacity.items())
        ],
        "sessions": dict(sorted(s.sessions.items())),
        "verdicts": dict(sorted(s.verdicts.items())),
        "verdict_examples": s.verdict_examples,
        "notes": dict(sorted(s.notes.items())),
        "timeline": _timeline(s),
        "run": {"seconds": result.elapsed, "workers": result.workers, "engine": result.engine},
    }


def render_audit_json(result: AuditResult) -> str:
    return json.dumps(audit_document(result), indent=2, sort_keys=False) + "\n"
