"""``create_app``: the engine's ASGI app, assembled from its route groups."""

from __future__ import annotations

from fastapi import FastAPI

from prefixlint.engine.llm_engine import LLMEngine
from prefixlint.engine.metrics import EngineMetrics
from prefixlint.engine.server.anthropic_api import add_anthropic_routes
from prefixlint.engine.server.errors import ApiError, api_error_response
from prefixlint.engine.server.faults import add_fault_routes
from prefixlint.engine.server.frontend import Server
from prefixlint.engine.server.info import add_info_routes
from prefixlint.engine.server.openai_api import add_openai_routes


def create_app(
    engine: LLMEngine,
    api_keys: dict[str, str] | None = None,
    model_name: str | None = None,
    *,
    fault_injection: bool = False,
) -> FastAPI:
    """The ASGI app. ``api_keys`` maps API key -> tenant; None serves one anonymous tenant.
    ``fault_injection`` allows the test-only ``/debug/fault`` switch. Starts the engine's
    background loop."""
    srv = Server(engine, api_keys, model_name or engine.model_name)
    metrics = EngineMetrics(engine)
    app = FastAPI(title="prefixlint engine")
    app.state.engine, app.state.metrics = engine, metrics
    app.add_exception_handler(ApiError, api_error_response)  # type: ignore[arg-type]
    add_info_routes(app, srv, metrics)
    add_openai_routes(app, srv)
    add_anthropic_routes(app, srv)
    add_fault_routes(app, srv, fault_injection)
    engine.start()
    return app
