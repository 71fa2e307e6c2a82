"""``GET /health``, ``GET /metrics`` and ``GET /v1/models``."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response

from prefixlint.engine.metrics import CONTENT_TYPE, EngineMetrics
from prefixlint.engine.server.frontend import Server


def model_card(srv: Server) -> dict:
    """The one served model, as ``/v1/models`` lists it."""
    return {
        "id": srv.model_name,
        "object": "model",
        "created": 0,
        "owned_by": "prefixlint",
        "max_model_len": srv.engine.config.max_model_len,  # as vLLM lists it
        # what a chat request without max_tokens gets (null: up to max_model_len)
        "default_max_tokens": srv.engine.default_max_tokens,
    }


def health(srv: Server) -> dict:
    """Liveness plus the KV pool's shape, so a client can size boundary probes without config."""
    cfg, bm = srv.engine.config, srv.engine.block_manager
    return {
        "status": "ok",
        "max_model_len": cfg.max_model_len,
        "block_size": bm.block_size,
        "num_blocks": bm.num_blocks,
        "kv_pool_tokens": bm.num_blocks * bm.block_size,
        "prefix_caching": cfg.enable_prefix_caching,
    }


def add_info_routes(app: FastAPI, srv: Server, metrics: EngineMetrics) -> None:
    """Mount the health, metrics and model-list routes."""

    @app.get("/health")
    async def _health() -> dict:
        return health(srv)

    @app.get("/metrics")
    async def _metrics() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/v1/models")
    async def _models(request: Request) -> dict:
        srv.tenant(request)
        return {"object": "list", "data": [model_card(srv)]}
