"""Run an audit: stream the inputs, put records in time order, and replay each partition.

Records are read as a stream and released in time order through a small reorder buffer (records up
to ``reorder_window`` seconds apart may come in any order). Each partition (provider, organisation,
tenant) is replayed by its own :class:`~prefixlint.audit.replay.PartitionReplay`; a partition idle for
longer than the longest cache lifetime is finished and folded into the total, so memory follows the
working set, not the file. ``workers > 1`` sends each partition to one of N processes.
"""

from __future__ import annotations

import heapq
import json
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint.audit.reader import InputStats, read_records
from prefixlint.audit.records import FieldMap, LogRecord
from prefixlint.audit.replay import PartitionReplay, ReplayOptions
from prefixlint.audit.summary import AuditSummary

IDLE_CLOSE = 86400.0  # seconds of silence after which a partition is finished early
_BATCH = 256
Progress = Callable[[int], None]


@dataclass
class AuditResult:
    """An audit's summary, what was read, and how it ran."""

    summary: AuditSummary
    input: InputStats
    options: ReplayOptions
    elapsed: float = 0.0
    workers: int = 1
    engine: str = "local"
    verdict_log: list[tuple[str, int, str]] = field(default_factory=list)


def in_time_order(records: Iterable[LogRecord], window: float, max_buffer: int = 5000) -> Iterator[LogRecord]:
    """``records`` sorted by time within a sliding window (records without a time keep their place
    relative to the record before them)."""
    heap: list[tuple[float, int, LogRecord]] = []
    newest = float("-inf")
    last = 0.0
    for seq, rec in enumerate(records):
        t = rec.time if rec.time is not None else last
        last = t
        newest = max(newest, t)
        heapq.heappush(heap, (t, seq, rec))
        while heap and (newest - heap[0][0] >= window or len(heap) > max_buffer):
            yield heapq.heappop(heap)[2]
    while heap:
        yield heapq.heappop(heap)[2]


class _Partitions:
    """Open partition replays; idle ones are finished and folded into ``total``."""

    def __init__(
        self, options: ReplayOptions, trace: Callable[[dict[str, Any]], None] | None, keep_verdicts: bool
    ):
        self.options = options
        self.trace = trace
        self.keep_verdicts = keep_verdicts
        self.open: dict[tuple[str, str, str], PartitionReplay] = {}
        self.last: dict[tuple[str, str, str], float] = {}
        self.total = AuditSummary()
        self.verdicts: list[tuple[str, int, str]] = []
        self._fed = 0

    def feed(self, rec: LogRecord) -> None:
        key = rec.partition
        replay = self.open.get(key)
        if replay is None:
            replay = self.open[key] = PartitionReplay(self.options, self.trace)
            if self.keep_verdicts:
                replay.verdict_log = self.verdicts
        replay.feed(rec)
        if rec.time is not None:
            self.last[key] = rec.time
            self._fed += 1
            if self._fed % 5000 == 0:
                self._close_idle(rec.time)

    def _close_idle(self, now: float) -> None:
        for key in [k for k, t in self.last.items() if t < now - IDLE_CLOSE]:
            self.total.merge(self.open.pop(key).finish())
            del self.last[key]

    def finish(self) -> AuditSummary:
        for replay in self.open.values():
            self.total.merge(replay.finish())
        self.open.clear()
        return self.total


def _worker(index: int, inbox: Any, outbox: Any, options: ReplayOptions, trace_path: str | None) -> None:
    sink = None
    out = None
    if trace_path is not None:
        out = open(f"{trace_path}.part{index}", "w", encoding="utf-8")  # noqa: SIM115

        def sink(entry: dict[str, Any]) -> None:
            out.write(json.dumps(entry, separators=(",", ":")) + "\n")

    parts = _Partitions(options, sink, False)
    try:
        while True:
            batch = inbox.get()
            if batch is None:
                break
            for rec in batch:
                parts.feed(rec)
        outbox.put(parts.finish())
    except BaseException as exc:  # the parent reports it; never hang the pool
        outbox.put(exc)
    finally:
        if out is not None:
            out.close()


