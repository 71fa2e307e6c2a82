"""Mutation testing of the analysis and the rules: does a small change to the code fail a test?

    python bench/mutation.py --sample 150 --seed 1          # a random sample; prints the kill rate
    python bench/mutation.py --sample 150 --seed 1 --resume  # go on where an interrupted run stopped
    python bench/mutation.py --sample 150 --seed 1 --resume --retry-survivors  # after adding tests
    python bench/mutation.py --sample 150 --seed 1 --resume --report  # the results so far
    python bench/mutation.py --list                          # count the mutants by operator and file
    python bench/mutation.py --show ID                       # the change one mutant makes
    python bench/mutation_map.py --out MAP && python bench/mutation.py --sample 150 --map MAP
                                                             # each mutant against the test files that
                                                             # run it (a mutant none runs: survived)

Mutants are made with libcst inside the functions of ``prefixlint/analysis/`` and
``prefixlint/rules/`` (module tables, class-level rule examples and docstrings are left alone):

- ``compare``: ``==``/``!=``, ``<``/``>=``, ``>``/``<=``, ``is``/``is not``, ``in``/``not in`` flipped;
- ``bool``: ``and``/``or`` swapped, ``True``/``False`` swapped, a ``not`` dropped;
- ``const``: an integer or float constant plus one, a string compared against changed;
- ``return``: ``return <value>`` made ``return None``;
- ``branch``: an ``if``/``elif`` whose test is made ``False`` (its body dropped);
- ``stmt``: an assignment, ``+=`` or call statement replaced by ``pass``.

Each mutant is written into a scratch copy of the repository, and the tests that cover its folder run
in a child forked from a warm parent (pytest and the third-party libraries already imported; the
package itself is imported fresh in each child), with ``-x`` and a per-mutant timeout. A failing test
or a timeout kills the mutant. Results go to a JSON Lines state file, one line per mutant, so a
stopped run resumes with ``--resume``; ``--minutes`` stops a run cleanly when its time is up.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("prefixlint/analysis", "prefixlint/rules")
STATE = ROOT / "bench" / ".mutation-state.jsonl"

# The fast tests that cover each folder, the quickest and most likely to fail first (-x stops there).
TESTS = {
    "prefixlint/analysis/python/": [
        "tests/test_mutants_survivors.py",  # aimed at the survivors of the seed-1 sample
        "tests/test_lazy_binds.py",
        "tests/test_cst_parse.py",
        "tests/test_python_positions.py",
        "tests/test_python_analysis.py",
        "tests/test_analysis_mutants.py",
        "tests/test_mutants_python_core.py",
        "tests/test_mutants_python_rest.py",
        "tests/test_rule_examples.py",
        "tests/test_value_flow.py",
        "tests/test_interprocedural.py",
        "tests/test_prompt_callables.py",
        "tests/test_prompt_registry.py",
        "tests/test_marker_fills.py",
        "tests/test_framework_agent_sinks.py",
        "tests/test_template_files_linked.py",
        "tests/test_template_render_callers.py",
        "tests/test_python_kinds.py",
        "tests/test_constructed_objects.py",
        "tests/test_compound_names.py",
        "tests/test_flag_branches.py",
        "tests/test_prompts_messages.py",
        "tests/test_prompts_joined_parts.py",
        "tests/test_prompts_template_sources.py",
        "tests/test_prompts_fixes.py",
        "tests/test_prompts_requests.py",
        "tests/test_prompts_langchain.py",
        "tests/test_prompts_render_names.py",
        "tests/test_prompts_module_values.py",
        "tests/test_prompts_subclass_sinks.py",
        "tests/test_flow_expressions.py",
        "tests/test_flow_tables.py",
        "tests/test_flow_objects.py",
        "tests/test_flow_callers.py",
        "tests/test_flow_turns.py",
        "tests/test_flow_locals.py",
        "tests/test_flow_records.py",
        "tests/test_flow_time.py",
        "tests/test_flow_helpers.py",
        "tests/test_flow_fields.py",
        "tests/test_flow_retrievers.py",
        "tests/test_flow_json.py",
        "tests/test_flow_repr.py",
    ],
    "prefixlint/analysis/templates/": [
        "tests/test_mutants_survivors.py",  # aimed at the survivors of the seed-1 sample
        "tests/test_templates_structured.py",
        "tests/test_templates_jinja_features.py",
        "tests/test_templates_jinja_expressions.py",
        "tests/test_templates_placeholder_styles.py",
        "tests/test_templates_prompty_meta.py",
        "tests/test_templates_suppressions.py",
        "tests/test_mutants_templates.py",
        "tests/test_templates_placeholders.py",
        "tests/test_templates_jinja.py",
        "tests/test_templates_files.py",
        "tests/test_analysis_mutants.py",
        "tests/test_template_files_linked.py",
        "tests/test_template_render_callers.py",
    ],
    "prefixlint/analysis/payloads/": [
        "tests/test_mutants_survivors.py",  # aimed at the survivors of the seed-1 sample
        "tests/test_payloads_pieces.py",
        "tests/test_payloads_compare.py",
        "tests/test_payloads_documents.py",
        "tests/test_mutants_payloads.py",
        "tests/test_payload_reader.py",
        "tests/test_payload_align.py",
        "tests/test_payloads.py",
        "tests/test_payload_check.py",
        "tests/test_payload_chunks.py",
    ],
    "prefixlint/analysis/": [
        "tests/test_catalog_names.py",
        "tests/test_mutants_catalog.py",
        "tests/test_python_analysis.py",
        "tests/test_analysis_mutants.py",
        "tests/test_rule_examples.py",
    ],
    "prefixlint/rules/": [
        "tests/test_rules_unlocated.py",
        "tests/test_rule_examples.py",
        "tests/test_analysis_mutants.py",
        "tests/test_rule_fixtures.py",
        "tests/test_rules_table.py",
        "tests/test_rule_cost_model.py",
    ],
}

_FLIP = {
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
    cst.LessThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.LessThan,
    cst.GreaterThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.GreaterThan,
    cst.Is: cst.IsNot,
    cst.IsNot: cst.Is,
    cst.In: cst.NotIn,
    cst.NotIn: cst.In,
}


@dataclass(frozen=True)
class Mutant:
    """One change: the ``index``-th place of ``operator`` in ``path`` (stable while the file is)."""

    path: str
    operator: str
    index: int
    line: int

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}:{self.operator}:{self.index}"


class _Mutator(cst.CSTTransformer):
    """Counts the places of each operator inside functions; changes the one asked for, if any."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, target: tuple[str, int] | None = None) -> None:
        self.target = target
        self.found: list[tuple[str, int, int]] = []  # (operator, index, line)
        self.counts: Counter[str] = Counter()
        self.depth = 0  # inside how many function definitions
        self.done = False

    def _place(self, operator: str, node: cst.CSTNode) -> bool:
        """Record a place; True when it is the one to change."""
        if self.depth == 0:
            return False
        index = self.counts[operator]
        self.counts[operator] += 1
        line = self.get_metadata(PositionProvider, node).start.line
        self.found.append((operator, index, line))
        if self.target == (operator, index):
            self.done = True
            return True
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.CSTNode:
        self.depth -= 1
        return updated

    def leave_ComparisonTarget(self, original, updated):  # type: ignore[no-untyped-def]
        flip = _FLIP.get(type(original.operator))
        if flip is not None and self._place("compare", original):
            return updated.with_changes(operator=flip())
        return updated

    def leave_BooleanOperation(self, original, updated):  # type: ignore[no-untyped-def]
        if self._place("bool", original):
            op = cst.Or() if isinstance(original.operator, cst.And) else cst.And()
            return updated.with_changes(operator=op)
        return updated

    def leave_Name(self, original, updated):  # type: ignore[no-untyped-def]
        if original.value in ("True", "False") and self._place("bool", original):
            return updated.with_changes(value="False" if original.value == "True" else "True")
        return updated

    def leave_UnaryOperation(self, original, updated):  # type: ignore[no-untyped-def]
        if isinstance(original.operator, cst.Not) and self._place("bool", original):
            return updated.expression.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return updated

    def leave_Integer(self, original, updated):  # type: ignore[no-untyped-def]
        if self._place("const", original):
            return cst.Integer(str(int(original.value.replace("_", ""), 0) + 1))
        return updated

    def leave_Float(self, original, updated):  # type: ignore[no-untyped-def]
        if self._place("const", original):
            return cst.Float(repr(float(original.value.replace("_", "")) + 1.0))
        return updated

    def leave_Comparison(self, original, updated):  # type: ignore[no-untyped-def]
        # strings a value is compared against: ``kind == "assign"``, ``x in ("a", "b")``
        strings = [original.left] + [t.comparator for t in original.comparisons]
        for i, part in enumerate(strings):
            elements = part.elements if isinstance(part, (cst.Tuple, cst.List, cst.Set)) else [part]
            for j, el in enumerate(elements):
                value = el.value if isinstance(el, cst.BaseElement) else el
                if isinstance(value, cst.SimpleString) and self._place("const", value):
                    changed = value.with_changes(value=value.value[:-1] + "_x" + value.value[-1])
                    return _replace_string(updated, i, j, changed)
        return updated

    def leave_Return(self, original, updated):  # type: ignore[no-untyped-def]
        value = original.value
        returns_none = value is None or (isinstance(value, cst.Name) and value.value == "None")
        if not returns_none and self._place("return", original):
            return updated.with_changes(value=cst.Name("None"))
        return updated

    def leave_If(self, original, updated):  # type: ignore[no-untyped-def]
        if self._place("branch", original):
            return updated.with_changes(test=cst.Name("False"))
        return updated

    def leave_SimpleStatementLine(self, original, updated):  # type: ignore[no-untyped-def]
        body = original.body
        if len(body) != 1 or not isinstance(body[0], (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr)):
            return updated
        if isinstance(body[0], cst.Expr) and not isinstance(body[0].value, cst.Call):
            return updated  # a docstring or a bare name
        if self._place("stmt", original):
            return updated.with_changes(body=[cst.Pass()])
        return updated


