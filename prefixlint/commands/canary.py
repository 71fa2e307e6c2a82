"""``prefixlint canary``: a cross-tenant leak gate against an OpenAI-compatible server.

Exit codes: 0 every check passed; 1 a check did not pass (a leak, a limit not kept, requests that
failed or failed closed, a check that could not decide); 2 usage error, or the server could not be
reached at all. Import-light: httpx and the checks load only when the command runs.
"""

from __future__ import annotations

from pathlib import Path

import typer

from prefixlint.commands.bench import (
    EndpointChoice,
    OutputFormat,
    _extra_body,
    need_live_extra,
)

app = typer.Typer(
    help="Cross-tenant leak gate: canaries, boundaries, capacity and cache isolation.",
    add_completion=False,
)

CHECK_NAMES = ("capacity", "determinism", "boundary", "canary-strings", "cross-tenant-cache")


@app.command()
def canary(
    base_url: str = typer.Option(..., "--base-url", help="API base URL, e.g. http://localhost:8000/v1"),
    model: str | None = typer.Option(None, "--model", help="model name (default: the first listed)"),
    api_key: list[str] | None = typer.Option(
        None, "--api-key", help="a tenant's API key; repeat for each tenant (default: two random keys)"
    ),
    cache_salt: list[str] | None = typer.Option(
        None, "--cache-salt", help="a tenant's cache_salt; repeat for each tenant (vLLM, SGLang)"
    ),
    endpoint: EndpointChoice = typer.Option(EndpointChoice.chat, "--endpoint"),
    rounds: int = typer.Option(3, "--rounds", min=1, help="rounds of A's canary traffic"),
    fill_tokens: int | None = typer.Option(
        None, "--fill-tokens", min=1, help="tokens A sends per round (default: the KV pool, at most 262,144)"
    ),
    canary_tokens: int | None = typer.Option(
        None, "--canary-tokens", min=16, help="length of A's canary prompts (default: 3/4 of the context)"
    ),
    output_tokens: int = typer.Option(16, "--output-tokens", min=1, help="greedy tokens B decodes per check"),
    top_logprobs: int = typer.Option(5, "--top-logprobs", min=0, max=20, help="0: compare text only"),
    logprob_tolerance: float = typer.Option(
        1e-3, "--logprob-tolerance", min=0.0, help="nats two greedy outputs may differ by"
    ),
    ngram: int = typer.Option(8, "--ngram", min=3, help="words in a row copied from A that count as a leak"),
    advertised_tokens: int | None = typer.Option(
        None, "--advertised-tokens", help="advertised context (default: max_model_len from /v1/models)"
    ),
    kv_pool_tokens: int | None = typer.Option(
        None, "--kv-pool-tokens", help="KV pool size (default: from /health or /metrics)"
    ),
    skip: list[str] | None = typer.Option(None, "--skip", help=f"skip a check: {', '.join(CHECK_NAMES)}"),
    extra_body: str | None = typer.Option(None, "--extra-body", help="JSON merged into every request"),
    timeout: float = typer.Option(120.0, "--timeout", help="seconds per request"),
    seed: int | None = typer.Option(None, "--seed", help="fix the prompts (default: random)"),
    out: Path | None = typer.Option(None, "--out", help="write the report as JSON"),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--output-format"),
) -> None:
    """Cross-tenant leak gate: capacity, boundaries, canary strings, differential determinism and
    cache isolation between tenants. Exit 0 only when every check passes."""
    unknown = sorted(set(skip or ()) - set(CHECK_NAMES))
    if unknown:
        raise typer.BadParameter(f"unknown check {unknown[0]!r}; choose from {', '.join(CHECK_NAMES)}")
    body = _extra_body(extra_body)
    need_live_extra("canary")
    from prefixlint.live.canary import Canary, CanaryConfig
    from prefixlint.live.canary_report import canary_text
    from prefixlint.live.server_info import ServerUnreachable
    from prefixlint.live.tenants import TenantError, make_tenants

    try:
        tenants = make_tenants(api_key or (), cache_salt or ())
    except TenantError as exc:
        raise typer.BadParameter(str(exc)) from exc
    cfg = CanaryConfig(
        endpoint=endpoint.value,
        rounds=rounds,
        canary_words=canary_tokens,
        fill_tokens=fill_tokens,
        output_tokens=output_tokens,
        top_logprobs=top_logprobs,
        logprob_tolerance=logprob_tolerance,
        ngram=ngram,
        advertised_tokens=advertised_tokens,
        kv_pool_tokens=kv_pool_tokens,
        skip=frozenset(skip or ()),
        seed=seed,
        timeout_s=timeout,
        extra_body=body,
    )
    text = output_format == OutputFormat.text
    progress = (lambda msg: typer.echo(f"canary: {msg}", err=True)) if text else None
    try:
        run = Canary(base_url, tenants, cfg, model=model, on_progress=progress).run()
    except ServerUnreachable as exc:
        typer.echo(f"prefixlint: error: {exc}", err=True)
        raise typer.Exit(2) from exc
    except ValueError as exc:
        typer.echo(f"prefixlint: error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if out is not None:
        run.write(out)
    typer.echo(canary_text(run) if text else run.to_json())
    if text and out is not None:
        typer.echo(f"wrote {out}")
    raise typer.Exit(0 if run.passed else 1)
