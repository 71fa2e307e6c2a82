"""Human output: ``path:line:col: CODE [*] message``, the impact, a snippet with a caret, a summary."""

from __future__ import annotations

import io
from collections.abc import Sequence
from functools import lru_cache

from rich.console import Console
from rich.markup import escape

from prefixlint.diagnostics import Finding, Impact
from prefixlint.report import ReportContext, display_path


def describe_impact(impact: Impact) -> str:
    """``1,204 tokens uncacheable, prefix 3 tokens (below the 1,024-token minimum)``."""
    approx = "" if impact.exact else "~"
    text = f"{approx}{impact.tokens_lost:,} tokens uncacheable"
    if impact.history_priced:
        text += " plus the conversation history"
    state = "reaches" if impact.reaches_minimum else "below"
    return f"{text}, prefix {approx}{impact.prefix_tokens:,} tokens ({state} the {impact.minimum:,}-token minimum)"


@lru_cache(maxsize=64)
def _lines(path: str) -> tuple[str, ...]:
    try:
        with open(path, "rb") as fh:
            return tuple(fh.read().decode("utf-8", errors="replace").splitlines())
    except OSError:
        return ()


def snippet(f: Finding) -> list[str]:
    """The finding's source line with a caret under its column (or the finding's own snippet)."""
    lines = _lines(f.location.path)
    line = f.location.line
    if not lines or not 1 <= line <= len(lines):
        return [f"     | {s}" for s in f.snippet.splitlines()[:3]] if f.snippet else []
    src = lines[line - 1].expandtabs(1)
    if "\x00" in src or "\ufffd" in src:
        return []  # binary or undecodable: a snippet would be noise
    col = min(f.location.col, len(src))
    end = f.location.end_col if f.location.end_line in (None, line) and f.location.end_col is not None else None
    width = max(1, min((end - col) if end and end > col else 1, max(1, len(src) - col)))
    gutter = len(str(line))
    return [
        f"{' ' * gutter} |",
        f"{line} | {src}",
        f"{' ' * gutter} | {' ' * col}{'^' * width}",
    ]


def render_text(findings: Sequence[Finding], ctx: ReportContext, concise: bool = False) -> str:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=ctx.color, no_color=not ctx.color, highlight=False,
                      width=200, soft_wrap=True)
    for i, f in enumerate(findings):
        mark = " [cyan]\\[*][/]" if i in ctx.fixable else ""
        console.print(
            f"[bold]{escape(display_path(f.location.path))}[/]:{f.location.line}:{f.location.col + 1}: "
            f"[bold red]{f.code}[/]{mark} {escape(f.message)}"
        )
        if concise:
            continue
        if f.impact is not None:
            console.print(f"  [dim]= impact:[/] {escape(describe_impact(f.impact))}")
        for j, c in enumerate(f.chain):
            console.print(f"  [dim]= {'from' if j == 0 else 'via'}:[/] {escape(display_path(c.path))}:{c.line}:{c.col + 1}")
        for line in snippet(f):
            console.print(f"  [blue]{escape(line)}[/]")
        if f.fix is not None:
            console.print(f"  [dim]= help:[/] {escape(f.fix.message)} ({f.fix.applicability.value} fix)")
        console.print("")
    if ctx.show_fixes and ctx.applied:
        console.print(f"Fixed {len(ctx.applied)} error{'s' if len(ctx.applied) != 1 else ''}:")
        for f in ctx.applied:
            console.print(f"- {escape(display_path(f.location.path))}:{f.location.line}: {f.code} {escape(f.message)}")
        console.print("")
    if not ctx.quiet:
        console.print(summary(findings, ctx))
    return buf.getvalue()


def summary(findings: Sequence[Finding], ctx: ReportContext) -> str:
    """ruff's closing line: ``Found N errors. [*] M fixable with the `--fix` option ...``."""
    n = len(findings)
    if n == 0:
        if ctx.fixed:
            return f"Found {ctx.fixed} error{'s' if ctx.fixed != 1 else ''} ({ctx.fixed} fixed, 0 remaining)."
        return "All checks passed!"
    head = f"Found {n + ctx.fixed} error{'s' if n + ctx.fixed != 1 else ''}"
    head += f" ({ctx.fixed} fixed, {n} remaining)." if ctx.fixed else "."
    parts = [head]
    m = len(ctx.fixable)
    if m:
        parts.append(f"\\[*] {m} fixable with the `--fix` option")
    if ctx.hidden_unsafe:
        hidden = f"{ctx.hidden_unsafe} hidden fix{'es' if ctx.hidden_unsafe != 1 else ''} can be enabled with the `--unsafe-fixes` option"
        parts.append(f"({hidden})." if m else f"No fixes available ({hidden}).")
    elif m:
        parts[-1] += "."
    return "\n".join(parts[:1] + [" ".join(parts[1:])] if len(parts) > 1 else parts)
