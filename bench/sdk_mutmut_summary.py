"""Summarise a ``mutmut run`` of ``prefixlint/sdk/``: outcomes per module and function.

mutmut 3 keeps each mutant's outcome in ``mutants/<module>.py.meta`` (the pytest exit code: 1 is
killed, 0 survived, 5 no test reached it, 24/36/152 a timeout, none not run yet). This prints the
Markdown tables that ``bench/RESULTS.md`` records, so that a rerun replaces them mechanically.

Usage::

    mutmut run                                  # in a clean checkout
    python bench/sdk_mutmut_summary.py mutants   # the folder mutmut wrote
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

_OUTCOME = {
    1: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    24: "timeout",
    36: "timeout",
    152: "timeout",
}
_KEY = re.compile(r"^(?P<module>[\w.]+?)\.x(?:ǁ(?P<cls>\w+)ǁ|_)(?P<func>\w+?)__mutmut_\d+$")


def outcome(code: int | None) -> str:
    """The name of a mutant's outcome from the exit code mutmut recorded."""
    if code is None:
        return "not checked"
    return _OUTCOME.get(code, "killed" if code else "survived")


def function_of(key: str) -> tuple[str, str]:
    """``(module, function)`` of a mutant key (``Class.method`` for a method)."""
    m = _KEY.match(key)
    if m is None:
        return key.rsplit(".", 1)[0], "?"
    func = f"{m['cls']}.{m['func']}" if m["cls"] else m["func"]
    return m["module"].rsplit(".", 1)[-1], func


def collect(mutants: Path) -> dict[str, dict[str, Counter[str]]]:
    """Outcome counts by module and function, read from every ``.meta`` file under ``mutants``."""
    table: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for meta in sorted((mutants / "prefixlint" / "sdk").glob("*.py.meta")):
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        for key, code in codes.items():
            module, func = function_of(key)
            table[module][func][outcome(code)] += 1
    return table


def main() -> None:
    """Print the per-module table, then the functions with survivors, most first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mutants", type=Path, help="the mutants/ folder of a mutmut run")
    parser.add_argument("--top", type=int, default=40, help="functions with survivors to list")
    args = parser.parse_args()
    table = collect(args.mutants)
    columns = ("killed", "survived", "timeout", "no tests", "not checked")
    total: Counter[str] = Counter()
    print("| module | mutants | " + " | ".join(columns) + " |")
    print("|---|---:|" + "---:|" * len(columns))
    for module, funcs in sorted(table.items()):
        row: Counter[str] = sum(funcs.values(), Counter())
        total += row
        cells = " | ".join(str(row[c]) for c in columns)
        print(f"| `{module}.py` | {sum(row.values())} | {cells} |")
    print(f"| **all** | {sum(total.values())} | " + " | ".join(str(total[c]) for c in columns) + " |")
    checked = total["killed"] + total["survived"] + total["timeout"]
    if checked:
        rate = (total["killed"] + total["timeout"]) / checked
        print(f"\nKilled (timeouts included) of those checked: {rate:.1%} ({checked} checked)")
    survivors = [
        (counts["survived"], f"{module}.{func}")
        for module, funcs in table.items()
        for func, counts in funcs.items()
        if counts["survived"]
    ]
    print("\n| function | survived |\n|---|---:|")
    for count, name in sorted(survivors, reverse=True)[: args.top]:
        print(f"| `{name}` | {count} |")


if __name__ == "__main__":
    main()
