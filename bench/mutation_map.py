"""Which test files run which lines of the mutated code: a coverage map for ``bench/mutation.py``.

    python bench/mutation_map.py --out /tmp/mutation-map.json     # build it (minutes: every test file)
    python bench/mutation_map.py --base /tmp/mutation-map.json --add tests/test_new.py --out NEW
                                  # a copy of a map with new or changed test files measured into it

Each test file runs alone under ``coverage`` (line coverage of ``prefixlint/analysis`` and
``prefixlint/rules``), in the same kind of scratch copy of the repository that ``bench/mutation.py``
writes its mutants into: a test file that fails there (say for want of a file the copy leaves out) is
left out of the map, rather than counted as killing every mutant it runs.
The linter checks files in forked workers (``os._exit``) and the CLI tests run ``prefixlint`` in
subprocesses, so coverage is told to follow both (``patch = _exit, subprocess``);
without that it sees 7% of ``evaluate.py`` where the tests run 63%. A mutant is then tried against the
test files that run its statement, and a mutant that no test file runs survives without a run.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ("prefixlint/analysis", "prefixlint/rules")
# Test files that cannot run the analysis or the rules: the engine, the SDK, the live tools.
SKIPPED_PREFIXES = ("test_engine", "test_sdk", "test_canary", "test_probe", "test_live", "test_bench_")

_RC = """\
[run]
parallel = true
patch =
    _exit
    subprocess
include =
{include}
data_file = {data}
"""


def test_files(root: Path = ROOT) -> list[str]:
    """Every test file the map covers, as paths relative to ``root``."""
    return [
        f"tests/{p.name}"
        for p in sorted((root / "tests").glob("test_*.py"))
        if not p.name.startswith(SKIPPED_PREFIXES)
    ]


def _measure(root: Path, test: str, work: Path) -> tuple[str, dict[str, list[int]], float, bool]:
    """Run one test file under coverage: its executed lines per measured source file, its seconds,
    and whether it passed."""
    import coverage

    folder = work / Path(test).stem
    folder.mkdir()
    rc = folder / "coveragerc"
    include = "\n".join(f"    {root / m}/*" for m in MEASURED)
    rc.write_text(_RC.format(include=include, data=folder / ".coverage"), "utf-8")
    env = {**os.environ, "PYTHONPATH": str(root)}
    start = time.monotonic()
    cmd = [sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", "-m", "pytest", "-q"]
    done = subprocess.run(
        [*cmd, "-p", "no:cacheprovider", test], cwd=root, env=env, capture_output=True, check=False
    )
    seconds = time.monotonic() - start
    cov = coverage.Coverage(config_file=str(rc))
    cov.combine(data_paths=[str(folder)], keep=False)
    data = cov.get_data()
    lines: dict[str, list[int]] = {}
    for measured in data.measured_files():
        rel = Path(measured).resolve().relative_to(root.resolve()).as_posix()
        lines[rel] = sorted(data.lines(measured) or ())
    return test, lines, seconds, done.returncode == 0


def build(root: Path, tests: list[str], jobs: int) -> dict:
    """``{"lines": {test file: {source file: executed lines}}, "seconds": {test file: s}}`` for the
    ``tests`` that pass (``"failed"``: those that do not, left out), ``jobs`` at a time."""
    out: dict = {"lines": {}, "seconds": {}, "failed": []}
    with (
        tempfile.TemporaryDirectory(prefix="prefixlint-mutation-map-") as tmp,
        ThreadPoolExecutor(jobs) as pool,
    ):
        for test, lines, seconds, passed in pool.map(lambda t: _measure(root, t, Path(tmp)), tests):
            if not passed:
                out["failed"].append(test)
                print(f"FAILED  {test}: left out of the map", flush=True)
                continue
            out["lines"][test] = lines
            out["seconds"][test] = round(seconds, 1)
            print(f"{seconds:6.1f}s  {test}: {sum(map(len, lines.values()))} lines", flush=True)
    return out


def merge(base: dict, added: dict) -> dict:
    """A copy of the map ``base`` with the test files measured in ``added`` put in (replacing what
    ``base`` says of them); a test file that failed there is taken out of the map."""
    out = {
        "lines": dict(base["lines"]),
        "seconds": dict(base["seconds"]),
        "failed": [t for t in base.get("failed", []) if t not in added["lines"]],
    }
    for test in added.get("failed", []):
        out["lines"].pop(test, None)
        out["seconds"].pop(test, None)
        if test not in out["failed"]:
            out["failed"].append(test)
    out["lines"].update(added["lines"])
    out["seconds"].update(added["seconds"])
    return out


def statement_lines(source: str) -> dict[int, range]:
    """For each line, the lines of the innermost statement holding it (a compound one: its header)."""
    spans: dict[int, range] = {}

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                end = child.end_lineno or child.lineno
                body = getattr(child, "body", None)
                if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                    end = max(child.lineno, body[0].lineno - 1)  # the header only
                for line in range(child.lineno, end + 1):
                    spans[line] = range(child.lineno, end + 1)  # inner statements come later
            visit(child)

    visit(ast.parse(source))
    return spans


class CoverageMap:
    """The test files that run a given line of a measured source file."""

    def __init__(self, data: dict, root: Path = ROOT) -> None:
        self.root = root
        self.seconds: dict[str, float] = data["seconds"]
        self._by_source: dict[str, dict[int, list[str]]] = {}
        for test, files in data["lines"].items():
            for source, lines in files.items():
                per_line = self._by_source.setdefault(source, {})
                for line in lines:
                    per_line.setdefault(line, []).append(test)
        self._spans: dict[str, dict[int, range]] = {}

    @classmethod
    def load(cls, path: Path, root: Path = ROOT) -> CoverageMap:
        return cls(json.loads(path.read_text("utf-8")), root)

    def tests_running(self, source: str, line: int) -> set[str]:
        """Test files that run the statement on ``line`` of ``source`` (any line of it)."""
        per_line = self._by_source.get(source)
        if not per_line:
            return set()
        spans = self._spans.get(source)
        if spans is None:
            spans = self._spans[source] = statement_lines((self.root / source).read_text("utf-8"))
        found: set[str] = set()
        for each in spans.get(line, range(line, line + 1)):
            found.update(per_line.get(each, ()))
        return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="the JSON map to write")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--test", action="append", default=[], help="only these test files")
    ap.add_argument("--add", action="append", default=[], help="with --base: measure these test files")
    ap.add_argument("--base", type=Path, help="a map to copy, the --add test files merged into it")
    args = ap.parse_args(argv)
    if bool(args.add) != bool(args.base):
        ap.error("--add and --base go together")
    sys.path.insert(0, str(ROOT / "bench"))
    from mutation import scratch_copy

    scratch = scratch_copy()
    try:
        data = build(scratch, args.add or args.test or test_files(), args.jobs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.base:
        data = merge(json.loads(args.base.read_text("utf-8")), data)
    if data["failed"]:
        print(f"{len(data['failed'])} test files fail without a mutant: {' '.join(data['failed'])}")
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), "utf-8")
    tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
