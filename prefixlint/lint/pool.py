"""Check targets in this process or in worker processes, with the garbage collector kept quiet."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

from prefixlint.lint.checker import FileResult, check_source
from prefixlint.lint.discover import Target
from prefixlint.lint.prefilter import may_build_prompts
from prefixlint.model.source_text import decode_source


def check_target(target: Target, prefilter: bool = True) -> FileResult:
    """Check one target; a Python file that fails the pre-filter is skipped without parsing."""
    if target.kind == "python":
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


def run_checks(todo: list[Target], jobs: int | None, prefilter: bool = True) -> list[FileResult]:
    """Check ``todo``: in this process for small batches, else in ``jobs`` worker processes."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(todo) < 2 * jobs:
        return _check_chunk(todo, prefilter)
    _warm_up(todo)
    size = max(1, min(64, len(todo) // (jobs * 4)))
    chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
    out: list[FileResult] = []
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for part in pool.map(_check_chunk, chunks, [prefilter] * len(chunks)):
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
