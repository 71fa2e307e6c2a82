"""The log audit: replays request logs through the provider cache models.

Takes log records (JSONL or JSON, any provider shape: ``reader``, ``records``); gives a mergeable
:class:`~prefixlint.audit.summary.AuditSummary` per partition (``replay``), with hit rates, named
causes, divergence sites, money and the KV capacity curve; ``run`` and ``distributed`` schedule it.
"""
