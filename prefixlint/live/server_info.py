"""What a server says about itself: its models, advertised context and KV pool size.

Read before a run, so that a dead server is reported once, clearly, before anything is measured:

* ``GET {base}/models``: model ids and ``max_model_len`` (vLLM, SGLang, this engine; also
  ``context_length`` / ``context_window`` where other servers use them);
* ``GET {root}/health``: this engine's JSON (``kv_pool_tokens``, ``block_size``, ``num_blocks``);
* ``GET {root}/metrics``: vLLM's ``vllm:cache_config_info`` labels (``block_size``,
  ``num_gpu_blocks``), this engine's pool gauges;
* ``GET {root}/get_server_info``: SGLang's ``max_total_num_tokens``.

Every source is optional; what none of them gives stays None, and the caller says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx


class ServerUnreachable(RuntimeError):
    """The server did not answer at all (connection refused, DNS, timeout, TLS)."""


@dataclass
class ServerInfo:
    """Facts a run needs about the server; None where the server does not say."""

    base_url: str
    models: list[str] = field(default_factory=list)
    model: str | None = None
    max_model_len: int | None = None
    kv_pool_tokens: int | None = None
    block_size: int | None = None
    pool_source: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view (for run settings)."""
        return {
            "models": self.models,
            "model": self.model,
            "max_model_len": self.max_model_len,
            "kv_pool_tokens": self.kv_pool_tokens,
            "block_size": self.block_size,
            "pool_source": self.pool_source,
        }


def server_root(base_url: str) -> str:
    """``http://h:8000/v1`` -> ``http://h:8000`` (where ``/health`` and ``/metrics`` live)."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path.removesuffix("/v1").rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _get(http: httpx.Client, url: str) -> httpx.Response | None:
    """GET ``url``; None on a non-200 answer; raises :class:`ServerUnreachable` on no answer."""
    try:
        resp = http.get(url)
    except httpx.HTTPError as exc:
        raise ServerUnreachable(f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc
    return resp if resp.status_code == 200 else None


def _json(resp: httpx.Response | None) -> Any:
    if resp is None:
        return None
    try:
        return resp.json()
    except ValueError:
        return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


_LABELS = re.compile(r'(\w+)="([^"]*)"')
_INFO = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*cache_config_info)\{(.*)\}\s+\S+", re.M)
_GAUGE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$", re.M)


def pool_from_metrics(text: str) -> tuple[int | None, int | None]:
    """``(pool tokens, block size)`` from Prometheus text: vLLM's ``cache_config_info`` labels, or
    this engine's ``prefixlint_engine_kv_pool_tokens`` / ``kv_block_size`` / ``kv_blocks_total``."""
    for m in _INFO.finditer(text):
        labels = dict(_LABELS.findall(m.group(2)))
        bs = _int(labels.get("block_size"))
        blocks = _int(labels.get("num_gpu_blocks") or labels.get("num_blocks"))
        pool = _int(labels.get("pool_tokens")) or (bs * blocks if bs and blocks else None)
        if pool:
            return pool, bs
    gauges: dict[str, float] = {}
    for m in _GAUGE.finditer(text):
        try:
            gauges[m.group(1)] = float(m.group(2))
        except ValueError:
            continue
    pool = gauges.get("prefixlint_engine_kv_pool_tokens")
    bs = gauges.get("prefixlint_engine_kv_block_size")
    blocks = gauges.get("prefixlint_engine_kv_blocks_total")
    if pool is None and bs and blocks:
        pool = bs * blocks
    return (int(pool) if pool else None), (int(bs) if bs else None)


def pool_from_health(data: Any) -> tuple[int | None, int | None]:
    """``(pool tokens, block size)`` from a ``/health`` JSON body, where it carries them."""
    if not isinstance(data, dict):
        return None, None
    for holder in (data, data.get("kv_cache"), data.get("cache_config"), data.get("kv_pool")):
        if not isinstance(holder, dict):
            continue
        bs = _int(holder.get("block_size"))
        pool = next(
            (
                _int(holder[k])
                for k in ("kv_pool_tokens", "pool_tokens", "kv_cache_tokens", "max_total_num_tokens")
                if _int(holder.get(k))
            ),
            None,
        )
        blocks = _int(holder.get("num_blocks") or holder.get("num_gpu_blocks"))
        if pool is None and bs and blocks:
            pool = bs * blocks
        if pool:
            return pool, bs
    return None, None


def discover(
    base_url: str,
    *,
    model: str | None = None,
    headers: dict[str, str] | None = None,
    timeout_s: float = 30.0,
) -> ServerInfo:
    """Ask the server what it serves. Raises :class:`ServerUnreachable` when nothing answers."""
    info = ServerInfo(base_url=base_url)
    root = server_root(base_url)
    with httpx.Client(timeout=httpx.Timeout(timeout_s), headers=headers or {}) as http:
        try:
            listing = http.get(base_url.rstrip("/") + "/models")
        except httpx.HTTPError as exc:
            raise ServerUnreachable(f"cannot reach {base_url}: {type(exc).__name__}: {exc}") from exc
        entries = (_json(listing) or {}).get("data", []) if listing.status_code == 200 else []
        if listing.status_code in (401, 403):
            info.notes.append(f"GET /models answered HTTP {listing.status_code}: check the API key")
        elif listing.status_code != 200:
            info.notes.append(f"GET /models answered HTTP {listing.status_code}; no model listing")
        entries = [e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]
        info.models = [e["id"] for e in entries]
        info.model = model or (info.models[0] if info.models else None)
        if model is None and len(info.models) > 1:
            info.notes.append(f"the server lists {len(info.models)} models; using the first, {info.model}")
        for entry in entries:
            if entry["id"] == info.model:
                for key in ("max_model_len", "context_length", "context_window"):
                    if _int(entry.get(key)):
                        info.max_model_len = _int(entry[key])
                        break
        for path, parse, source in (
            ("/health", lambda r: pool_from_health(_json(r)), "/health"),
            ("/metrics", lambda r: pool_from_metrics(r.text), "/metrics"),
            ("/get_server_info", lambda r: pool_from_health(_json(r)), "/get_server_info"),
        ):
            try:
                resp = _get(http, root + path)
            except ServerUnreachable:
                continue
            if resp is None:
                continue
            pool, bs = parse(resp)
            if pool:
                info.kv_pool_tokens, info.block_size, info.pool_source = pool, bs, source
                break
    return info
