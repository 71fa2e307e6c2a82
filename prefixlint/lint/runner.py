"""A whole lint run: cached results, the worker pool for the rest, then suppressions across files.

After every file is checked, suppressions are applied across files (a cross-module finding is
silenced in the file it is reported in), unused suppressions become ``PFX900`` findings, and
``--changed-since`` keeps only findings on changed lines.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint.lint.checker import FileResult, dedupe
from prefixlint.lint.config import SettingsResolver, fingerprint
from prefixlint.lint.discover import Target, discover
from prefixlint.lint.payload_groups import check_group, split_groups
from prefixlint.lint.pool import run_checks
from prefixlint.lint.result_cache import LintCache
from prefixlint.lint.suppressions import (
    UNUSED_CODE,
    FileSuppressions,
    apply_suppressions,
    parse_suppressions,
    unused_findings,
)
from prefixlint.model.findings import Finding
from prefixlint.model.settings import Settings
from prefixlint.model.source_text import read_source


@dataclass
class RunOptions:
    """How to run: workers, cache, pre-filter."""

    jobs: int | None = None
    use_cache: bool = True
    cache_dir: Path | None = None
    prefilter: bool = True
    isolate: bool = True  # check files in forked children: a native crash costs one file


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


def _resolve_cache_dir(settings: Settings, options: RunOptions) -> Path:
    if options.cache_dir is not None:
        return options.cache_dir
    env = os.environ.get("PREFIXLINT_CACHE_DIR")
    if env:
        return Path(env)
    base = Path(settings.cache_dir)
    return base if base.is_absolute() else Path(settings.root or ".") / base


def check_targets(
    targets: Sequence[Target], options: RunOptions, progress: Callable[[FileResult], None] | None = None
) -> dict[str, FileResult]:
    """Results for every target: from the cache when unchanged, else checked (in parallel).

    ``progress`` is called once per file as its result is known (cached ones first).
    """
    results: dict[str, FileResult] = {}
    caches: dict[tuple[str, str], LintCache] = {}
    # by id(settings), for this call only: thousands of targets share one settings object
    cache_of: dict[int, LintCache] = {}
    key_of: dict[int, tuple[str, str]] = {}

    def cache_key(settings: Settings) -> tuple[str, str]:
        key = key_of.get(id(settings))
        if key is None:
            key = key_of[id(settings)] = (str(_resolve_cache_dir(settings, options)), fingerprint(settings))
        return key

    skipped = _skipped_data() if options.use_cache else None
    todo: list[Target] = []
    for t in targets:
        if options.use_cache and t.error is None:
            cache = cache_of.get(id(t.settings))
            if cache is None:
                key = cache_key(t.settings)
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
                if progress:
                    progress(res)
                continue
        todo.append(t)
    todo, groups = split_groups(targets, results, todo)
    for res in run_checks(todo, options.jobs, options.prefilter, progress, options.isolate):
        results[res.path] = res
    for group in groups:  # the payload files of one directory, checked together
        for res in check_group(group):
            results[res.path] = res
        todo.extend(group)
    if options.use_cache:
        by_path = {t.path: t for t in todo}
        for res in (results[t.path] for t in todo):
            if res.internal_error or res.crashed:
                continue
            t = by_path[res.path]
            caches[cache_key(t.settings)].put(res.path, res.to_dict(), res.dependencies)
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


def finalize(
    targets: Sequence[Target],
    results: dict[str, FileResult],
    changed_lines: dict[str, set[int]] | None = None,
    texts: dict[str, str] | None = None,
) -> RunResult:
    """Apply suppressions across files, add unused-suppression findings, filter by changed lines.

    ``texts`` gives the source of files that are not on disk (standard input).
    """
    from prefixlint.lint.rule_codes import rule_codes, selected_codes

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
        from prefixlint.lint.checker import path_ignores

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


def relint(
    previous: RunResult,
    changed: set[str],
    options: RunOptions,
    changed_lines: dict[str, set[int]] | None = None,
    stand_ins: dict[str, str] | None = None,
) -> RunResult:
    """Lint again after fixes: the files in ``changed`` and those that depend on them; keep the rest.

    ``stand_ins`` (path -> text) are read instead of those files on disk; they are never cached.
    """
    from prefixlint.model.source_text import source_overlay

    real = {os.path.realpath(p) for p in changed}

    def affected(t: Target) -> bool:
        if os.path.realpath(t.path) in real:
            return True
        res = previous.results.get(t.path)
        return res is not None and any(os.path.realpath(d) in real for d in res.dependencies)

    again = [t for t in previous.targets if affected(t)]
    if stand_ins:
        options = dataclasses.replace(options, use_cache=False)
    with source_overlay(stand_ins or {}):
        results = {**previous.results, **check_targets(again, options)}
        return finalize(previous.targets, results, changed_lines, texts=stand_ins)
