"""``prefixlint diff`` output: where requests diverge, highlighted, and what each provider can cache.

Takes the plain data of a comparison (``Comparison.to_dict()``); gives text (ANSI colours when asked)
or JSON.
"""

from __future__ import annotations

import json
from typing import Any

_RED, _GREEN, _BOLD, _DIM, _RESET = "\x1b[1;31m", "\x1b[1;32m", "\x1b[1m", "\x1b[2m", "\x1b[0m"


def render_diff_json(data: dict[str, Any]) -> str:
    """The comparison as indented JSON."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render_diff_text(data: dict[str, Any], color: bool = False) -> str:
    """The comparison for a terminal: inputs, the first divergence with both sides, cacheable prefixes,
    and for three or more inputs the spans that vary ahead of stable content."""
    out: list[str] = []
    approx = "" if data["tokenizer"]["exact"] else "~"
    enc = data["tokenizer"]["encoding"] + ("" if data["tokenizer"]["exact"] else " (estimate)")
    target = f"{data['provider']}" + (f", model {data['model']}" if data["model"] else "")
    out.append(_b(f"Compared {len(data['inputs'])} requests ({target}; tokens: {enc})", color))
    letters = _letters(len(data["inputs"]))
    for letter, inp in zip(letters, data["inputs"], strict=True):
        out.append(f"  {letter}  {inp['label']}  {approx}{inp['tokens']:,} tokens")
    out.append("")
    for pair in data["pairs"]:
        out.extend(_pair_lines(pair, letters[0], letters[data["pairs"].index(pair) + 1], approx, color))
    out.extend(_cacheable_lines(data, approx, color))
    if data.get("alignment"):
        out.extend(_alignment_lines(data["alignment"], approx, color))
    return "\n".join(out).rstrip("\n") + "\n"


def _letters(n: int) -> list[str]:
    return [chr(ord("A") + i) if i < 26 else f"#{i + 1}" for i in range(n)]


def _b(text: str, color: bool) -> str:
    return f"{_BOLD}{text}{_RESET}" if color else text


def _pair_lines(pair: dict[str, Any], la: str, lb: str, approx: str, color: bool) -> list[str]:
    if not pair["diverges"]:
        return [f"{lb} is identical to {la} ({approx}{pair['shared_tokens']:,} tokens).", ""]
    where = pair["path_b"] or pair["path_a"]
    head = f"{lb} diverges from {la} at token {approx}{pair['shared_tokens']:,}"
    head += f", in {where}" if where else ""
    lines = [_b(head, color)]
    if not pair["same_model"]:
        lines.append("  the requests go to different models: they never share a cache entry")
    for letter, loc, excerpt, paint in (
        (la, pair["location_a"], pair["excerpt_a"], _RED),
        (lb, pair["location_b"], pair["excerpt_b"], _GREEN),
    ):
        other = pair["excerpt_b"] if letter == la else pair["excerpt_a"]
        shown = _excerpt(excerpt, other, pair["excerpt_at"], paint if color else None)
        lines.append(f"  {letter}  {loc or '(nothing here)'}  {shown}")
    if pair["kind"]:
        lines.append(f"  what differs: {pair['kind']}")
    lines.append("")
    return lines


def _excerpt(text: str | None, other: str | None, at: int, paint: str | None) -> str:
    """The excerpt on one line, with its differing part highlighted (or bracketed without colour)."""
    if text is None:
        return "(absent)"
    same_tail = 0
    o = other or ""
    while (
        same_tail < min(len(text), len(o)) - at
        and text[len(text) - 1 - same_tail] == o[len(o) - 1 - same_tail]
    ):
        same_tail += 1
    head, mid, tail = text[:at], text[at : len(text) - same_tail], text[len(text) - same_tail :]
    esc = [json.dumps(part, ensure_ascii=False)[1:-1] for part in (head, mid, tail)]
    mark = f"{paint}{esc[1]}{_RESET}" if paint else f"[{esc[1]}]"
    return f'"{esc[0]}{mark}{esc[2]}"'


def _cacheable_lines(data: dict[str, Any], approx: str, color: bool) -> list[str]:
    rows = data["cacheable"]
    if not rows:
        return []
    pairs = {tuple(r["pair"]) for r in rows}
    title = "Cacheable prefix" + (
        " (second request after the first)" if len(pairs) == 1 else ", least over the pairs"
    )
    lines = [_b(title + ":", color)]
    best: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: (r["tokens"], r["shared_tokens"])):
        best.setdefault(r["provider"], r)
    for name, r in best.items():
        model = r["model"] or "(any model)"
        lines.append(f"  {name:<10} {model:<22} {approx}{r['tokens']:>7,} tokens   {r['rule']}")
    lines.append("")
    return lines


def _alignment_lines(al: dict[str, Any], approx: str, color: bool) -> list[str]:
    lines = [
        _b(
            f"Aligned {al['samples']} samples: stable prefix {approx}{al['stable_prefix_tokens']:,} tokens",
            color,
        )
    ]
    if al["tool_order_varies"]:
        lines.append("  the tools come in different orders")
    ahead = [s for s in al["varying_spans"] if s["ahead_of_stable"]]
    if not ahead:
        lines.append("  nothing varies ahead of stable content")
    for s in ahead:
        values = ", ".join(json.dumps(v[:40], ensure_ascii=False) for v in dict.fromkeys(s["values"]) if v)
        lines.append(
            f"  {s['location'] or s['path']}  {s['kind']} at token {approx}{s['token']:,} ({s['path']}): "
            f"{values}; costs {approx}{s['stable_tokens_after']:,} stable tokens after it"
        )
    lines.append("")
    return lines
