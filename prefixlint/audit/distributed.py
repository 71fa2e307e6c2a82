"""The same per-partition replay on a Dask cluster, for logs larger than one machine.

Each input file is read by one task (give many files: one per hour or per shard), records are
grouped by partition (provider, organisation, tenant) across the cluster, each partition is sorted by
time and replayed by :func:`~prefixlint.audit.replay.replay_partition`, and the summaries are
folded with :meth:`~prefixlint.audit.summary.AuditSummary.merge`. Needs ``pip install
'prefixlint[audit-dask]'`` here and on the workers (which must also be able to read the files).
"""

from __future__ import annotations

import time
from typing import Any

from prefixlint.audit.reader import InputStats, read_records
from prefixlint.audit.records import FieldMap, LogRecord
from prefixlint.audit.replay import ReplayOptions, replay_partition
from prefixlint.audit.run import AuditResult
from prefixlint.audit.summary import AuditSummary


def _read_file(path: str, fields: FieldMap, strict: bool, keep: int) -> list[tuple[str, Any]]:
    stats = InputStats(keep=keep)
    out: list[tuple[str, Any]] = []
    for rec in read_records([path], fields, stats, strict):
        stats.used += 1
        out.append(("record", rec))
    out.append(("stats", stats))
    return out


def _replay_group(group: tuple[Any, list[tuple[str, LogRecord]]], options: ReplayOptions) -> AuditSummary:
    _, items = group
    records = sorted((r for _, r in items), key=lambda r: (r.time is None, r.time or 0.0, r.source, r.line))
    return replay_partition(records, options)


def _merge_summaries(a: AuditSummary, b: AuditSummary) -> AuditSummary:
    return AuditSummary().merge(a).merge(b)


def _merge_stats(a: InputStats, b: InputStats) -> InputStats:
    out = InputStats(keep=a.keep)
    out.merge(a)
    out.merge(b)
    return out


def run_on_dask(
    paths: list[str],
    fields: FieldMap,
    options: ReplayOptions,
    scheduler: Any = None,
    *,
    strict: bool = False,
    show_problems: int = 20,
) -> AuditResult:
    """Audit ``paths`` on Dask. ``scheduler``: a ``dask.distributed.Client``, a scheduler address
    (``tcp://host:8786``), or None for a local cluster on this machine."""
    import dask.bag as db
    from dask.distributed import Client, LocalCluster

    t0 = time.perf_counter()
    own: list[Any] = []
    if isinstance(scheduler, Client):
        client = scheduler
    elif scheduler:
        client = Client(scheduler)
        own.append(client)
    else:
        cluster = LocalCluster(processes=True, threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
        own.extend([client, cluster])
    try:
        files = db.from_sequence(paths, npartitions=max(1, len(paths)))
        items = files.map(_read_file, fields, strict, show_problems).flatten()
        stats = (
            items.filter(lambda kv: kv[0] == "stats")
            .map(lambda kv: kv[1])
            .fold(_merge_stats, initial=InputStats(keep=show_problems))
        )
        groups = items.filter(lambda kv: kv[0] == "record").groupby(
            lambda kv: kv[1].partition, shuffle="tasks"
        )
        summary = groups.map(_replay_group, options).fold(_merge_summaries, initial=AuditSummary())
        total, inp = client.compute([summary, stats], sync=True)
        workers = len(client.scheduler_info().get("workers", {}))
    finally:
        for obj in own:
            obj.close()
    result = AuditResult(total, inp, options, workers=workers, engine="dask")
    result.elapsed = time.perf_counter() - t0
    return result
