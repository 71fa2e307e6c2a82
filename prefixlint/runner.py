"""Lint many files: discovery, settings per file, a cheap pre-filter, the cache, parallel workers.

After every file is checked, suppressions are applied across files (a cross-module finding is
silenced in the file it is reported in), unused suppressions become ``PFX900`` findings, and
``--changed-since`` keeps only findings on changed lines.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint.cache import LintCache
from prefixlint.checker import FileResult, check_source, dedupe, file_kind, read_source
from prefixlint.config import (
    ConfigError,
    Settings,
    config_file_in,
    format_validation,
    load_settings_cached,
    load_settings_file,
)
from prefixlint.diagnostics import Finding
from prefixlint.suppressions import (
    UNUSED_CODE,
    FileSuppressions,
    apply_suppressions,
    parse_suppressions,
    unused_findings,
)

DEFAULT_EXCLUDE = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pytest_cache",
    ".ruff_cache",
    ".prefixlint_cache",
    ".svn",
    ".tox",
    ".venv",
    "venv",
    "__pypackages__",
    "__pycache__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "*.egg-info",
)


# Words without which a Python file cannot build or send a prompt (raw bytes, any case unless marked).
# Library names cover sinks; the rest covers message lists, prompt variables and provider keywords.
# Plain "prompt" alone is too common (cmd, pdb, getpass), so it counts only in prompt-ish shapes.
# They are literals: the pre-filter searches them with ``bytes.__contains__`` (see _Prefilter).
def _quoted(word: bytes) -> tuple[bytes, ...]:
    return tuple(a + word + b for a in (b'"', b"'") for b in (b'"', b"'"))


PREFILTER_LITERALS: tuple[bytes, ...] = (
    b"openai",
    b"anthropic",
    b"litellm",
    b"langchain",
    b"llama_index",
    b"pydantic_ai",
    b"ollama",
    b"mistralai",
    b"cohere",
    b"genai",
    b"bedrock",
    b"jinja",
    b"cache_control",
    b"_prompt",
    b"prompt_",
    b"prompt=",
    b"prompts",
    b"messages=",
    *_quoted(b"messages"),
    b"messages.create",
    b"completions.create",
    b"completion(",
    b"instructions=",
    *_quoted(b"role"),
    *_quoted(b"system"),
    b"system=",
    b"SystemMessage",
    b"HumanMessage",
)
# Case-sensitive words.
PREFILTER_CASED: tuple[bytes, ...] = (b"PROMPT", b"Prompt")
# The same words as one regex (the reference definition; the runner uses the faster _Prefilter).
PREFILTER_WORDS = (*(re.escape(w) for w in PREFILTER_LITERALS), rb"(?-i:PROMPT|Prompt)")


class UsageError(Exception):
    """A bad path or option: reported on stderr with exit code 2."""


# --- settings -----------------------------------------------------------------------------------


def apply_overrides(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """Settings with command-line overrides: ``extend_select`` and ``ignore`` add, the rest replaces."""
    if not overrides:
        return settings
    update: dict[str, Any] = {}
    for key, value in overrides.items():
        if value is None:
            continue
        if key in ("extend_select", "ignore", "extend_exclude"):
            update[key] = [*getattr(settings, key), *value]
        else:
            update[key] = value
    merged = settings.model_copy(update=update)
    # Validate the merged values (e.g. an unknown provider given on the command line).
    try:
        validated = Settings.model_validate(merged.model_dump(by_alias=False))
    except ValueError as exc:  # pydantic's ValidationError
        if not hasattr(exc, "errors"):
            raise
        raise ConfigError("command line", format_validation(exc, option_names=True)) from exc
    validated.root = settings.root
    return validated


class SettingsResolver:
    """Settings for any path: ``--config`` when given, else the nearest config file, plus overrides."""

    def __init__(self, config_file: Path | None = None, overrides: dict[str, Any] | None = None) -> None:
        self.config_file = config_file
        self.overrides = overrides or {}
        self._by_dir: dict[Path, Settings] = {}
        self._fixed: Settings | None = None
        if config_file is not None:
            if not config_file.is_file():
                raise ConfigError(config_file, "config file not found")
            self._fixed = apply_overrides(load_settings_file(config_file), self.overrides)

    def for_path(self, path: Path) -> Settings:
        if self._fixed is not None:
            return self._fixed
        directory = path if path.is_dir() else path.parent
        return self._for_dir(directory.resolve())

    def _for_dir(self, directory: Path) -> Settings:
        hit = self._by_dir.get(directory)
        if hit is not None:
            return hit
        found = config_file_in(directory)
        if found is not None:
            settings = apply_overrides(load_settings_cached(found), self.overrides)
        elif directory.parent == directory:
            settings = Settings()
            settings.root = str(Path.cwd().resolve())
            settings = apply_overrides(settings, self.overrides)
        else:
            settings = self._for_dir(directory.parent)
        self._by_dir[directory] = settings
        return settings


# --- discovery ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A file to lint, with its settings and kind (``python`` or a template style)."""

    path: str
    kind: str
    settings: Settings