def _merge_traces(path: str, parts: int) -> None:
    """Merge the workers' trace files (each in time order) into one, in time order."""
    files = [open(f"{path}.part{i}", encoding="utf-8") for i in range(parts)]  # noqa: SIM115
    try:
        keyed = [((json.loads(line)["timestamp"], line) for line in f) for f in files]
        with open(path, "w", encoding="utf-8") as out:
            for _, line in heapq.merge(*keyed):
                out.write(line)
    finally:
        for f in files:
            f.close()
        for i in range(parts):
            os.unlink(f"{path}.part{i}")


def run_audit(
    paths: list[str],
    fields: FieldMap,
    options: ReplayOptions,
    *,
    strict: bool = False,
    workers: int = 1,
    reorder_window: float = 60.0,
    trace_path: Path | None = None,
    progress: Progress | None = None,
    show_problems: int = 20,
    keep_verdicts: bool = False,
) -> AuditResult:
    """Read ``paths`` (``-`` for standard input), replay every partition, return the result.

    Raises :class:`~prefixlint.audit.reader.InputError` for an input that cannot be opened, and on the
    first bad record when ``strict``.
    """
    t0 = time.perf_counter()
    stats = InputStats(keep=show_problems)
    records = in_time_order(
        _counted(read_records(paths, fields, stats, strict), stats, progress), reorder_window
    )
    if workers <= 1:
        trace_file = open(trace_path, "w", encoding="utf-8") if trace_path else None  # noqa: SIM115
        sink = None
        if trace_file is not None:

            def sink(entry: dict[str, Any]) -> None:
                trace_file.write(json.dumps(entry, separators=(",", ":")) + "\n")

        try:
            parts = _Partitions(options, sink, keep_verdicts)
            for rec in records:
                parts.feed(rec)
            summary = parts.finish()
        finally:
            if trace_file is not None:
                trace_file.close()
        result = AuditResult(summary, stats, options, workers=1, verdict_log=parts.verdicts)
    else:
        summary = _run_pool(records, options, workers, str(trace_path) if trace_path else None)
        result = AuditResult(summary, stats, options, workers=workers)
    result.elapsed = time.perf_counter() - t0
    return result


def _counted(
    records: Iterator[LogRecord], stats: InputStats, progress: Progress | None
) -> Iterator[LogRecord]:
    for rec in records:
        stats.used += 1
        if progress is not None and stats.read % 200 == 0:
            progress(stats.read)
        yield rec
    if progress is not None:
        progress(stats.read)


def _run_pool(
    records: Iterable[LogRecord], options: ReplayOptions, workers: int, trace_path: str | None
) -> AuditSummary:
    ctx = mp.get_context("spawn")
    inboxes = [ctx.Queue(maxsize=64) for _ in range(workers)]
    outbox = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(i, inboxes[i], outbox, options, trace_path), daemon=True)
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    batches: list[list[LogRecord]] = [[] for _ in range(workers)]
    owner: dict[tuple[str, str, str], int] = {}
    try:
        for rec in records:
            key = rec.partition
            i = owner.get(key)
            if i is None:  # new partitions go to the workers in turn
                i = owner[key] = len(owner) % workers
            batches[i].append(rec)
            if len(batches[i]) >= _BATCH:
                inboxes[i].put(batches[i])
                batches[i] = []
    finally:
        for i in range(workers):
            if batches[i]:
                inboxes[i].put(batches[i])
            inboxes[i].put(None)
    total = AuditSummary()
    error: BaseException | None = None
    for _ in range(workers):
        got = outbox.get()
        if isinstance(got, BaseException):
            error = got
        else:
            total.merge(got)
    for p in procs:
        p.join()
    if error is not None:
        raise error
    if trace_path is not None:
        _merge_traces(trace_path, workers)
    return total
