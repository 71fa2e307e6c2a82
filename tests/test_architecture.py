"""The package layout stays true: stages import only earlier stages, and modules form no import cycle.

Imports are read with ``ast`` from every module of ``prefixlint/``, including imports inside
functions (they run too, only later). Imports under ``if TYPE_CHECKING:`` obey the stage order but
are left out of the cycle check, since they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "prefixlint"

# Each stage and the stages it may import (itself included). Data flows one way: sources ->
# layout (model) -> rules or cache model -> findings or reports -> reporters; commands drive them.
ALLOWED: dict[str, set[str]] = {
    "model": {"model"},
    "plugins": {"plugins", "model"},
    "analysis": {"analysis", "model", "plugins"},
    "rules": {"rules", "model", "plugins"},
    "sdk": {"sdk", "model", "analysis"},
    "live": {"live", "model"},
    "engine": {"engine", "model"},
    "audit": {"audit", "model", "analysis"},
    "lint": {"lint", "model", "plugins", "analysis", "rules"},
    "report": {"report", "model", "rules", "audit"},
    "testing": {"testing", "model", "analysis", "sdk", "rules", "lint"},
    "commands": {
        "commands",
        "model",
        "plugins",
        "analysis",
        "rules",
        "sdk",
        "live",
        "engine",
        "audit",
        "lint",
        "report",
    },
    "cli": {"commands"},
    "__main__": {"cli"},
    "_moved": set(),
}
# The package itself (``from prefixlint import __version__``) may be imported from anywhere.
ROOT = "prefixlint"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_package(name: str) -> bool:
    return (PACKAGE.parent / name.replace(".", "/") / "__init__.py").is_file()


def is_module(name: str) -> bool:
    return is_package(name) or (PACKAGE.parent / (name.replace(".", "/") + ".py")).is_file()


def stage_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of import nodes under ``if TYPE_CHECKING:``."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                out.update(id(n) for n in ast.walk(inner) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return out


def imports_of(path: Path) -> list[tuple[str, int, bool]]:
    """``(imported module, line, type_checking_only)`` for every import of a prefixlint module."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    guarded = _type_checking_nodes(tree)
    out: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == ROOT or alias.name.startswith(ROOT + "."):
                    out.append((alias.name, node.lineno, id(node) in guarded))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            if base != ROOT and not base.startswith(ROOT + "."):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub if is_module(sub) else base, node.lineno, id(node) in guarded))
    return out


MODULES = sorted(PACKAGE.rglob("*.py"))
GRAPH = {module_name(p): imports_of(p) for p in MODULES}


def test_every_stage_is_known() -> None:
    stages = {stage_of(m) for m in GRAPH} - {ROOT}
    assert stages <= set(ALLOWED), f"stages without a rule in ALLOWED: {sorted(stages - set(ALLOWED))}"


def test_no_stage_imports_a_later_stage() -> None:
    bad = []
    for mod, imports in GRAPH.items():
        stage = stage_of(mod)
        if stage == ROOT:
            continue
        for target, line, _ in imports:
            other = stage_of(target)
            if other != ROOT and other not in ALLOWED[stage]:
                bad.append(f"{mod}:{line} imports {target} ({stage} may not import {other})")
    assert not bad, "\n".join(bad)


def test_model_imports_nothing_else_of_the_package() -> None:
    for mod, imports in GRAPH.items():
        if stage_of(mod) == "model":
            assert all(stage_of(t) == "model" for t, _, _ in imports), mod


def test_no_import_cycles() -> None:
    edges = {
        m: {t for t, _, guarded in imps if not guarded and t != m and t in GRAPH} for m, imps in GRAPH.items()
    }
    cycles = _strongly_connected(edges)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(sorted(c)) for c in cycles)


def _strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative; returns the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.add(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_cycle_detection_finds_a_cycle() -> None:
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _strongly_connected({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_each_subpackage_says_what_it_takes_and_gives(path: Path) -> None:
    if path.name != "__init__.py" or path.parent == PACKAGE or path.parent.parent != PACKAGE:
        return
    doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
    assert len(doc.splitlines()) >= 2, (
        f"{module_name(path)}: the docstring says what the stage takes and gives"
    )
