"""``prefixlint engine serve``: run the engine behind its OpenAI/Anthropic-compatible server.

Importing this module does not import torch (the main CLI mounts it as ``prefixlint engine``).
"""

from __future__ import annotations

import json
import logging

import typer

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
    preset: str = typer.Option("tiny", help="Model preset: tiny, small (~0.5B), 1b."),
    model_dir: str | None = typer.Option(None, help="Local Hugging Face Llama/Qwen2 safetensors directory."),
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8000, help="Port to listen on."),
    block_size: int = typer.Option(16, help="Tokens per KV block."),
    num_blocks: int | None = typer.Option(None, help="KV pool size in blocks (default: from memory)."),
    max_model_len: int = typer.Option(4096, help="Longest prompt plus output, in tokens."),
    device: str = typer.Option("auto", help="auto, cpu or cuda[:N]."),
    dtype: str = typer.Option("auto", help="auto, float32, bfloat16 or float16."),
    api_key: list[str] | None = typer.Option(None, help="KEY=TENANT; repeatable. Tenants never share cache."),
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
    """Serve /v1/completions, /v1/chat/completions, /v1/messages, /v1/models, /health, /metrics."""
    if output_format not in ("text", "json"):
        raise typer.BadParameter("choose text or json", param_hint="--output-format")
    keys = parse_api_keys(api_key)
    try:
        import uvicorn

        from prefixlint.engine.config import EngineConfig, EngineConfigError
        from prefixlint.engine.llm_engine import LLMEngine
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
        enable_prefix_caching=not no_prefix_caching,
        integrity_checks=not no_integrity_checks,
        scrub_on_free=scrub_on_free,
        allow_client_salt=allow_client_salt,
        seed=seed,
    )
    try:
        engine = LLMEngine(config)
    except EngineConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    summary = {
        "model": engine.model_name,
        "device": str(engine.runner.device),
        "dtype": str(engine.runner.dtype).removeprefix("torch."),
        "url": f"http://{host}:{port}",
        "block_size": block_size,
        "num_blocks": engine.block_manager.num_blocks,
        "max_model_len": max_model_len,
        "tenants": sorted(set(keys.values())) if keys else None,
        "prefix_caching": not no_prefix_caching,
        "integrity_checks": not no_integrity_checks,
        "allow_client_salt": allow_client_salt,
        "scrub_on_free": scrub_on_free,
        "fault_injection": enable_fault_injection,
    }
    if output_format == "json":
        typer.echo(json.dumps(summary))
    else:
        typer.echo("prefixlint engine: " + ", ".join(f"{k}={v}" for k, v in summary.items()))
        if keys is None:
            typer.echo("warning: no --api-key given; every client shares one cache namespace", err=True)
    if enable_fault_injection:
        typer.echo(
            "warning: --enable-fault-injection: POST /debug/fault makes this server leak (tests only)",
            err=True,
        )
    app = create_app(engine, keys, fault_injection=enable_fault_injection)
    uvicorn.run(app, host=host, port=port, log_level="warning")
