"""The audit as one self-contained HTML file: inline SVG plots (matplotlib, text drawn as paths),
inline CSS, no script, no link, no font or image from anywhere: it opens without network.

Figures: hit rate over time (simulated vs reported, and fixed), divergence positions, tokens lost
by cause, and the KV capacity curve when the log has self-hosted traffic. Tables: per model, per
tenant, and the top divergence sites with excerpts (shape and hash only with ``--redact``).
Each figure is a ``<section id=...>``; opening ``report.html#fig-causes`` shows that figure alone.
Needs matplotlib: ``pip install 'prefixlint[audit]'``.
"""

from __future__ import annotations

import html
import io
import re
from typing import Any

FIGURES = ("fig-hit-rate", "fig-positions", "fig-causes", "fig-capacity")
_CSS = """
body{font-family:system-ui,Helvetica,Arial,sans-serif;margin:24px;color:#1b1f24;background:#fff}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f6f8fa}td.l,th.l{text-align:left}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;white-space:pre-wrap}
section.figure svg{width:900px;height:auto;display:block}
body:has(section.figure:target) section:not(:target){display:none}
.muted{color:#57606a}
"""


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.1f}%"


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    text = re.sub(r"<\?xml[^>]*\?>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    return text


def _figures(doc: dict[str, Any]) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "path", "figure.dpi": 100, "font.size": 10})
    out: dict[str, str] = {}

    fig, ax = plt.subplots(figsize=(9, 3.2))
    tl = doc["timeline"]
    xs = [row["start"] / 3600.0 for row in tl]
    if xs:
        x0 = xs[0]
        xs = [x - x0 for x in xs]
        for key, label, color, style, width in (
            ("fixed", "fixed (counterfactual)", "#1a7f37", "--", 1.5),
            ("reported", "reported", "#cf222e", "-", 1.5),
            ("simulated", "simulated", "#0969da", "-", 2.5),
        ):
            pts = [(x, row[key] * 100) for x, row in zip(xs, tl, strict=True) if row[key] is not None]
            if pts:
                ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    label=label,
                    color=color,
                    linestyle=style,
                    linewidth=width,
                    marker="o",
                    markersize=3,
                )
        ax.legend(loc="lower right")
    else:
        ax.text(0.5, 0.5, "no timestamps in the log", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("hours since the first request")
    ax.set_ylabel("hit rate (% of prompt tokens)")
    ax.set_title("Hit rate over time")
    ax.grid(alpha=0.3)
    out["fig-hit-rate"] = _svg(fig)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 3.2))
    pos = doc["divergence_positions"]
    if pos:
        labels = [_tokens(p["from_token"]) for p in pos]
        ax.bar(range(len(pos)), [p["count"] for p in pos], color="#8250df")
        ax.set_xticks(range(len(pos)), labels, rotation=0)
    else:
        ax.text(0.5, 0.5, "no divergences found", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("token position of the first divergence (bin start)")
    ax.set_ylabel("requests")
    ax.set_title("Where prompts diverge")
    ax.grid(alpha=0.3, axis="y")
    out["fig-positions"] = _svg(fig)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 3.2))
    causes = [c for c in doc["causes"] if c["tokens_lost"] > 0][:10]
    if causes:
        names = [c["cause"] + (f" ({c['equivalent']})" if c["equivalent"] else "") for c in causes][::-1]
        ax.barh(names, [c["tokens_lost"] for c in causes][::-1], color="#bc4c00")
        ax.set_xlabel("tokens lost (not read from cache)")
    else:
        ax.text(0.5, 0.5, "no tokens lost", ha="center", va="center", transform=ax.transAxes)
    ax.set_title("Tokens lost by cause")
    ax.grid(alpha=0.3, axis="x")
    out["fig-causes"] = _svg(fig)
    plt.close(fig)

    if doc["capacity"]:
        fig, ax = plt.subplots(figsize=(9, 3.2))
        for curve in doc["capacity"]:
            pts = curve["points"]
            ax.plot(
                [p["capacity_tokens"] for p in pts],
                [p["hit_rate"] * 100 for p in pts],
                marker="o",
                label=f"{curve['provider']} {curve['model'] or ''}",
            )
        ax.set_xscale("log", base=2)
        ax.set_ylim(-2, 102)
        ax.set_xlabel("KV cache capacity (tokens, LRU)")
        ax.set_ylabel("hit rate (%)")
        ax.set_title("Hit rate vs KV cache size")
        ax.legend(loc="lower right")
        ax.grid(alpha=0.3)
        out["fig-capacity"] = _svg(fig)
        plt.close(fig)
    return out