def _replace_string(cmp: cst.Comparison, part: int, element: int, new: cst.SimpleString) -> cst.Comparison:
    """``cmp`` with the ``element``-th string of its ``part``-th operand replaced by ``new``."""

    def swap(node: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            els = list(node.elements)
            els[element] = els[element].with_changes(value=new)
            return node.with_changes(elements=els)
        return new

    if part == 0:
        return cmp.with_changes(left=swap(cmp.left))
    targets = list(cmp.comparisons)
    targets[part - 1] = targets[part - 1].with_changes(comparator=swap(targets[part - 1].comparator))
    return cmp.with_changes(comparisons=targets)


def _source_files(root: Path) -> list[str]:
    out = []
    for target in TARGETS:
        out.extend(str(p.relative_to(root)) for p in sorted((root / target).rglob("*.py")))
    return out


def all_mutants(root: Path = ROOT) -> list[Mutant]:
    mutants = []
    for rel in _source_files(root):
        tree = MetadataWrapper(cst.parse_module((root / rel).read_text("utf-8")))
        finder = _Mutator()
        tree.visit(finder)
        mutants.extend(Mutant(rel, op, index, line) for op, index, line in finder.found)
    return mutants


def mutated_source(root: Path, mutant: Mutant) -> str:
    tree = MetadataWrapper(cst.parse_module((root / mutant.path).read_text("utf-8")))
    changer = _Mutator((mutant.operator, mutant.index))
    new = tree.visit(changer)
    if not changer.done:
        raise ValueError(f"{mutant.id}: no such place (the file changed?)")
    return new.code


def tests_for(path: str) -> list[str]:
    for prefix, tests in TESTS.items():
        if path.startswith(prefix):
            return tests
    return TESTS["prefixlint/analysis/"]


def diff_line(root: Path, mutant: Mutant, new: str) -> str:
    """The first line that differs, before -> after."""
    old_lines = (root / mutant.path).read_text("utf-8").splitlines()
    new_lines = new.splitlines()
    for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)):
        if a != b:
            return f"{i + 1}: {a.strip()}  ->  {b.strip()}"
    return f"{mutant.line}: (lines removed)"


