"""Prometheus metrics for one engine, in a registry of its own (one per app)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from prefixlint.engine.llm_engine import LLMEngine
from prefixlint.engine.sequence import Sequence

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_COUNTERS = {
    "hits": ("prefix_cache_hit_blocks", "Prefix-cache lookups that hit, in blocks"),
    "misses": ("prefix_cache_miss_blocks", "Prefix-cache lookups that missed, in blocks"),
    "cached_tokens_total": ("prefix_cache_hit_tokens", "Prompt tokens served from the prefix cache"),
    "prompt_tokens_total": ("prompt_tokens", "Prompt tokens of admitted requests"),
    "evictions": ("block_evictions", "Cached blocks evicted to make room"),
    "integrity_failures": ("kv_integrity_failures", "Requests failed by a KV owner-tag check"),
    "integrity_check_seconds": ("kv_integrity_check_seconds", "Time spent in the KV owner-tag checks"),
    "requests": ("requests", "Requests accepted"),
    "rejected": ("requests_rejected", "Requests rejected at admission"),
    "preemptions": ("preemptions", "Sequences preempted for lack of blocks"),
}
_GAUGES = {
    "blocks_total": ("kv_blocks_total", "KV blocks in the pool"),
    "block_size": ("kv_block_size", "Tokens per KV block"),
    "pool_tokens": ("kv_pool_tokens", "Tokens the KV pool holds (blocks x block size)"),
    "blocks_free": ("kv_blocks_free", "KV blocks not referenced by any request (cached or empty)"),
    "blocks_cached": ("kv_blocks_cached", "KV blocks holding reusable prefix-cache content"),
    "running": ("requests_running", "Requests holding KV blocks"),
    "waiting": ("requests_waiting", "Requests waiting for admission"),
}


class _EngineCollector(Collector):
    """Reads ``engine.stats()`` at scrape time, so the engine keeps a single set of counters."""

    def __init__(self, engine: LLMEngine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        stats = self.engine.stats()
        for key, (name, doc) in _COUNTERS.items():
            yield CounterMetricFamily(f"prefixlint_engine_{name}", doc, value=stats[key])
        for key, (name, doc) in _GAUGES.items():
            yield GaugeMetricFamily(f"prefixlint_engine_{name}", doc, value=stats[key])
        yield self._cache_config()

    def _cache_config(self) -> Metric:
        """The pool's settings as labels on a constant 1, as vLLM's ``cache_config_info``."""
        cfg, bm = self.engine.config, self.engine.block_manager
        labels = {
            "block_size": str(bm.block_size),
            "num_blocks": str(bm.num_blocks),
            "pool_tokens": str(bm.num_blocks * bm.block_size),
            "max_model_len": str(cfg.max_model_len),
            "enable_prefix_caching": str(cfg.enable_prefix_caching),
        }
        info = GaugeMetricFamily(
            "prefixlint_engine_cache_config_info", "KV cache settings (labels)", labels=list(labels)
        )
        info.add_metric(list(labels.values()), 1.0)
        return info


class EngineMetrics:
    """A registry with the engine's counters and an engine-side TTFT histogram."""

    def __init__(self, engine: LLMEngine) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_EngineCollector(engine))
        self.ttft = Histogram(
            "prefixlint_engine_ttft_seconds",
            "Engine-side time to first token (arrival to first sampled token)",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=self.registry,
        )
        engine.finish_listeners.append(self._observe)

    def _observe(self, seq: Sequence) -> None:
        if seq.first_token_time is not None:
            self.ttft.observe(seq.first_token_time - seq.arrival_time)

    def render(self) -> bytes:
        return generate_latest(self.registry)
