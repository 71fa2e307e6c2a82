"""Human output: ``path:line:col: CODE [*] message``, the impact, a snippet with a caret, a summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from prefixlint.model.findings import Finding, Impact
from prefixlint.model.source_text import split_lines
from prefixlint.report.context import ReportContext, display_path


def describe_impact(impact: Impact) -> str:
    """``1,204 tokens uncacheable, prefix 3 tokens (below the 1,024-token minimum)``."""
    approx = "" if impact.exact else "~"
    text = f"{approx}{impact.tokens_lost:,} tokens uncacheable"
    if impact.history_priced:
        text += " plus the conversation history"
    state = "reaches" if impact.reaches_minimum else "below"
    prefix = f"prefix {approx}{impact.prefix_tokens:,} tokens"
    text = f"{text}, {prefix} ({state} the {impact.minimum:,}-token minimum)"
    if not impact.can_reach_minimum:
        total = impact.prefix_tokens + impact.tokens_lost
        text += f", {approx}{total:,} static tokens in all: below the minimum, nothing is cached"
    return text


@lru_cache(maxsize=64)
def _lines(path: str) -> tuple[str, ...]:
    try:
        with open(path, "rb") as fh:
            return tuple(split_lines(fh.read().decode("utf-8", errors="replace")))
    except OSError:
        return ()


_MAX_SNIPPET = 200  # characters of a source line shown; longer lines are cut around the column


def snippet(f: Finding, sources: Mapping[str, str] | None = None) -> list[str]:
    """The finding's source line with a caret under its column (or the finding's own snippet).

    ``sources`` gives the text of files that are not on disk (standard input), by path.
    """
    given = sources.get(f.location.path) if sources else None
    lines = tuple(split_lines(given)) if given is not None else _lines(f.location.path)
    line = f.location.line
    if not lines or not 1 <= line <= len(lines):
        return [f"     | {s}" for s in f.snippet.splitlines()[:3]] if f.snippet else []
    src = lines[line - 1].expandtabs(1)
    if "\x00" in src or "\ufffd" in src:
        return []  # binary or undecodable: a snippet would be noise
    col = min(f.location.col, len(src))
    end = (
        f.location.end_col if f.location.end_line in (None, line) and f.location.end_col is not None else None
    )
    if len(src) > _MAX_SNIPPET:  # a minified JSON line: show a window around the column
        start = max(0, min(col - _MAX_SNIPPET // 3, len(src) - _MAX_SNIPPET))
        head, tail = ("..." if start else ""), ("..." if start + _MAX_SNIPPET < len(src) else "")
        src = head + src[start : start + _MAX_SNIPPET] + tail
        col = col - start + len(head)
        end = None if end is None else end - start + len(head)
    width = max(1, min((end - col) if end and end > col else 1, max(1, len(src) - col)))
    gutter = len(str(line))
    return [
        f"{' ' * gutter} |",
        f"{line} | {src}",
        f"{' ' * gutter} | {' ' * col}{'^' * width}",
    ]


_STYLES = {"bold": "1", "red": "1;31", "cyan": "36", "dim": "2", "blue": "34"}


def _style(text: str, style: str, color: bool) -> str:
    return f"\x1b[{_STYLES[style]}m{text}\x1b[0m" if color else text


def render_text(findings: Sequence[Finding], ctx: ReportContext, concise: bool = False) -> str:
    """Plain strings with optional ANSI colours: thousands of findings must print in milliseconds."""
    c = ctx.color
    out: list[str] = []
    for i, f in enumerate(findings):
        mark = " " + _style("[*]", "cyan", c) if i in ctx.fixable else ""
        loc = f.location
        out.append(
            f"{_style(display_path(loc.path), 'bold', c)}:{loc.line}:{loc.col + 1}: "
            f"{_style(f.code, 'red', c)}{mark} {f.message}"
        )
        if concise:
            continue
        if f.impact is not None:
            out.append(f"  {_style('= impact:', 'dim', c)} {describe_impact(f.impact)}")
        for j, link in enumerate(f.chain):
            word = "= from:" if j == 0 else "= via:"
            out.append(f"  {_style(word, 'dim', c)} {display_path(link.path)}:{link.line}:{link.col + 1}")
        for other in f.also:
            where = f"{display_path(other['path'])}:{other['line']}:{other['col'] + 1}"
            out.append(f"  {_style('= also:', 'dim', c)} {where} `{other['label']}`")
        out.extend(f"  {_style(line, 'blue', c)}" for line in snippet(f, ctx.sources))
        if f.fix is not None:
            out.append(f"  {_style('= help:', 'dim', c)} {f.fix.message} ({f.fix.applicability.value} fix)")
        for alt in f.extra.get("alternative_fixes", ()):
            out.append(f"  {_style('= help:', 'dim', c)} or: {alt['message']} ({alt['applicability']} fix)")
        out.append("")
    if ctx.show_fixes and ctx.applied:
        out.append(f"Fixed {len(ctx.applied)} error{'s' if len(ctx.applied) != 1 else ''}:")
        out.extend(
            f"- {display_path(f.location.path)}:{f.location.line}: {f.code} {f.message}" for f in ctx.applied
        )
        out.append("")
    if not ctx.quiet:
        out.append(summary(findings, ctx))
    return "\n".join(out) + "\n" if out else ""


def summary(findings: Sequence[Finding], ctx: ReportContext) -> str:
    """ruff's closing line: ``Found N errors. [*] M fixable with the `--fix` option ...``."""
    n = len(findings)
    if n == 0:
        if ctx.fixed:
            return f"Found {ctx.fixed} error{'s' if ctx.fixed != 1 else ''} ({ctx.fixed} fixed, 0 remaining)."
        return "No files were checked." if ctx.nothing_checked else "All checks passed!"
    head = f"Found {n + ctx.fixed} error{'s' if n + ctx.fixed != 1 else ''}"
    head += f" ({ctx.fixed} fixed, {n} remaining)." if ctx.fixed else "."
    informational = sum(1 for f in findings if not f.blocking)
    if informational:
        one = informational == 1
        head += (
            f" {informational} {'is' if one else 'are'} informational (fewer than `min-impact-tokens` "
            f"tokens at stake) and do{'es' if one else ''} not fail the run."
        )
    parts = [head]
    m = len(ctx.fixable)
    if m:
        parts.append(f"[*] {m} fixable with the `--fix` option")
    if ctx.hidden_unsafe:
        plural = "es" if ctx.hidden_unsafe != 1 else ""
        hidden = f"{ctx.hidden_unsafe} hidden fix{plural} can be enabled with the `--unsafe-fixes` option"
        parts.append(f"({hidden})." if m else f"No fixes available ({hidden}).")
    elif m:
        parts[-1] += "."
    return "\n".join([*parts[:1], " ".join(parts[1:])] if len(parts) > 1 else parts)
