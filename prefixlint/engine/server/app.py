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
from prefixlint.engine.server.tenancy import Tenancy


def create_app(
    engine: LLMEngine,
    api_keys: dict[str, str] | None = None,
    model_name: str | None = None,
    *,
    shared_cache: bool = False,
    tenant_secret: bytes | None = None,
    fault_injection: bool = False,
) -> FastAPI:
    """The ASGI app; starts the engine's background loop.

    Caches are isolated per API key by default (see :mod:`.tenancy`): ``api_keys`` maps key ->
    tenant and refuses other keys; ``shared_cache`` lets every client share one namespace;
    ``tenant_secret`` keys the per-key namespaces (random by default). ``fault_injection``
    allows the test-only ``/debug/fault`` switch."""
    tenancy = Tenancy(api_keys, shared_cache, tenant_secret)
    srv = Server(engine, tenancy, model_name or engine.model_name)
    metrics = EngineMetrics(engine)
    app = FastAPI(title="prefixlint engine")
    app.state.engine, app.state.metrics, app.state.tenancy = engine, metrics, tenancy
    app.add_exception_handler(ApiError, api_error_response)  # type: ignore[arg-type]
    add_info_routes(app, srv, metrics)
    add_openai_routes(app, srv)
    add_anthropic_routes(app, srv)
    add_fault_routes(app, srv, fault_injection)
    engine.start()
    return app
