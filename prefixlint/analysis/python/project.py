"""The project index: other modules of the same project, parsed lazily and cached per process.

When the analyzer meets ``from .prompts import SYSTEM_TEMPLATE`` or ``import harbor.prompts``, it
asks :class:`ProjectContext` for the module. The file is located under the project root (or next to
the importing file), parsed once with libcst and collected into a :class:`ModuleInfo`, whose
module-level constants and functions (including prompt-returning helpers) the evaluator then reads.
Every file read is recorded so the lint cache can invalidate dependents.
"""

from __future__ import annotations

import logging
import os
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prefixlint.analysis.python.collect import ModuleInfo, parse_module, resolved
from prefixlint.model.files import file_key
from prefixlint.model.settings import Settings
from prefixlint.model.source_text import read_source

log = logging.getLogger(__name__)


class ProjectContext:
    """Lazy, cached index of the modules of one project."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(root).resolve()
        self.settings = settings
        # path -> (mtime_ns and size when parsed, the module): a file changed since (by ``--fix``, or
        # an editor in a long-lived process) is parsed again
        self._modules: dict[str, tuple[tuple[int, int] | None, ModuleInfo | None]] = {}
        self._refs: dict[str, set[str]] = {}
        self._blob: bytes | None = None
        self._starts: list[int] = []
        self._paths: list[Path] = []
        self._resolved_paths: dict[Path, str] = {}
        self._files: dict[tuple[str, str, int], Path | None] = {}
        self._listings: dict[str, frozenset[str]] = {}
        # per-run function summaries (which helpers send a prompt, what a parameter's callers pass),
        # by summary name; cleared when a file changes on disk
        self.summaries: dict[str, dict] = {}

    def references(self, name: str, wanted: Callable[[str], bool]) -> set[str]:
        """Python files of the project that mention identifier ``name`` (when ``wanted(name)``).

        Lets a template constant filled in another module be reported there, at its sink, and not
        a second time as an unfilled template. Nothing is read until the first question; then the
        project's files are read once into one buffer and each name is a plain bytes search in it
        (no tokenizing, no parse), remembered per name.
        """
        got = self._refs.get(name)
        if got is None:
            got = self._refs[name] = self._search(name) if wanted(name) else set()
        return set(got)

    def _search(self, name: str) -> set[str]:
        if not name.isascii():
            return set()  # the identifier scan this replaces only knew ASCII identifiers
        if self._blob is None:
            self._load_blob()
        assert self._blob is not None
        blob, starts, paths = self._blob, self._starts, self._paths
        needle = name.encode()
        n = len(needle)
        out: set[str] = set()
        i = blob.find(needle)
        while i >= 0:
            k = bisect_right(starts, i) - 1
            if _whole_identifier(blob, i, n):
                out.add(self._resolved(paths[k]))
                # the next file: one hit per file is enough
                if k + 1 >= len(starts):
                    break
                i = blob.find(needle, starts[k + 1])
            else:
                i = blob.find(needle, i + 1)
        return out

    def _load_blob(self) -> None:
        chunks: list[bytes] = []
        starts: list[int] = []
        paths: list[Path] = []
        at = 0
        for path in _python_files(self.root):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            starts.append(at)
            paths.append(path)
            chunks.append(data)
            at += len(data) + 1
        self._blob = b"\n".join(chunks)  # a newline between files: no match spans two of them
        self._starts = starts
        self._paths = paths

    def _resolved(self, path: Path) -> str:
        got = self._resolved_paths.get(path)
        if got is None:
            got = self._resolved_paths[path] = str(path.resolve())
        return got

    def module_file(self, importer: str, module: str, level: int = 0) -> Path | None:
        """The file that ``import module`` (relative ``level``) from ``importer`` refers to."""
        key = (os.path.dirname(resolved(importer)), module, level)  # only its folder matters
        if key not in self._files:
            self._files[key] = self._module_file(importer, module, level)
        return self._files[key]

    def _module_file(self, importer: str, module: str, level: int) -> Path | None:
        parts = [p for p in module.split(".") if p]
        bases: list[str] = []
        here = os.path.dirname(resolved(importer))
        if level > 0:
            base = here
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases.append(base)
        else:
            root = str(self.root)
            bases.extend([root, here])
            # a package directory above the importer: ``import harbor.prompts`` from harbor/agent.py
            for parent in Path(here).parents:
                bases.append(str(parent))
                if parent == self.root or len(bases) > 8:
                    break
            src = os.path.join(root, "src")
            if self._listed(root, "src"):
                bases.append(src)
        for base in bases:
            if parts and not self._holds_either(base, parts[0], parts[0] + ".py"):
                continue  # neither package nor module ``parts[0]`` here: nothing below it to list
            target = os.path.join(base, *parts) if parts else base
            if parts and self._listed(os.path.dirname(target), parts[-1] + ".py"):
                return Path(target + ".py")
            if self._listed(target, "__init__.py"):
                return Path(target) / "__init__.py"
        return None

    def _holds_either(self, folder: str, first: str, second: str) -> bool:
        """``folder``'s listing has an entry ``first`` or ``second`` (of any type)."""
        names = self._names(folder)
        return first in names or second in names

    def _names(self, folder: str) -> frozenset[str]:
        names = self._listings.get(folder)
        if names is None:
            try:
                names = frozenset(os.listdir(folder))
            except OSError:
                names = frozenset()
            self._listings[folder] = names
        return names

    def _listed(self, folder: str, name: str) -> bool:
        """``folder/name`` exists as a file (or, for ``src``, a folder): one listing per folder per run
        answers most questions, so a failed lookup costs no ``stat``."""
        if name not in self._names(folder):
            return False
        full = os.path.join(folder, name)
        return os.path.isdir(full) if name == "src" else os.path.isfile(full)

    def load(self, path: Path | str) -> ModuleInfo | None:
        """The collected module at ``path`` (None when unreadable or unparsable)."""
        key = resolved(str(path))
        sig = file_key(key)
        hit = self._modules.get(key)
        if hit is not None and hit[0] == sig:
            return hit[1]
        if hit is not None:  # changed on disk: what was read from it before is stale too
            self._refs.clear()
            self._blob = None
            self.summaries.clear()
        self._modules[key] = (sig, None)  # guards against import cycles while parsing
        text, error = read_source(key)  # a fixed text under ``--diff`` stands in for the file
        info = None
        try:
            if text is not None:
                info = parse_module(key, text)
        except Exception as exc:  # unparsable: what it defines stays unknown to its importers
            error = exc
        if info is None:
            log.debug("project module %s not indexed: %s", key, getattr(error, "message", error))
        self._modules[key] = (sig, info)
        return info

    def load_if(self, path: Path | str, pattern: TextTest) -> ModuleInfo | None:
        """:meth:`load`, but a file not parsed yet whose text ``pattern`` does not find is not parsed
        (None): a cheap test of the text ahead of a search of its nodes that would find nothing."""
        key = resolved(str(path))
        return self.load(key) if self.may_hold(key, pattern) else None

    def may_hold(self, path: Path | str, pattern: TextTest) -> bool:
        """False when the file is not parsed yet and ``pattern`` does not find its text."""
        key = resolved(str(path))
        if key in self._modules:
            return True
        text, _error = read_source(key)
        return text is None or pattern.search(text)

    def known(self, path: str, text: str) -> ModuleInfo | None:
        """The module already parsed for ``path`` (as another file's import) when its text is ``text``.

        Reusing it keeps one set of nodes per file in a run, which the per-run summaries key on.
        """
        try:
            key = resolved(path)
        except (OSError, RuntimeError):
            return None
        hit = self._modules.get(key)
        if hit is None or hit[1] is None or hit[1].path != path or hit[1].text != text:
            return None
        return hit[1]

    def remember(self, path: str, info: ModuleInfo) -> None:
        """Keep a module the analyzer parsed itself (the file being linted) for later imports."""
        try:
            key = resolved(path)
        except (OSError, RuntimeError):  # an unresolvable path (a symlink loop)
            return
        self._modules[key] = (file_key(key), info)

    def resolve_import(self, importer: str, module: str, level: int) -> ModuleInfo | None:
        f = self.module_file(importer, module, level)
        return self.load(f) if f is not None else None


