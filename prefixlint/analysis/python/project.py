"""The project index: other modules of the same project, parsed lazily and cached per process.

When the analyzer meets ``from .prompts import SYSTEM_TEMPLATE`` or ``import harbor.prompts``, it
asks :class:`ProjectContext` for the module. The file is located under the project root (or next to
the importing file), parsed once with libcst and collected into a :class:`ModuleInfo`, whose
module-level constants and functions (including prompt-returning helpers) the evaluator then reads.
Every file read is recorded so the lint cache can invalidate dependents.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from prefixlint.analysis.python.collect import ModuleInfo, parse_module
from prefixlint.config import Settings


class ProjectContext:
    """Lazy, cached index of the modules of one project."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(root).resolve()
        self.settings = settings
        self._modules: dict[str, ModuleInfo | None] = {}
        self._refs: dict[str, set[str]] | None = None

    def references(self, name: str, wanted: Callable[[str], bool]) -> set[str]:
        """Python files of the project that mention identifier ``name``.

        The index is built once per process over identifiers for which ``wanted`` is true (the
        prompt-like names), so that a template constant filled in another module is reported there,
        at its sink, and not a second time as an unfilled template.
        """
        if self._refs is None:
            refs: dict[str, set[str]] = {}
            verdict: dict[str, bool] = {}
            for path in _python_files(self.root):
                try:
                    text = path.read_text("utf-8", errors="replace")
                except OSError:
                    continue
                resolved = str(path.resolve())
                for ident in set(_IDENT.findall(text)):
                    ok = verdict.get(ident)
                    if ok is None:
                        ok = verdict[ident] = wanted(ident)
                    if ok:
                        refs.setdefault(ident, set()).add(resolved)
            self._refs = refs
        return self._refs.get(name, set())

    def module_file(self, importer: str, module: str, level: int = 0) -> Path | None:
        """The file that ``import module`` (relative ``level``) from ``importer`` refers to."""
        parts = [p for p in module.split(".") if p]
        bases: list[Path] = []
        here = Path(importer).resolve().parent
        if level > 0:
            base = here
            for _ in range(level - 1):
                base = base.parent
            bases.append(base)
        else:
            bases.extend([self.root, here])
            # a package directory above the importer: ``import harbor.prompts`` from harbor/agent.py
            for parent in here.parents:
                bases.append(parent)
                if parent == self.root or len(bases) > 8:
                    break
            src = self.root / "src"
            if src.is_dir():
                bases.append(src)
        for base in bases:
            target = base.joinpath(*parts) if parts else base
            for cand in (target.with_suffix(".py") if parts else None, target / "__init__.py"):
                if cand is not None and cand.is_file():
                    return cand
        return None

    def load(self, path: Path | str) -> ModuleInfo | None:
        """The collected module at ``path`` (None when unreadable or unparsable)."""
        key = str(Path(path).resolve())
        if key in self._modules:
            return self._modules[key]
        self._modules[key] = None  # guards against import cycles while parsing
        try:
            text = Path(key).read_text("utf-8")
            info = parse_module(key, text)
        except Exception:
            info = None
        self._modules[key] = info
        return info

    def resolve_import(self, importer: str, module: str, level: int) -> ModuleInfo | None:
        f = self.module_file(importer, module, level)
        return self.load(f) if f is not None else None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SKIP_DIRS = {"node_modules", "venv", "site-packages", "__pycache__", "build", "dist", "env"}
MAX_INDEXED_FILES = 20000


def _python_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS]
        for name in filenames:
            if name.endswith(".py"):
                out.append(Path(dirpath) / name)
                if len(out) >= MAX_INDEXED_FILES:
                    return out
    return out
