"""OpenTelemetry: cache reports as attributes of the active span (GenAI semantic conventions).

Only used when ``opentelemetry-api`` is installed and a recording span is current (for example one
started by your framework or an OpenAI/Anthropic instrumentor).
"""

from __future__ import annotations

from typing import Any

from prefixlint.sdk.report import CacheReport

try:  # optional dependency
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - exercised without opentelemetry
    _trace = None  # type: ignore[assignment]

_SYSTEM = {"anthropic": "anthropic", "azure": "azure.ai.openai", "openai": "openai", "deepseek": "deepseek"}


def attributes(report: CacheReport) -> dict[str, Any]:
    """The span attributes for ``report``."""
    attrs: dict[str, Any] = {
        "gen_ai.provider.name": _SYSTEM.get(report.provider, report.provider),
        "gen_ai.operation.name": "chat",
        "prefixlint.cache.verdict": report.verdict.value,
        "prefixlint.cache.predicted_tokens": report.predicted_cached,
        "prefixlint.cache.tokens_saved": report.tokens_saved,
        "prefixlint.cache.usd_saved": report.usd_saved,
    }
    if report.model:
        attrs["gen_ai.request.model"] = report.model
    if report.prompt_tokens is not None:
        attrs["gen_ai.usage.input_tokens"] = report.prompt_tokens
    if report.reported_cached is not None:
        attrs["gen_ai.usage.cache_read.input_tokens"] = report.reported_cached
    if report.cache_write:
        attrs["gen_ai.usage.cache_creation.input_tokens"] = report.cache_write
    if report.causes:
        attrs["prefixlint.cache.causes"] = list(report.causes)
    if report.divergence is not None:
        attrs["prefixlint.cache.divergence.path"] = report.divergence.path
        attrs["prefixlint.cache.divergence.token_index"] = report.divergence.token_index
    return attrs


def emit(report: CacheReport) -> bool:
    """Add ``report`` to the current span; True when a recording span took it."""
    if _trace is None:
        return False
    span = _trace.get_current_span()
    if not span.is_recording():
        return False
    span.set_attributes(attributes(report))
    return True
