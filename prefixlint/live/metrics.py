"""Scrape a server's Prometheus ``/metrics`` around a run and check its cache counters.

The counters' deltas over the run are compared with the sums of what the requests reported in
``usage``. A server whose counters say it reused far more (or fewer) tokens than it told the client
is flagged. Other traffic on the same server during the run inflates the deltas, so run the bench
on an otherwise idle server.

Known counters (summed over all label sets):

* vLLM: ``vllm:prompt_tokens_cached_total`` or ``vllm:prefix_cache_hits_total`` (tokens reused) and
  ``vllm:prefix_cache_queries_total`` (prompt tokens looked up);
* this project's engine: ``prefixlint_engine_prefix_cache_hit_tokens_total`` and
  ``prefixlint_engine_prompt_tokens_total``.
"""

from __future__ import annotations

import math
import re
from urllib.parse import urlsplit, urlunsplit

import httpx

from prefixlint.live.results import CounterCheck, MetricsCheck, Sample

# flavor -> (cached-token counters, prompt-token counters), first present wins.
COUNTERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "prefixlint-engine": (
        ("prefixlint_engine_prefix_cache_hit_tokens_total",),
        ("prefixlint_engine_prompt_tokens_total",),
    ),
    "vllm": (
        ("vllm:prompt_tokens_cached_total", "vllm:prefix_cache_hits_total"),
        ("vllm:prefix_cache_queries_total", "vllm:prompt_tokens_total"),
    ),
}

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)")


def metrics_url_for(base_url: str) -> str:
    """``http://h:8000/v1`` -> ``http://h:8000/metrics`` (the server root, not the API prefix)."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path.rstrip("/") + "/metrics", "", ""))


def parse_prometheus(text: str) -> dict[str, float]:
    """Sample name -> value summed over label sets (``prometheus_client.parser`` if installed)."""
    totals: dict[str, float] = {}
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        text_string_to_metric_families = None  # type: ignore[assignment]
    if text_string_to_metric_families is not None:
        try:
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if not math.isnan(sample.value):
                        totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
            return totals
        except ValueError:
            totals.clear()  # fall through to the tolerant parser
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if not math.isnan(value):
            totals[m.group(1)] = totals.get(m.group(1), 0.0) + value
    return totals


def scrape(
    url: str, *, timeout_s: float = 10.0, headers: dict[str, str] | None = None
) -> dict[str, float] | None:
    """Counters at ``url``, or None when the server has no metrics endpoint."""
    try:
        resp = httpx.get(url, timeout=timeout_s, headers=headers or {})
    except httpx.HTTPError:
        return None
    if resp.status_code != 200:
        return None
    return parse_prometheus(resp.text)


def _first(names: tuple[str, ...], before: dict[str, float], after: dict[str, float]) -> str | None:
    return next((n for n in names if n in after and n in before), None)


def _agrees(delta: float, reported: float, rel_tol: float, abs_tol: float) -> bool:
    return abs(delta - reported) <= max(abs_tol, rel_tol * max(abs(delta), abs(reported)))


def compare_counters(
    url: str,
    before: dict[str, float] | None,
    after: dict[str, float] | None,
    samples: list[Sample],
    *,
    rel_tol: float = 0.02,
    abs_tol: float = 0.0,
) -> MetricsCheck:
    """Compare counter deltas with the cached and prompt tokens the requests reported."""
    check = MetricsCheck(url=url, available=before is not None and after is not None)
    if before is None or after is None:
        check.notes.append("no Prometheus metrics at this URL; counter check skipped")
        return check
    ok = [s for s in samples if s.error is None]
    reported_cached = float(sum(s.cached_tokens or 0 for s in ok))
    reported_prompt = float(sum(s.prompt_tokens or 0 for s in ok))
    for flavor, (cached_names, prompt_names) in COUNTERS.items():
        cached_name = _first(cached_names, before, after)
        prompt_name = _first(prompt_names, before, after)
        if cached_name is None and prompt_name is None:
            continue
        check.flavor = flavor
        if cached_name is not None:
            delta = after[cached_name] - before[cached_name]
            check.checks.append(
                CounterCheck(
                    name=cached_name,
                    delta=delta,
                    reported=reported_cached,
                    agrees=_agrees(delta, reported_cached, rel_tol, abs_tol),
                    what="cached prompt tokens: counter delta vs sum of reported cached_tokens",
                )
            )
        if prompt_name is not None and any(s.prompt_tokens is not None for s in ok):
            delta = after[prompt_name] - before[prompt_name]
            check.checks.append(
                CounterCheck(
                    name=prompt_name,
                    delta=delta,
                    reported=reported_prompt,
                    agrees=_agrees(delta, reported_prompt, rel_tol, abs_tol),
                    what="prompt tokens: counter delta vs sum of reported prompt_tokens",
                )
            )
        break
    if check.flavor is None:
        check.notes.append("metrics found, but none of the known cache counters")
    check.mismatch = any(not c.agrees for c in check.checks)
    if check.mismatch and ok and all(s.cached_tokens is None for s in ok):
        check.notes.append(
            "no response carried cached_tokens; on vLLM start the server with "
            "--enable-prompt-tokens-details, on SGLang with --enable-cache-report"
        )
    return check
