"""Plots of a bench run (matplotlib, Agg backend, imported only when a plot is asked for).

The format follows the file suffix: ``.png`` or ``.svg`` (``.pdf`` works too).
"""

from __future__ import annotations

from pathlib import Path

from prefixlint.live.results import BenchRun


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed, so ``--plot`` cannot be honoured."""


def require_matplotlib() -> None:
    """Raise :class:`PlotsUnavailable` with the install hint unless matplotlib imports."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise PlotsUnavailable("--plot needs matplotlib: pip install 'prefixlint[live]'") from exc


def _pyplot():  # type: ignore[no-untyped-def]
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_run(run: BenchRun, path: str | Path) -> Path:
    """Write the plot of ``run`` (ttft or retention) to ``path``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        if run.kind == "retention" and run.retention is not None:
            _retention(ax, run)
        else:
            _ttft(ax, run)
        ax.set_title(f"{run.kind}: {run.label or run.model}", fontsize=10)
        fig.tight_layout()
        fig.savefig(out)
    finally:
        plt.close(fig)
    return out


def _ttft(ax, run: BenchRun) -> None:  # type: ignore[no-untyped-def]
    xs = [r.prompt_tokens for r in run.lengths]
    for arm, color in (("miss", "tab:red"), ("hit", "tab:blue")):
        stats = [getattr(r, arm) for r in run.lengths]
        p50 = [(s.p50_s or 0) * 1000 for s in stats]
        p90 = [(s.p90_s or 0) * 1000 for s in stats]
        p99 = [(s.p99_s or 0) * 1000 for s in stats]
        ax.plot(xs, p50, marker="o", color=color, label=f"{arm} p50")
        ax.fill_between(xs, p50, p90, color=color, alpha=0.25, label=f"{arm} p50-p90")
        ax.plot(xs, p99, linestyle=":", color=color, label=f"{arm} p99")
    for r in run.lengths:
        if r.speedup_p50 and r.hit.p50_s:
            ax.annotate(
                f"{r.speedup_p50:.1f}x",
                (r.prompt_tokens, r.hit.p50_s * 1000),
                textcoords="offset points",
                xytext=(0, 8),
                ha="center",
                fontsize=8,
            )
    ax.set_xlabel("prompt tokens")
    ax.set_ylabel("TTFT (ms)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def _retention(ax, run: BenchRun) -> None:  # type: ignore[no-untyped-def]
    ret = run.retention
    assert ret is not None
    ages = list(range(1, len(ret.probes) + 1))
    thr = ret.threshold_s
    if ret.detection == "reported":
        kept = [p.cached_tokens or 0 for p in ret.probes]
    else:
        kept = [
            ret.context_tokens if (p.ttft_s is not None and thr and p.ttft_s <= thr) else 0
            for p in ret.probes
        ]
    ax.bar(ages, kept, color="tab:blue")
    ax.axhline(ret.context_tokens, color="gray", linestyle="--", label="context tokens")
    ax.set_xlabel("probe (1 = newest context)")
    ax.set_ylabel("tokens still cached")
    ax.text(0.02, 0.95, f"{ret.verdict}: {ret.message}", transform=ax.transAxes, fontsize=8, va="top")
    ax.legend(fontsize=8)
