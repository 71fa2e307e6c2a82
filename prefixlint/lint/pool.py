"""Check targets in worker processes (forked, see :mod:`.workers`), with the garbage collector kept quiet.

Every file is checked in a child process, so that a file that crashes the parser natively becomes a
PFX001 finding on that file and every other file is still checked. Where a child cannot be forked
(Windows, or a caller with threads), small batches run in this process and larger ones in a
``concurrent.futures`` pool whose broken chunks are checked again one file per fresh process.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from prefixlint.lint.checker import FileResult, check_source
from prefixlint.lint.discover import Target
from prefixlint.lint.prefilter import may_build_prompts
from prefixlint.model.findings import error_finding
from prefixlint.model.source_text import decode_source, overlay_text

Progress = Callable[[FileResult], None]


def check_target(target: Target, prefilter: bool = True) -> FileResult:
    """Check one target; a Python file that fails the pre-filter is skipped without parsing."""
    if target.error is not None:  # found by discovery (an unreadable folder): reported, never cached
        return FileResult(path=target.path, findings=[error_finding(target.path, target.error)], crashed=True)
    if target.kind == "python":
        stand_in = overlay_text(target.path)
        if stand_in is not None:
            data = stand_in.encode("utf-8", "surrogatepass")
            text: str | None = stand_in
        else:
            try:
                with open(target.path, "rb") as fh:
                    data = fh.read()
            except OSError:
                return check_source(target.path, None, target.settings, target.kind)
            text, err = decode_source(target.path, data)
            if err is not None:
                return check_source(target.path, None, target.settings, target.kind)
        if prefilter and not may_build_prompts(data, target.settings) and b"prefixlint:" not in data:
            return FileResult(path=target.path, skipped=True)
        return check_source(target.path, text, target.settings, target.kind)
    return check_source(target.path, None, target.settings, target.kind)


def _check_nth(todo: list[Target], prefilter: bool, overlay: dict[str, str], i: int) -> FileResult:
    """``check_target(todo[i])``: picklable, for a worker forked before ``overlay`` was set here."""
    if not overlay:
        return check_target(todo[i], prefilter)
    from prefixlint.model.source_text import source_overlay

    with source_overlay(overlay):
        return check_target(todo[i], prefilter)


def crash_result(target: Target, reason: str) -> FileResult:
    """The result of a file whose check killed its process (or raised past ``check_source``)."""
    message = (
        f"The parser or analyzer crashed on this file: its worker process {reason}. The file is not "
        "analysed; deeply nested expressions can overflow libcst's native parser."
    )
    return FileResult(path=target.path, findings=[error_finding(target.path, message)], crashed=True)


def _check_chunk(
    chunk: list[Target], prefilter: bool, overlay: dict[str, str] | None = None
) -> list[FileResult]:
    from prefixlint.model.source_text import source_overlay

    with fewer_gc_passes(), source_overlay(overlay or {}):
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
_FORKED_RUNS: list[int] = []  # sizes of the runs forked so far in this process


def run_checks(
    todo: list[Target],
    jobs: int | None,
    prefilter: bool = True,
    progress: Progress | None = None,
    isolate: bool = True,
) -> list[FileResult]:
    """Check ``todo`` in up to ``jobs`` worker processes (default: one per core).

    ``isolate=False`` checks small batches in this process (no protection from native crashes).
    """
    from prefixlint.lint.workers import can_fork, discard_prestarted, run_forked
    from prefixlint.model.source_text import _OVERLAY

    if not todo:
        discard_prestarted()  # every result was cached
        return []
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
    if isolate and can_fork():
        _FORKED_RUNS.append(len(todo))
        if jobs > 1 or len(_FORKED_RUNS) > 1:  # several children, or --fix's next rounds
            _warm_up(todo, prefilter)  # loaded once here, shared by every child
        size = len(todo) if jobs == 1 else max(1, min(64, len(todo) // (jobs * 4)))
        return run_forked(
            len(todo),
            functools.partial(_check_nth, todo, prefilter, dict(_OVERLAY)),
            lambda i, reason: crash_result(todo[i], reason),
            jobs,
            size,
            (lambda _i, res: progress(res)) if progress else None,
            fewer_gc_passes,
        )
    from prefixlint.lint.checker import forget_projects

    discard_prestarted()  # no forked worker in this run
    overlay = dict(_OVERLAY)
    if isolate:  # no fork here (other threads, or no os.fork): fresh worker processes instead
        return _run_pool(todo, jobs, prefilter, overlay, progress, fresh=True)
    if jobs <= 1 or len(todo) < 2 * jobs:
        forget_projects()  # this run's project index is built from the files as they are now
        try:
            out = _check_chunk(todo, prefilter, overlay)
        finally:
            forget_projects()
        if progress:
            for res in out:
                progress(res)
        return out
    return _run_pool(todo, jobs, prefilter, overlay, progress)


def _run_pool(
    todo: list[Target],
    jobs: int,
    prefilter: bool,
    overlay: dict[str, str],
    progress: Progress | None,
    fresh: bool = False,
) -> list[FileResult]:
    """``concurrent.futures`` workers; a chunk lost to a dead worker is checked one file per process.

    ``fresh`` starts workers that share nothing with this process (``forkserver`` or ``spawn``), for
    a caller whose other threads make ``fork`` unsafe.
    """
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    context = _fresh_context() if fresh else None
    if context is None:
        _warm_up(todo, prefilter)
    size = max(1, min(64, len(todo) // (jobs * 4)))
    chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
    parts: list[list[FileResult] | None] = [None] * len(chunks)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = [pool.submit(_check_chunk, c, prefilter, overlay) for c in chunks]
        for k, fut in enumerate(futures):
            try:
                parts[k] = fut.result()
            except BrokenProcessPool:
                continue
            if progress:
                for res in parts[k] or ():
                    progress(res)
    out: list[FileResult] = []
    for k, part in enumerate(parts):
        if part is None:
            part = [_check_alone(t, prefilter, overlay, context) for t in chunks[k]]
            if progress:
                for res in part:
                    progress(res)
        out.extend(part)
    return out


def _check_alone(target: Target, prefilter: bool, overlay: dict[str, str], context: Any = None) -> FileResult:
    """Check one file in a process of its own; its death is that file's PFX001."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        try:
            return pool.submit(_check_chunk, [target], prefilter, overlay).result()[0]
        except BrokenProcessPool:
            return crash_result(target, "died")


