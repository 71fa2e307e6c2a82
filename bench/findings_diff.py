"""Findings unchanged by a speed change: the JSON report of every tree, saved, then compared.

Runs ``prefixlint check --output-format json --no-cache .`` (this checkout first on the path) in each
folder under ``--trees`` and writes ``NAME.json`` plus ``NAME.cpu`` (user + system seconds of the
run) to ``--out``. With ``--against`` (an earlier ``--out`` folder), prints the trees whose findings
differ and exits 1 when any does.

Usage::

    python bench/findings_diff.py --trees /work/devset-trees --out /tmp/before
    # ... change the code ...
    python bench/findings_diff.py --trees /work/devset-trees --out /tmp/after --against /tmp/before
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.child_cpu import adopt_orphans, reap_orphans  # noqa: E402


def report(tree: Path, cache: Path) -> tuple[str, float]:
    """The JSON report of one tree and the CPU seconds its run took."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PREFIXLINT_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-P", "-m", "prefixlint", "check", "--output-format", "json", "--no-cache", "."]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    reap_orphans()  # workers the check did not wait for
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.stdout, cpu


def differences(old: str, new: str) -> tuple[list[str], list[str]]:
    """Findings only in ``old`` and only in ``new`` (each as canonical JSON)."""
    try:
        a, b = json.loads(old or "[]"), json.loads(new or "[]")
    except json.JSONDecodeError:
        return ([old[:200]], [new[:200]]) if old != new else ([], [])
    ka = {json.dumps(x, sort_keys=True) for x in a}
    kb = {json.dumps(x, sort_keys=True) for x in b}
    return sorted(ka - kb), sorted(kb - ka)


def main(argv: list[str] | None = None) -> int:
    adopt_orphans()  # the CPU figures count the workers a check leaves to end on their own
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, required=True, help="a folder of repository trees")
    parser.add_argument("--out", type=Path, required=True, help="where the reports are written")
    parser.add_argument("--against", type=Path, help="an earlier --out folder to compare with")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    changed = 0
    total = 0.0
    with tempfile.TemporaryDirectory() as cache:
        for tree in sorted(p for p in args.trees.iterdir() if p.is_dir()):
            out, cpu = report(tree, Path(cache))
            total += cpu
            (args.out / f"{tree.name}.json").write_text(out)
            (args.out / f"{tree.name}.cpu").write_text(f"{cpu:.2f}\n")
            line = f"{tree.name}: {cpu:.2f} s CPU"
            if args.against is not None:
                old_file = args.against / f"{tree.name}.json"
                old = old_file.read_text() if old_file.exists() else ""
                gone, new = differences(old, out)
                if gone or new:
                    changed += 1
                    line += f", findings differ (-{len(gone)} +{len(new)})"
                    line += "".join(f"\n  - {g[:300]}" for g in gone[:5])
                    line += "".join(f"\n  + {n[:300]}" for n in new[:5])
            print(line, flush=True)
    print(f"total {total:.1f} s CPU" + (f"; trees whose findings differ: {changed}" if args.against else ""))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
