"""The audit in the terminal: rich tables built from the JSON document of :mod:`audit_json`."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.table import Table


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.1f}%"


def _usd(v: float | None) -> str:
    return "-" if v is None else f"${v:,.2f}"


def _gap(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:+.1f} pt"


def render_audit_text(doc: dict[str, Any], color: bool = False, width: int = 120) -> str:
    out = io.StringIO()
    con = Console(file=out, force_terminal=color, color_system="auto" if color else None, width=width)
    rec = doc["records"]
    kinds = ", ".join(f"{k} {v}" for k, v in rec["by_kind"].items())
    con.print(
        f"[bold]prefixlint audit[/]: {doc['read']:,} records read, [bold]{doc['used']:,} used[/], "
        f"{doc['malformed']:,} not used" + (f" ({kinds})" if kinds else "")
    )
    for p in rec["shown"]:
        con.print(f"  [yellow]{p['source']}:{p['line']}[/]: {p['kind']}: {p['message']}", highlight=False)
    hidden = doc["malformed"] - len(rec["shown"])
    if hidden > 0:
        con.print(f"  ... and {hidden:,} more not used (--show-problems N lists more)")
    for note, n in doc["notes"].items():
        con.print(f"  note: {n:,} record(s) {_NOTES.get(note, note)}")

    t = Table(title="Hit rate per provider and model (fractions of prompt tokens)", title_justify="left")
    for col in ("provider", "model", "requests", "prompt tokens", "simulated", "reported", "gap", "fixed"):
        t.add_column(col, justify="left" if col in ("provider", "model") else "right")
    t.add_column("cost now", justify="right")
    t.add_column("cost fixed", justify="right")
    for m in [*doc["models"], doc["total"]] if len(doc["models"]) > 1 else doc["models"]:
        approx = "" if m["tokens_exact"] else " ~"
        t.add_row(
            m["provider"],
            m["model"] or "-",
            f"{m['requests']:,}",
            f"{m['prompt_tokens']:,}{approx}",
            _pct(m["simulated"]),
            _pct(m["reported"]),
            _gap(m["gap"]),
            _pct(m["fixed"]),
            _usd(m["cost_usd"]["now"]),
            _usd(m["cost_usd"]["fixed"]),
        )
    con.print(t)
    con.print(
        f"Prices as of {doc['prices']['as_of']} ({doc['prices']['source']}). "
        "gap = reported - simulated on the requests that carry usage; ~ = estimated token counts."
    )

    if doc["causes"]:
        c = Table(title="Causes, ranked by tokens lost", title_justify="left")
        for col in ("cause", "like", "requests", "tokens lost", "cost"):
            c.add_column(col, justify="right" if col in ("requests", "tokens lost", "cost") else "left")
        c.add_column("meaning")
        for x in doc["causes"]:
            c.add_row(
                x["cause"],
                x["equivalent"] or "",
                f"{x['requests']:,}",
                f"{x['tokens_lost']:,}",
                _usd(x["usd_lost"]),
                x["meaning"],
            )
        con.print(c)
    if doc["flags"]:
        con.print(
            "Flags: "
            + ", ".join(
                f"{f['cause']} ({f['equivalent'] or '-'}) on {f['requests']:,} request(s)"
                for f in doc["flags"]
            )
        )

    if doc["divergence_sites"]:
        d = Table(title="Top divergence sites", title_justify="left")
        for col in ("template", "where", "kind", "count", "tokens lost", "example"):
            d.add_column(col, justify="right" if col in ("count", "tokens lost") else "left")
        for x in doc["divergence_sites"][:10]:
            ex = x["example"]
            excerpt = ""
            if ex.get("before") is not None or ex.get("after") is not None:
                excerpt = f"{ex.get('path')}@{ex.get('position')}: "
                excerpt += f"was {ex.get('before')!r}\nnow {ex.get('after')!r}"
            where = f"{x['section']}" + (f"/{x['role']}" if x["role"] else "")
            d.add_row(
                x["template"][:8],
                where,
                x["kind"],
                f"{x['count']:,}",
                f"{x['tokens_lost']:,}",
                f"{ex.get('source')}:{ex.get('line')}\n{excerpt}",
            )
        con.print(d)

    for curve in doc["capacity"]:
        k = Table(
            title=f"KV capacity vs hit rate: {curve['provider']} {curve['model'] or ''}", title_justify="left"
        )
        k.add_column("capacity (tokens)", justify="right")
        k.add_column("hit rate", justify="right")
        for pt in curve["points"]:
            k.add_row(f"{pt['capacity_tokens']:,}", _pct(pt["hit_rate"]))
        con.print(k)

    if doc["verdicts"]:
        con.print("Verdicts (the SDK's): " + ", ".join(f"{k} {v:,}" for k, v in doc["verdicts"].items()))
    sess = doc["sessions"]
    if sess:
        con.print("Sessions: " + ", ".join(f"{k} {v:,}" for k, v in sess.items()))
    return out.getvalue()


_NOTES = {
    "no-timestamp": "had no timestamp: replayed in file order with no time passing",
    "out-of-order": "came earlier than a record before them beyond the reorder window: replayed late",
    "empty-request": "had no prompt content (counted, no tokens)",
    "usage-unreadable": "had a usage object without the provider's prompt token field",
}