def _fresh_context() -> Any:
    """A start method that does not copy this process's threads' locks: forkserver, else spawn."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _warm_up(todo: list[Target], prefilter: bool = True) -> None:
    """Load what every worker needs once, here, so that forked workers share it.

    Rules and the Python analyzer are imported. The tokenizer of the run's settings is loaded too
    when a file may build a prompt (a template, or a Python file that passes the pre-filter): every
    worker would load it otherwise (about 0.3 s of CPU each); a tree without one skips it.
    """
    from prefixlint.rules.base import all_rules

    all_rules()
    if any(t.kind == "python" for t in todo):
        with contextlib.suppress(ImportError):
            import prefixlint.analysis.python  # noqa: F401
    from prefixlint.model.tokens import tokenizer_for

    for provider, model in _prompt_settings(todo, prefilter):
        with contextlib.suppress(Exception):  # a worker loads (and reports) it itself
            tokenizer_for(provider, model)


def _prompt_settings(todo: list[Target], prefilter: bool) -> list[tuple[str, str | None]]:
    """(provider, model) of the settings of files that may build a prompt, each once."""
    out: dict[tuple[str, str | None], None] = {}
    for t in todo:
        key = (t.settings.provider, t.settings.model)
        if key in out or t.error is not None:
            continue
        if t.kind == "python" and prefilter:
            stand_in = overlay_text(t.path)
            try:
                data = stand_in.encode() if stand_in is not None else Path(t.path).read_bytes()
            except (OSError, UnicodeError):
                continue
            if not may_build_prompts(data, t.settings):
                continue
        out[key] = None
    return list(out)