def _tokens(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 else str(n)


def _table(headers: list[str], rows: list[list[str]], left: int = 1, text_last: bool = False) -> str:
    """An HTML table; the first ``left`` columns (and the last with ``text_last``) align left."""

    def cls(i: int) -> str:
        return "l" if i < left or (text_last and i == len(headers) - 1) else ""

    th = "".join(f'<th class="{cls(i)}">{html.escape(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td class="{cls(i)}">{c}</td>' for i, c in enumerate(r)) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def render_audit_html(doc: dict[str, Any]) -> str:
    figs = _figures(doc)
    e = html.escape
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        "<meta name=viewport content='width=device-width, initial-scale=1'>",
        f"<title>prefixlint audit</title><style>{_CSS}</style></head><body>",
        "<section id=summary><h1>prefixlint audit</h1>",
        f"<p>{doc['read']:,} records read, <b>{doc['used']:,} used</b>, {doc['malformed']:,} not used. "
        f"Prices as of {e(doc['prices']['as_of'])}.</p>",
    ]
    models = [
        [
            e(m["provider"]),
            e(m["model"] or "-"),
            f"{m['requests']:,}",
            f"{m['prompt_tokens']:,}",
            _pct(m["simulated"]),
            _pct(m["reported"]),
            _pct(m["fixed"]),
            f"${m['cost_usd']['now']:,.2f}",
            f"${m['cost_usd']['fixed']:,.2f}",
        ]
        for m in doc["models"]
    ]
    parts.append("<h2>Per model</h2>")
    parts.append(
        _table(
            [
                "provider",
                "model",
                "requests",
                "prompt tokens",
                "simulated",
                "reported",
                "fixed",
                "cost now",
                "cost fixed",
            ],
            models,
            left=2,
        )
    )
    parts.append("</section>")
    titles = {
        "fig-hit-rate": "Hit rate over time, simulated vs reported",
        "fig-positions": "Histogram of divergence positions",
        "fig-causes": "Tokens lost by cause",
        "fig-capacity": "KV capacity curve (self-hosted engines, block LRU)",
    }
    for fid in FIGURES:
        if fid in figs:
            parts.append(f"<section class=figure id={fid}><h2>{titles[fid]}</h2>{figs[fid]}</section>")
    tenants = [
        [
            e(t["tenant"]),
            e(t["provider"]),
            e(t["model"] or "-"),
            f"{t['requests']:,}",
            f"{t['prompt_tokens']:,}",
            _pct(t["simulated"]),
            _pct(t["reported"]),
            _pct(t["fixed"]),
        ]
        for t in doc["tenants"]
    ]
    parts.append("<section id=tenants><h2>Per tenant and model</h2>")
    parts.append(
        _table(
            ["tenant", "provider", "model", "requests", "prompt tokens", "simulated", "reported", "fixed"],
            tenants,
            left=3,
        )
    )
    parts.append("</section><section id=sites><h2>Top divergence sites</h2>")
    sites = []
    for x in doc["divergence_sites"]:
        ex = x["example"]
        excerpt = (
            f"<code>{e(str(ex.get('path')))} @ token {ex.get('position')}</code>"
            f"<pre>was: {e(repr(ex.get('before')))}\nnow: {e(repr(ex.get('after')))}</pre>"
            if "path" in ex
            else ""
        )
        sites.append(
            [
                f"<code>{e(x['template'][:12])}</code>",
                e(x["section"] + (f"/{x['role']}" if x["role"] else "")),
                e(x["kind"]),
                f"{x['count']:,}",
                f"{x['tokens_lost']:,}",
                f"{e(str(ex.get('source')))}:{ex.get('line')}{excerpt}",
            ]
        )
    headers = ["template", "where", "kind", "count", "tokens lost", "example"]
    parts.append(_table(headers, sites, left=3, text_last=True))
    parts.append("</section><section id=causes><h2>Causes</h2>")
    parts.append(
        _table(
            ["cause", "like", "requests", "tokens lost", "cost", "meaning"],
            [
                [
                    e(c["cause"]),
                    e(c["equivalent"] or ""),
                    f"{c['requests']:,}",
                    f"{c['tokens_lost']:,}",
                    f"${c['usd_lost']:,.2f}",
                    f'<span class="muted">{e(c["meaning"])}</span>',
                ]
                for c in doc["causes"]
            ],
            left=2,
            text_last=True,
        )
    )
    parts.append("</section></body></html>\n")
    return "".join(parts)
