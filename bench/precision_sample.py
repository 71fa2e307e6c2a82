"""Precision sample: draw findings at random from prefixlint's default output on real trees.

Runs ``prefixlint check --output-format json --no-cache .`` (default settings; ``--no-cache`` only
keeps the trees unwritten) in each given tree, pools every finding the default output shows
(blocking and non-blocking alike: the text output lists the same findings), draws ``--n`` of them
with a fixed seed, and prints a Markdown table with a verdict column to fill in by reading the code.

Usage::

    python bench/precision_sample.py /work/devset-trees/OWNER+NAME ... [--n 30] [--seed 10]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def lint(tree: Path) -> list[dict]:
    """The findings of a default run of this checkout's prefixlint over ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-P", "-m", "prefixlint", "check", "--output-format", "json", "--no-cache", "."]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{tree}: prefixlint exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return [f for f in json.loads(proc.stdout or b"[]") if isinstance(f, dict) and f.get("code")]


def draw(pool: list[tuple[str, dict]], n: int, seed: int) -> list[tuple[str, dict]]:
    """``n`` findings drawn uniformly without replacement, in a stable order (repo, path, line)."""
    ordered = sorted(pool, key=key)
    picked = random.Random(seed).sample(ordered, min(n, len(ordered)))
    return sorted(picked, key=key)


def key(item: tuple[str, dict]) -> tuple:
    repo, f = item
    loc = f.get("location") or {}
    return (repo, f.get("filename", ""), loc.get("row", 0), loc.get("column", 0), f["code"])


def excerpt(message: str, width: int = 110) -> str:
    text = " ".join(message.split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def commit() -> str:
    """This checkout's commit, with ``+dirty`` when the working tree differs from it."""
    run = lambda *a: subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True).stdout  # noqa: E731
    head = run("rev-parse", "--short=10", "HEAD").strip() or "unknown"
    return head + ("+dirty" if run("status", "--porcelain", "--", "prefixlint").strip() else "")


def table(sample: list[tuple[str, dict]]) -> str:
    rows = [
        "| # | Repository | Location | Code | Severity | Blocking | Static tokens after | Message (excerpt) "
        "| Verdict |",
        "| ---: | --- | --- | --- | --- | --- | ---: | --- | --- |",
    ]
    for i, (repo, f) in enumerate(sample, 1):
        loc = f"`{f.get('filename')}:{(f.get('location') or {}).get('row')}`"
        blocking = "yes" if f.get("blocking") else "no"
        msg = excerpt(f.get("message", ""))
        lost = (f.get("impact") or {}).get("tokens_lost", "")
        rows.append(
            f"| {i} | {repo} | {loc} | {f['code']} | {f.get('severity')} | {blocking} | {lost} | {msg} | |"
        )
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", type=Path, nargs="+", help="extracted trees (OWNER+NAME folders)")
    parser.add_argument("--n", type=int, default=30, help="findings to draw (default 30)")
    parser.add_argument("--seed", type=int, default=10, help="random seed (default 10)")
    args = parser.parse_args()
    pool: list[tuple[str, dict]] = []
    counts = []
    for tree in args.trees:
        findings = lint(tree.resolve())
        counts.append(f"{tree.name} {len(findings)}")
        pool += [(tree.name, f) for f in findings]
    sample = draw(pool, args.n, args.seed)
    print(
        f"prefixlint {commit()}, seed {args.seed}: {len(sample)} of {len(pool)} findings "
        f"({', '.join(counts)}), blocking and non-blocking alike.\n"
    )
    print(table(sample))


if __name__ == "__main__":
    main()