_IDENT_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_DIGITS = frozenset(b"0123456789")


# Between the parts of a call or an attribute: spaces, line breaks (also escaped), comments and the
# closing brackets of a parenthesised name. A text without them cannot hold the node searched for.
_GAP = r"(?:\s|\\|\)|#[^\n]*)*"


@dataclass(frozen=True)
class TextTest:
    """A regular expression that only matches a text holding ``needle``.

    Most texts are ruled out by the plain substring test; the expression is compiled (once, by
    ``re``'s cache) and searched only in the others. A check asks this of a few dozen names, most of
    them in no file, and compiling each name's expression up front cost a few milliseconds a check.
    """

    needle: str
    regex: str

    def search(self, text: str) -> bool:
        return self.needle in text and re.search(self.regex, text) is not None


def call_pattern(name: str) -> TextTest:
    """Text a call whose callee ends in ``name`` must contain: ``name(``, ``x.name (``, ``name[k](``."""
    return TextTest(name, re.escape(name) + _GAP + r"[(\[]")


def def_pattern(name: str) -> TextTest:
    """Text a module that defines function or method ``name`` must contain: ``def name``."""
    return TextTest(name, r"def(?:\s|\\)+" + re.escape(name) + r"(?!\w)")


def class_pattern(name: str) -> TextTest:
    """Text a module that defines class ``name`` must contain."""
    return TextTest(name, r"class(?:\s|\\)+" + re.escape(name) + r"(?!\w)")


def self_attribute_pattern(name: str) -> TextTest:
    """Text a read of ``self.name`` must contain (``self.name``, ``self . name``, ``(self).name``)."""
    return TextTest(name, r"self" + _GAP + r"\." + _GAP + re.escape(name))


def _whole_identifier(blob: bytes, i: int, n: int) -> bool:
    """Whether ``blob[i:i+n]`` is a whole identifier as ``[A-Za-z_][A-Za-z0-9_]*`` scanning finds it
    (digits just before it, not preceded by an identifier character, do not join it)."""
    end = i + n
    if end < len(blob) and blob[end] in _IDENT_BYTES:
        return False
    j = i
    while j > 0 and blob[j - 1] in _DIGITS:
        j -= 1
    return j == 0 or blob[j - 1] not in _IDENT_BYTES


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