# --- running ---------------------------------------------------------------------------------------


def scratch_copy() -> Path:
    """A copy of the repository the mutants are written into (the worktree is never touched)."""
    dest = Path(tempfile.mkdtemp(prefix="prefixlint-mutation-"))
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".*_cache", "*.pyc", ".prefixlint_cache")
    for name in ("prefixlint", "tests", "docs", "examples", "pyproject.toml", "README.md"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def warm_imports() -> None:
    """Import what every child needs but the package itself (which each child imports mutated)."""
    import hypothesis  # noqa: F401
    import jinja2  # noqa: F401
    import pytest  # noqa: F401
    import syrupy  # noqa: F401
    import tiktoken  # noqa: F401
    import typer  # noqa: F401
    from typer.testing import CliRunner  # noqa: F401

    assert not any(m == "prefixlint" or m.startswith("prefixlint.") for m in sys.modules)


def run_tests(scratch: Path, tests: list[str], timeout: float, cache_bytecode: bool) -> tuple[str, float]:
    """Run ``tests`` in a forked child; ("passed" | "failed" | "timeout", seconds)."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child
        code = 3
        try:
            os.setpgid(0, 0)  # its own group: a timeout kills the subprocesses its tests start, too
            os.chdir(scratch)
            sys.path.insert(0, str(scratch))
            os.environ["PYTHONPATH"] = str(scratch)
            sys.dont_write_bytecode = not cache_bytecode
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            import pytest

            code = int(pytest.main(["-q", "-x", "-p", "no:cacheprovider", *tests]))
        finally:
            os._exit(code)  # a forked child must not run the parent's exit handlers
    deadline = start + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            seconds = time.monotonic() - start
            return ("passed" if os.waitstatus_to_exitcode(status) == 0 else "failed"), seconds
        if time.monotonic() > deadline:
            if _own_group(pid):
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", time.monotonic() - start
        time.sleep(0.05)


def _own_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def _forget_bytecode(scratch: Path, rel: str) -> None:
    path = scratch / rel
    for pyc in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
        pyc.unlink()


def load_state(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["id"]] = row
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=0, help="run N mutants drawn at random (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--resume", action="store_true", help="skip mutants already in the state file")
    ap.add_argument("--retry-survivors", action="store_true", help="with --resume: run survivors again")
    ap.add_argument("--state", type=Path, default=STATE)
    ap.add_argument("--timeout", type=float, default=0, help="seconds per mutant (0: 3x the clean run)")
    ap.add_argument("--minutes", type=float, default=0, help="stop starting mutants after this long")
    ap.add_argument("--path", default="", help="only mutants of files under this path")
    ap.add_argument("--list", action="store_true", help="count the mutants and exit")
    ap.add_argument("--report", action="store_true", help="print the state file's results and exit")
    ap.add_argument("--show", metavar="ID", help="print one mutant's change and exit")
    ap.add_argument("--only", metavar="ID", action="append", default=[], help="run only these mutants")
    ap.add_argument(
        "--map",
        type=Path,
        help="a coverage map (bench/mutation_map.py): each mutant runs the test files that run its "
        "statement, its folder's first; a mutant no test runs survives without a run",
    )
    args = ap.parse_args(argv)

    mutants = [m for m in all_mutants() if m.path.startswith(args.path)]
    if args.list:
        print(f"{len(mutants)} mutants")
        for (op,), n in sorted(Counter((m.operator,) for m in mutants).items()):
            print(f"  {op:8} {n}")
        for path, n in Counter(m.path for m in mutants).most_common():
            print(f"  {n:5}  {path}")
        return 0
    if args.show:
        m = next(m for m in mutants if m.id == args.show)
        print(diff_line(ROOT, m, mutated_source(ROOT, m)))
        return 0
    if args.only:
        mutants = [m for m in mutants if m.id in set(args.only)]
    elif args.sample:
        mutants = sorted(
            random.Random(args.seed).sample(mutants, min(args.sample, len(mutants))), key=Mutant.id.fget
        )
    state = load_state(args.state) if args.resume or args.report else {}
    if not args.resume and not args.report and args.state.exists():  # --report only reads it
        args.state.unlink()
    retry = args.retry_survivors
    todo = [m for m in mutants if m.id not in state or (retry and state[m.id]["status"] == "survived")]
    print(f"{len(mutants)} mutants, {len(mutants) - len(todo)} already run", flush=True)
    if args.report:
        return report([state[m.id] for m in mutants if m.id in state])

    cmap = None
    if args.map:
        sys.path.insert(0, str(ROOT / "bench"))
        from mutation_map import CoverageMap

        cmap = CoverageMap.load(args.map)
    warm_imports()
    scratch = scratch_copy()
    started = time.monotonic()
    try:
        clean: dict[tuple[str, ...], float] = {}
        for m in todo:
            if args.minutes and time.monotonic() - started > args.minutes * 60:
                print("time is up: stopping (run again with --resume)", flush=True)
                break
            tests = tests_for(m.path)
            if cmap is not None:
                running = cmap.tests_running(m.path, m.line)
                tests = [t for t in tests if t in running] + sorted(running.difference(tests))
                if not tests:
                    row = {"id": m.id, "status": "survived", "seconds": 0.0, "change": "no test runs it: "}
                    row["change"] += diff_line(ROOT, m, mutated_source(ROOT, m))
                    state[m.id] = row
                    with args.state.open("a", encoding="utf-8") as f:
                        f.write(json.dumps(row) + "\n")
                    print(f"survived   0.0s  {m.id} (no test runs it)", flush=True)
                    continue
                # The map's runs passed, and their time (under coverage, so longer) sets the timeout.
                clean.setdefault(tuple(tests), sum(cmap.seconds[t] for t in tests))
            if tuple(tests) not in clean:  # the clean run: must pass, and sets the timeout
                result, seconds = run_tests(scratch, tests, 600, cache_bytecode=True)
                if result != "passed":
                    print(f"the tests fail without a mutant: {' '.join(tests)}", file=sys.stderr)
                    return 2
                clean[tuple(tests)] = seconds
            timeout = args.timeout or max(30.0, 3 * clean[tuple(tests)])
            new = mutated_source(ROOT, m)
            target = scratch / m.path
            original = target.read_text("utf-8")
            target.write_text(new, "utf-8")
            _forget_bytecode(scratch, m.path)
            try:
                result, seconds = run_tests(scratch, tests, timeout, cache_bytecode=False)
            finally:
                target.write_text(original, "utf-8")
            status = {"failed": "killed", "passed": "survived", "timeout": "timeout"}[result]
            row = {
                "id": m.id,
                "status": status,
                "seconds": round(seconds, 1),
                "change": diff_line(ROOT, m, new),
            }
            state[m.id] = row
            with args.state.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{status:8} {seconds:5.1f}s  {m.id}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return report([state[m.id] for m in mutants if m.id in state])


def report(rows: list[dict]) -> int:
    counts = Counter(r["status"] for r in rows)
    total = len(rows)
    killed = counts["killed"] + counts["timeout"]
    rate = 100.0 * killed / total if total else 0.0
    print(
        f"\n{total} mutants run: {counts['killed']} killed, {counts['timeout']} timed out (killed), "
        f"{counts['survived']} survived; kill rate {rate:.1f}%"
    )
    for r in rows:
        if r["status"] == "survived":
            print(f"  SURVIVED {r['id']}\n           {r['change']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
