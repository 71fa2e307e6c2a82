"""List every surviving mutant of a ``mutmut run`` of ``prefixlint/sdk/``, with the line it changes.

mutmut 3 writes each mutant as a copy of its function (``x_name__mutmut_N`` beside
``x_name__mutmut_orig``) into ``mutants/<module>.py``, and its outcome into ``<module>.py.meta``. This
prints one Markdown row per survivor: the function, the mutant's number, the original line and the
mutated one, and a kind where the change matches one that no test can or should observe (see
:data:`KINDS`); ``verdicts`` (a file of ``name<TAB>verdict`` lines, e.g. a helper's notes) adds the
verdicts read by hand. ``bench/RESULTS.md`` keeps the counts; the list itself goes to a file.

Usage::

    python bench/sdk_mutmut_survivors.py /tmp/mm/mutants [--verdicts FILE] > survivors.md
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import re
from collections import Counter
from pathlib import Path

# (kind, pattern on the original line, pattern on the mutated line): the first that matches names it.
KINDS: list[tuple[str, re.Pattern[str], re.Pattern[str]]] = [
    ("log or warning text", re.compile(r"\blog\.\w+\(|warnings\.warn\(|logger\.\w+\("), re.compile(r".")),
    ("introspection copy", re.compile(r"__(?:name|qualname|doc|module|wrapped)__"), re.compile(r".")),
    ("zip strict flag", re.compile(r"strict=False"), re.compile(r".")),
]


def _functions(source: str) -> dict[str, str]:
    """The source of every function (and method) mutmut wrote, by name."""
    tree = ast.parse(source)
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name:
            out[node.name] = ast.get_source_segment(source, node) or ""
    return out


def changed_lines(orig: str, mutant: str) -> tuple[str, str]:
    """The first line removed and the first line added between two versions of a function.

    Their names differ (``__mutmut_orig``, ``__mutmut_N``): a mutated default shows in the signature.
    """
    a = re.sub(r"__mutmut_\w+\(", "(", orig, count=1).splitlines()
    b = re.sub(r"__mutmut_\w+\(", "(", mutant, count=1).splitlines()
    old = new = ""
    for line in difflib.unified_diff(a, b, lineterm="", n=0):
        if line.startswith("-") and not line.startswith("---") and not old:
            old = line[1:].strip()
        elif line.startswith("+") and not line.startswith("+++") and not new:
            new = line[1:].strip()
    return old, new


def kind_of(old: str, new: str) -> str:
    for kind, on_old, on_new in KINDS:
        if on_old.search(old) and on_new.search(new):
            return kind
    return ""


def survivors(mutants: Path) -> list[tuple[str, int, str, str]]:
    """``(function key, number, old line, new line)`` of every survivor, in file order."""
    rows = []
    for meta in sorted((mutants / "prefixlint" / "sdk").glob("*.py.meta")):
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        module = meta.name.removesuffix(".meta")
        funcs = _functions((meta.parent / module).read_text(encoding="utf-8"))
        for key, code in codes.items():
            if code != 0:
                continue
            prefix, number = key.rsplit("__mutmut_", 1)
            local = prefix.rsplit(".", 1)[1]
            local = local.rsplit("ǁ", 1)[-1] if "ǁ" in local else local
            name = f"{prefix.rsplit('.', 1)[1]}__mutmut_"
            orig = funcs.get(name + "orig", "")
            mutant = funcs.get(name + number, "")
            old, new = changed_lines(orig, mutant)
            rows.append((prefix.removeprefix("prefixlint.sdk."), int(number), old, new))
    return rows


def _cell(text: str, width: int = 90) -> str:
    text = text.replace("|", "\\|").replace("`", "'")
    return (text[: width - 1] + "…") if len(text) > width else text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mutants", type=Path, help="the folder mutmut wrote (mutants/)")
    ap.add_argument("--verdicts", type=Path, action="append", default=[], help="name<TAB>verdict lines")
    args = ap.parse_args()
    verdicts: dict[str, str] = {}
    for path in args.verdicts:
        for line in path.read_text(encoding="utf-8").splitlines():
            if "\t" in line and not line.startswith("#"):
                name, verdict = line.split("\t", 1)
                verdicts[name.strip().removeprefix("prefixlint.sdk.")] = verdict.strip()
    rows = survivors(args.mutants)
    kinds: Counter[str] = Counter()
    print("| function | mutant | original line | mutated line | verdict |")
    print("|---|---:|---|---|---|")
    for func, number, old, new in rows:
        verdict = verdicts.get(f"{func}__mutmut_{number}") or kind_of(old, new)
        kinds[verdict.split(":", 1)[0] if verdict else "not yet read"] += 1
        print(f"| `{func}` | {number} | `{_cell(old)}` | `{_cell(new)}` | {_cell(verdict, 2000)} |")
    print()
    print(f"{len(rows)} survivors: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))


if __name__ == "__main__":
    main()
