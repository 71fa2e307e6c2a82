"""``prefixlint engine serve``: run the engine behind its OpenAI/Anthropic-compatible server.

Importing this module does not import torch (the main CLI mounts it as ``prefixlint engine``).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from prefixlint.engine.config import EngineConfig
    from prefixlint.engine.llm_engine import LLMEngine
    from prefixlint.engine.server.tenancy import Tenancy

app = typer.Typer(
    help="A small paged-KV inference engine that shows what prefix caching does to TTFT.",
    no_args_is_help=True,
)


@app.callback()
def main() -> None:
    """A small paged-KV inference engine that shows what prefix caching does to TTFT."""


def parse_api_keys(values: list[str] | None) -> dict[str, str] | None:
    """``KEY=TENANT`` pairs -> ``{key: tenant}``; None when no key is given."""
    if not values:
        return None
    keys: dict[str, str] = {}
    for item in values:
        key, sep, tenant = item.partition("=")
        if not sep or not key or not tenant:
            raise typer.BadParameter(f"{item!r} is not KEY=TENANT", param_hint="--api-key")
        keys[key] = tenant
    return keys


@app.command()
def serve(
    preset: str = typer.Option("tiny", help="Model preset: tiny, cpu-bench (~28M), small (~0.5B), 1b."),
    model_dir: str | None = typer.Option(None, help="Local Hugging Face Llama/Qwen2 safetensors directory."),
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8000, help="Port to listen on."),
    block_size: int = typer.Option(16, help="Tokens per KV block."),
    num_blocks: int | None = typer.Option(None, help="KV pool size in blocks (default: from memory)."),
    max_model_len: int = typer.Option(4096, help="Longest prompt plus output, in tokens."),
    max_num_batched_tokens: int = typer.Option(
        2048,
        help="Tokens one engine step may compute: the prefill chunk size (longer prompts take more steps).",
    ),
    max_num_seqs: int = typer.Option(64, help="Requests running at once."),
    default_max_tokens: int | None = typer.Option(
        None, help="Output cap of a chat request without max_tokens (default: 256 for presets, else none)."
    ),
    device: str = typer.Option("auto", help="auto, cpu or cuda[:N]."),
    dtype: str = typer.Option("auto", help="auto, float32, bfloat16 or float16."),
    api_key: list[str] | None = typer.Option(
        None, help="KEY=TENANT; repeatable. Only these keys are accepted; keys of one tenant share its cache."
    ),
    shared_cache: bool = typer.Option(
        False, help="Let every client share one cache namespace (vLLM's default). Off: one per API key."
    ),
    allow_client_salt: bool = typer.Option(False, help="Honour cache_salt sent by clients."),
    scrub_on_free: bool = typer.Option(False, help="Zero KV blocks when their last user frees them."),
    no_prefix_caching: bool = typer.Option(False, help="Turn prefix caching off (for comparisons)."),
    no_integrity_checks: bool = typer.Option(False, help="Skip KV owner-tag checks (to measure their cost)."),
    seed: int = typer.Option(0, help="Seed of the random weights."),
    enable_fault_injection: bool = typer.Option(
        False, help="TEST ONLY: allow POST /debug/fault to make the server leak on purpose."
    ),
    output_format: str = typer.Option("text", help="Startup summary format: text or json."),
) -> None:
    """Serve /v1/completions, /v1/chat/completions, /v1/messages, /v1/models, /health, /metrics.

    Caches are isolated per API key by default: each distinct bearer token is its own cache
    namespace, and requests without one share an anonymous namespace."""
    if output_format not in ("text", "json"):
        raise typer.BadParameter("choose text or json", param_hint="--output-format")
    keys = parse_api_keys(api_key)
    try:
        import uvicorn

        from prefixlint.engine.config import EngineConfig
        from prefixlint.engine.server import create_app
    except ImportError as exc:
        typer.echo(
            f"error: the engine needs the [engine] extra: pip install 'prefixlint[engine]' ({exc})", err=True
        )
        raise typer.Exit(2) from exc
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    config = EngineConfig(
        preset=preset,
        model_dir=model_dir,
        device=device,
        dtype=dtype,
        block_size=block_size,
        num_blocks=num_blocks,
        max_model_len=max_model_len,
        max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        default_max_tokens=default_max_tokens,
        enable_prefix_caching=not no_prefix_caching,
        integrity_checks=not no_integrity_checks,
        scrub_on_free=scrub_on_free,
        allow_client_salt=allow_client_salt,
        seed=seed,
    )
    engine = _start_engine(config)
    app = create_app(engine, keys, shared_cache=shared_cache, fault_injection=enable_fault_injection)
    summary = startup_summary(engine, app.state.tenancy, f"http://{host}:{port}", enable_fault_injection)
    _announce(summary, output_format, app.state.tenancy)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _start_engine(config: EngineConfig) -> LLMEngine:
    """Build the engine; a configuration it refuses is a usage error (exit 2)."""
    from prefixlint.engine.config import EngineConfigError
    from prefixlint.engine.llm_engine import LLMEngine

    try:
        return LLMEngine(config)
    except EngineConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def startup_summary(engine: LLMEngine, tenancy: Tenancy, url: str, fault_injection: bool) -> dict:
    """What is being served, as one flat dict (the startup line, or its JSON)."""
    import torch

    cfg, bm = engine.config, engine.block_manager
    return {
        "model": engine.model_name,
        "device": str(engine.runner.device),
        "dtype": str(engine.runner.dtype).removeprefix("torch."),
        "attention": engine.runner.attention,
        "threads": torch.get_num_threads(),
        "url": url,
        "block_size": bm.block_size,
        "num_blocks": bm.num_blocks,
        "kv_pool_tokens": bm.num_blocks * bm.block_size,
        "max_model_len": cfg.max_model_len,
        "max_num_batched_tokens": cfg.max_num_batched_tokens,
        "default_max_tokens": engine.default_max_tokens,
        "cache_namespaces": tenancy.mode,
        "tenants": sorted(set(tenancy.api_keys.values())) if tenancy.api_keys else None,
        "prefix_caching": cfg.enable_prefix_caching,
        "integrity_checks": cfg.integrity_checks,
        "allow_client_salt": cfg.allow_client_salt,
        "scrub_on_free": cfg.scrub_on_free,
        "fault_injection": fault_injection,
    }


def _announce(summary: dict, output_format: str, tenancy: Tenancy) -> None:
    if output_format == "json":
        typer.echo(json.dumps(summary))
    else:
        typer.echo("prefixlint engine: " + ", ".join(f"{k}={v}" for k, v in summary.items()))
        typer.echo(f"cache namespaces: {tenancy.describe()}")
    if summary["cache_namespaces"] == "shared":
        typer.echo(
            "warning: --shared-cache: every client shares one prefix cache, so one client can tell "
            "from timing what another sent",
            err=True,
        )
    if summary["fault_injection"]:
        typer.echo(
            "warning: --enable-fault-injection: POST /debug/fault makes this server leak (tests only)",
            err=True,
        )