class _Ignore:
    """Exclude globs of one settings root plus ``.gitignore`` files met while walking.

    ``pathspec`` is imported on first use: a tree without excludes or ``.gitignore`` never needs it.
    """

    @property
    def _pathspec(self) -> Any:
        import pathspec

        return pathspec

    def __init__(self) -> None:
        self._excludes: dict[str, Any] = {}
        self._gitignores: dict[Path, Any] = {}

    def exclude_spec(self, settings: Settings) -> Any:
        key = settings.root or ""
        if key not in self._excludes:
            lines = [*DEFAULT_EXCLUDE, *settings.exclude, *settings.extend_exclude]
            self._excludes[key] = self._pathspec.GitIgnoreSpec.from_lines(lines)
        return self._excludes[key]

    def excluded(self, path: Path, settings: Settings, is_dir: bool) -> bool:
        spec = self.exclude_spec(settings)
        root = Path(settings.root) if settings.root else None
        rel = _rel(path, root)
        suffix = "/" if is_dir else ""
        if rel is not None and spec.match_file(rel + suffix):
            return True
        return bool(spec.match_file(path.name + suffix))

    def gitignored(self, path: Path, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        for parent in path.parents:
            spec = self._gitignore(parent)
            if spec is not None:
                rel = path.relative_to(parent).as_posix() + suffix
                if spec.match_file(rel):
                    return True
            if (parent / ".git").exists():
                break
        return False

    def user_spec(self, settings: Settings) -> Any:
        """The spec of the user's ``exclude``/``extend-exclude`` globs, or None when there are none."""
        globs = [*settings.exclude, *settings.extend_exclude]
        if not globs:
            return None
        key = "user:" + "\0".join(globs)
        if key not in self._excludes:
            self._excludes[key] = self._pathspec.GitIgnoreSpec.from_lines(globs)
        return self._excludes[key]

    def own_spec(self, directory: str) -> list[tuple[str, Any]]:
        """``[(directory, spec)]`` when ``directory`` has a ``.gitignore``."""
        if not os.path.isfile(f"{directory}/.gitignore"):
            return []
        spec = self._gitignore(Path(directory))
        return [(directory, spec)] if spec is not None else []

    def ancestor_specs(self, top: Path) -> list[tuple[str, Any]]:
        """``.gitignore`` specs of the directories above ``top``, up to the repository root."""
        if (top / ".git").exists():
            return []
        out: list[tuple[str, Any]] = []
        for parent in top.parents:
            spec = self._gitignore(parent)
            if spec is not None:
                out.append((str(parent), spec))
            if (parent / ".git").exists():
                break
        return out[::-1]

    def _gitignore(self, directory: Path) -> Any:
        if directory not in self._gitignores:
            spec = None
            try:
                lines = (directory / ".gitignore").read_text("utf-8", errors="replace").splitlines()
                spec = self._pathspec.GitIgnoreSpec.from_lines(lines)
            except OSError:
                pass
            self._gitignores[directory] = spec
        return self._gitignores[directory]


def _rel(path: Path, root: Path | None) -> str | None:
    if root is None:
        return None
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


DEFAULT_DIR_NAMES = frozenset(d for d in DEFAULT_EXCLUDE if "*" not in d)


def discover(paths: Sequence[Path], resolver: SettingsResolver, force_exclude: bool = False) -> list[Target]:
    """Files to lint under ``paths``: Python files and templates, minus excludes and ``.gitignore``.

    A file named explicitly is linted even when excluded, unless ``force_exclude`` (pre-commit passes
    every staged file). Explicit files of a kind prefixlint does not lint are skipped silently. The
    walk works on strings and checks ``.gitignore`` specs per directory: it must stay cheap for a
    warm run over thousands of files.
    """
    ignore = _Ignore()
    out: list[Target] = []
    seen: set[str] = set()

    def add(path: str, settings: Settings, kind: str | None) -> None:
        if kind is None or path in seen:
            return
        seen.add(path)
        out.append(Target(path, kind, settings))

    for given in paths:
        path = Path(os.path.abspath(given))
        if not path.exists() and not path.is_symlink():
            raise UsageError(f"{given}: No such file or directory")
        settings = resolver.for_path(path)
        if not path.is_dir():
            if force_exclude and (
                ignore.excluded(path, settings, False)
                or (settings.respect_gitignore and ignore.gitignored(path, False))
            ):
                continue
            add(str(path), settings, file_kind(str(path), settings))
            continue
        _walk(str(path), resolver, ignore, add)
    return out


def _walk(top: str, resolver: SettingsResolver, ignore: _Ignore, add: Callable[..., None]) -> None:
    start = ignore.ancestor_specs(Path(top)) + ignore.own_spec(top)
    specs_of: dict[str, list[tuple[str, Any]]] = {top: start}
    for dirpath, dirnames, filenames in os.walk(top):
        specs = specs_of.pop(dirpath, [])
        settings = resolver.for_path(Path(dirpath))
        user = ignore.user_spec(settings)
        root = settings.root or ""
        use_git = settings.respect_gitignore and bool(specs)
        keep = []
        for d in sorted(dirnames):
            if d in DEFAULT_DIR_NAMES or d.endswith(".egg-info"):
                continue
            full = f"{dirpath}/{d}"
            if user is not None and _user_excluded(user, full, root, True):
                continue
            if use_git and _git_match(specs, full, True):
                continue
            keep.append(d)
            specs_of[full] = specs + ignore.own_spec(full)
        dirnames[:] = keep
        for name in sorted(filenames):
            full = f"{dirpath}/{name}"
            kind = "python" if name.endswith((".py", ".pyi")) else file_kind(full, settings)
            if kind is None:
                continue
            if user is not None and _user_excluded(user, full, root, False):
                continue
            if use_git and _git_match(specs, full, False):
                continue
            add(full, settings, kind)


def _user_excluded(spec: Any, full: str, root: str, is_dir: bool) -> bool:
    suffix = "/" if is_dir else ""
    if root and full.startswith(root + "/") and spec.match_file(full[len(root) + 1 :] + suffix):
        return True
    return bool(spec.match_file(full.rsplit("/", 1)[-1] + suffix))


def _git_match(specs: list[tuple[str, Any]], full: str, is_dir: bool) -> bool:
    suffix = "/" if is_dir else ""
    for base, spec in specs:
        if full.startswith(base + "/") and spec.match_file(full[len(base) + 1 :] + suffix):
            return True
    return False


def _has_config(directory: Path) -> bool:
    return any((directory / n).is_file() for n in ("pyproject.toml", "prefixlint.toml", ".prefixlint.toml"))


# --- pre-filter ---------------------------------------------------------------------------------

_PREFILTERS: dict[str, re.Pattern[bytes]] = {}
_FAST_PREFILTERS: dict[str, _Prefilter] = {}
_FINGERPRINTS: dict[int, tuple[Settings, str]] = {}


def fingerprint(settings: Settings) -> str:
    """``settings.fingerprint()``, computed once per settings object (thousands of files share one)."""
    hit = _FINGERPRINTS.get(id(settings))
    if hit is None or hit[0] is not settings:
        hit = _FINGERPRINTS[id(settings)] = (settings, settings.fingerprint())
    return hit[1]


def prefilter_literals(settings: Settings) -> list[bytes]:
    """Every case-insensitive pre-filter word: built-ins, plugin marks, the last part of extra sinks."""
    words = list(PREFILTER_LITERALS) + plugin_literals()
    for sink in settings.sinks:
        last = sink.call.rsplit(".", 1)[-1].strip("*")
        if last:
            words.append(last.encode())
    return words


def prefilter_regex(settings: Settings) -> re.Pattern[bytes]:
    """A bytes regex that every Python file able to build a prompt matches (reference definition).

    Python's ``re`` is slow on a case-insensitive alternation (about 0.8 s per MB): the runner uses
    :func:`prefilter_for`, which matches exactly the same files.
    """
    key = fingerprint(settings)
    if key not in _PREFILTERS:
        words = [re.escape(w) for w in prefilter_literals(settings)]
        words += [rb"(?-i:" + b"|".join(re.escape(w) for w in PREFILTER_CASED) + rb")"]
        _PREFILTERS[key] = re.compile(b"|".join(words), re.IGNORECASE)
    return _PREFILTERS[key]


# Substrings shared by several words: a file without the anchor is not searched for its words.
_ANCHORS = (b"prompt", b"message", b"system", b"role", b"complet", b"respons", b"chat", b"from_", b"llm")


@dataclass(frozen=True)
class _Prefilter:
    """Literal search over raw bytes: one ``bytes.lower()`` and a few ``in`` scans per file.

    ``groups`` pairs an anchor with the lower-cased words that contain it (empty when the anchor is
    itself a word); ``cased`` are the case-sensitive words, under their lower-cased anchor.
    """

    groups: tuple[tuple[bytes, tuple[bytes, ...]], ...]
    cased: tuple[tuple[bytes, tuple[bytes, ...]], ...]

    @classmethod
    def build(cls, literals: Iterable[bytes], cased: Iterable[bytes]) -> _Prefilter:
        words = sorted({w.lower() for w in literals if w})
        # A word that contains another word adds nothing: the shorter one matches first.
        words = [w for w in words if not any(o != w and o in w for o in words)]
        groups: dict[bytes, list[bytes]] = {}
        for w in words:
            anchor = next((a for a in _ANCHORS if a in w), w)
            groups.setdefault(anchor, []).append(w)
        by_anchor: dict[bytes, list[bytes]] = {}
        for w in cased:
            by_anchor.setdefault(w.lower(), []).append(w)
        return cls(
            tuple((a, () if ws == [a] else tuple(ws)) for a, ws in groups.items()),
            tuple((a, tuple(ws)) for a, ws in by_anchor.items()),
        )

    def search(self, data: bytes) -> bool:
        low = data.lower()  # ASCII-only, like re.IGNORECASE on bytes
        for anchor, words in self.groups:
            if anchor in low and (not words or any(w in low for w in words)):
                return True
        return any(anchor in low and any(w in data for w in words) for anchor, words in self.cased)


def prefilter_for(settings: Settings) -> _Prefilter:
    """The fast pre-filter of ``settings`` (same matches as :func:`prefilter_regex`)."""
    key = fingerprint(settings)
    hit = _FAST_PREFILTERS.get(key)
    if hit is None:
        hit = _FAST_PREFILTERS[key] = _Prefilter.build(prefilter_literals(settings), PREFILTER_CASED)
    return hit


def plugin_literals() -> list[bytes]:
    """Marks from the installed plugins: ``a.b`` endings of their sink calls and message classes."""
    from prefixlint.plugins import load_plugins

    words: set[bytes] = set()
    try:
        plugins = load_plugins()
    except Exception:
        return []
    for plugin in plugins:
        words.add(plugin.name.encode())
        for sink in plugin.sinks:
            for call in sink.calls:
                parts = [p for p in call.split(".") if p and "*" not in p]
                if len(parts) >= 2:
                    words.add(".".join(parts[-2:]).encode())
        for name in (*plugin.message_constructors, *plugin.template_constructors):
            words.add(name.split(".")[0].encode())
    return sorted(words)


def plugin_words() -> list[bytes]:
    """:func:`plugin_literals` as escaped regex alternatives."""
    return [re.escape(w) for w in plugin_literals()]


def may_build_prompts(data: bytes, settings: Settings) -> bool:
    """Cheap test on raw bytes: False means the file cannot build or send a prompt."""
    return prefilter_for(settings).search(data)


# --- checking -----------------------------------------------------------------------------------


def check_target(target: Target, prefilter: bool = True) -> FileResult:
    """Check one target; a Python file that fails the pre-filter is skipped without parsing."""
    if target.kind == "python":
        try:
            with open(target.path, "rb") as fh:
                data = fh.read()
        except OSError:
            return check_source(target.path, None, target.settings, target.kind)
        from prefixlint.checker import decode_source

        text, err = decode_source(target.path, data)
        if err is not None:
            return check_source(target.path, None, target.settings, target.kind)
        if prefilter and not may_build_prompts(data, target.settings) and b"prefixlint:" not in data:
            return FileResult(path=target.path, skipped=True)
        return check_source(target.path, text, target.settings, target.kind)
    return check_source(target.path, None, target.settings, target.kind)


def _check_chunk(chunk: list[Target], prefilter: bool) -> list[FileResult]:
    with fewer_gc_passes():
        return [check_target(t, prefilter) for t in chunk]


@contextlib.contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """Run the cyclic garbage collector rarely while files are analysed.

    A libcst parse allocates hundreds of thousands of acyclic nodes, and with the default thresholds
    each one triggers collections that scan every tree kept for the project index: about 15% of a
    lint run. Objects alive at the start are frozen out of those scans; nothing is leaked, the
    thresholds are only raised and are restored afterwards.
    """
    old = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0  # leave a caller's own frozen objects as they are
    if freeze:
        gc.freeze()
    gc.set_threshold(max(old[0], _GC_GEN0), old[1], max(old[2], _GC_GEN2))
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if freeze:
            gc.unfreeze()


_GC_GEN0 = 100_000
_GC_GEN2 = 50


@dataclass
class RunOptions:
    """How to run: workers, cache, pre-filter."""

    jobs: int | None = None
    use_cache: bool = True
    cache_dir: Path | None = None
    prefilter: bool = True


@dataclass
class RunStats:
    files: int = 0
    cached: int = 0
    analysed: int = 0
    skipped: int = 0


@dataclass
class RunResult:
    """Findings after suppression, plus what the run did."""

    findings: list[Finding]
    results: dict[str, FileResult]
    targets: list[Target]
    stats: RunStats = field(default_factory=RunStats)
    suppressed: int = 0
    internal_errors: list[tuple[str, str]] = field(default_factory=list)
    tables: dict[str, FileSuppressions] = field(default_factory=dict)


def _cache_dir_for(settings: Settings, options: RunOptions) -> Path:
    key = (id(settings), id(options))
    hit = _CACHE_DIRS.get(key)
    if hit is None or hit[0] is not settings:
        hit = _CACHE_DIRS[key] = (settings, _resolve_cache_dir(settings, options))
    return hit[1]


_CACHE_DIRS: dict[tuple[int, int], tuple[Settings, Path]] = {}


def _resolve_cache_dir(settings: Settings, options: RunOptions) -> Path:
    if options.cache_dir is not None:
        return options.cache_dir
    env = os.environ.get("PREFIXLINT_CACHE_DIR")
    if env:
        return Path(env)
    base = Path(settings.cache_dir)
    return base if base.is_absolute() else Path(settings.root or ".") / base


def check_targets(targets: Sequence[Target], options: RunOptions) -> dict[str, FileResult]:
    """Results for every target: from the cache when unchanged, else checked (in parallel)."""
    results: dict[str, FileResult] = {}
    caches: dict[tuple[str, str], LintCache] = {}
    cache_of: dict[int, LintCache] = {}  # by id(settings): thousands of targets share one object
    skipped = _skipped_data() if options.use_cache else None
    todo: list[Target] = []
    for t in targets:
        if options.use_cache:
            cache = cache_of.get(id(t.settings))
            if cache is None:
                key = (str(_cache_dir_for(t.settings, options)), fingerprint(t.settings))
                cache = caches.get(key)
                if cache is None:
                    cache = caches[key] = LintCache.open(Path(key[0]), key[1])
                cache_of[id(t.settings)] = cache
            hit = cache.get(t.path)
            if hit is not None:
                if hit == skipped:  # most files of a warm run: nothing to decode
                    res = FileResult(path=t.path, skipped=True)
                else:
                    res = FileResult.from_dict(t.path, hit)
                res.cached = True
                results[t.path] = res
                continue
        todo.append(t)
    for res in _run_parallel(todo, options):
        results[res.path] = res
    if options.use_cache:
        by_path = {t.path: t for t in todo}
        for res in (results[t.path] for t in todo):
            if res.internal_error:
                continue
            t = by_path[res.path]
            key = (str(_cache_dir_for(t.settings, options)), fingerprint(t.settings))
            caches[key].put(res.path, res.to_dict(), res.dependencies)
        for cache in caches.values():
            cache.save()
    return results


_SKIPPED_DATA: list[dict[str, Any] | None] = []


def _skipped_data() -> dict[str, Any] | None:
    """The cached form of a file the pre-filter skipped, if it reads back as ``FileResult(skipped=True)``."""
    if not _SKIPPED_DATA:
        probe = FileResult(path="", skipped=True)
        data = probe.to_dict()
        _SKIPPED_DATA.append(data if FileResult.from_dict("", data) == probe else None)
    return _SKIPPED_DATA[0]


def _run_parallel(todo: list[Target], options: RunOptions) -> list[FileResult]:
    jobs = options.jobs or os.cpu_count() or 1
    if jobs <= 1 or len(todo) < 2 * jobs:
        return _check_chunk(todo, options.prefilter)
    _warm_up(todo)
    size = max(1, min(64, len(todo) // (jobs * 4)))
    chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
    out: list[FileResult] = []
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for part in pool.map(_check_chunk, chunks, [options.prefilter] * len(chunks)):
            out.extend(part)
    return out


def _warm_up(todo: list[Target]) -> None:
    """Import rules and the Python analyzer once in the parent, so forked workers share them.

    The tokenizer is not preloaded: most trees need it in few files, and a worker loads it on first use.
    """
    from prefixlint.rules.base import all_rules

    all_rules()
    if any(t.kind == "python" for t in todo):
        with contextlib.suppress(ImportError):
            import prefixlint.analysis.python  # noqa: F401


def finalize(
    targets: Sequence[Target],
    results: dict[str, FileResult],
    changed_lines: dict[str, set[int]] | None = None,
    texts: dict[str, str] | None = None,
) -> RunResult:
    """Apply suppressions across files, add unused-suppression findings, filter by changed lines.

    ``texts`` gives the source of files that are not on disk (standard input).
    """
    from prefixlint.rulecodes import rule_codes, selected_codes

    run = RunResult(findings=[], results=results, targets=list(targets))
    raw: list[Finding] = []
    tables: dict[str, FileSuppressions] = {}
    for t in targets:
        res = results.get(t.path)
        if res is None:
            continue
        run.stats.files += 1
        run.stats.skipped += int(res.skipped)
        run.stats.cached += int(res.cached)
        run.stats.analysed += int(not res.cached and not res.skipped)
        if res.internal_error:
            run.internal_errors.append((t.path, res.internal_error))
        if res.suppressions is not None:
            tables[t.path] = res.suppressions
        raw.extend(res.findings)
    raw = dedupe(raw)
    for f in raw:
        p = f.location.path
        if p not in tables:
            tables[p] = _suppressions_from_disk(p, targets)
    applied = apply_suppressions(raw, tables)
    findings = applied.kept
    run.suppressed = len(applied.suppressed)
    known = rule_codes()
    for t in targets:
        table = tables.get(t.path)
        if table is None or not table.directives:
            continue
        from prefixlint.checker import path_ignores

        enabled = selected_codes(t.settings, path_ignores(t.path, t.settings))
        if UNUSED_CODE not in enabled:
            continue
        text = texts[t.path] if texts and t.path in texts else read_source(t.path)[0]
        findings.extend(unused_findings(table, applied.used, enabled, known, text))
    if changed_lines is not None:
        findings = [f for f in findings if _on_changed_line(f, changed_lines)]
    run.findings = sorted(findings, key=Finding.sort_key)
    run.tables = tables
    return run


def _on_changed_line(f: Finding, changed: dict[str, set[int]]) -> bool:
    lines = changed.get(os.path.realpath(f.location.path))
    if lines is None:
        return False
    end = f.location.end_line or f.location.line
    return any(line in lines for line in range(f.location.line, end + 1))


def _suppressions_from_disk(path: str, targets: Iterable[Target]) -> FileSuppressions:
    text, _err = read_source(path)
    if text is None:
        return FileSuppressions(path=path)
    style = "python" if path.endswith((".py", ".pyi")) else "template"
    return parse_suppressions(path, text, style)


def lint_paths(
    paths: Sequence[Path],
    resolver: SettingsResolver,
    options: RunOptions,
    changed_lines: dict[str, set[int]] | None = None,
    force_exclude: bool = False,
) -> RunResult:
    """Discover, check and finalize: the whole ``prefixlint check`` minus reporting and fixing."""
    targets = discover(paths, resolver, force_exclude=force_exclude)
    results = check_targets(targets, options)
    return finalize(targets, results, changed_lines)
