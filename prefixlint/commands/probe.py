"""``prefixlint probe``: a timing audit of prompt-cache sharing (Gu et al., ICML 2025).

Prints the most it will send and asks before sending (``--yes`` skips the question; without a
terminal, ``--yes`` is required). Exit codes: 0 isolated (or a one-tenant audit that completed);
1 caching visible across tenants, an inconclusive result, or failed requests; 2 usage error,
declined, or the server could not be reached. Import-light: httpx and scipy load only when it runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from prefixlint.commands.bench import EndpointChoice, OutputFormat, _extra_body, need_live_extra

app = typer.Typer(
    help="Timing audit: is another tenant's prompt cache visible in TTFT?", add_completion=False
)


def _interactive() -> bool:
    """Whether a person can answer the confirmation (stdin is a terminal)."""
    return sys.stdin.isatty()


@app.command()
def probe(
    base_url: str = typer.Option(..., "--base-url", help="API base URL, e.g. http://localhost:8000/v1"),
    model: str | None = typer.Option(None, "--model", help="model name (default: the first listed)"),
    api_key: list[str] | None = typer.Option(
        None, "--api-key", help="a tenant's API key; repeat for more tenants (default: two random keys)"
    ),
    org: list[str] | None = typer.Option(
        None, "--org", help="organisation of each --api-key, in order (same org: the organisation level)"
    ),
    cache_salt: list[str] | None = typer.Option(
        None, "--cache-salt", help="a tenant's cache_salt; repeat for each tenant (vLLM, SGLang)"
    ),
    endpoint: EndpointChoice = typer.Option(EndpointChoice.chat, "--endpoint"),
    prompt_tokens: int = typer.Option(1024, "--prompt-tokens", min=16, help="length of every prompt"),
    shared_prefix: float = typer.Option(
        0.9, "--shared-prefix", min=0.01, max=0.99, help="fraction of the victim's prompt a hit shares"
    ),
    alpha: float = typer.Option(0.01, "--alpha", min=1e-9, max=0.5, help="false-detection rate per level"),
    min_samples: int = typer.Option(8, "--min-samples", min=2, help="samples per arm at the first look"),
    max_samples: int = typer.Option(32, "--max-samples", min=2, help="samples per arm at most"),
    warmup: int = typer.Option(2, "--warmup", min=0, help="untimed requests per tenant"),
    rate: float = typer.Option(5.0, "--rate", min=0.0, help="requests per second at most (0: no limit)"),
    max_requests: int | None = typer.Option(None, "--max-requests", min=1, help="stop after this many"),
    max_prompt_tokens: int | None = typer.Option(
        None, "--max-prompt-tokens", min=1, help="stop after sending this many prompt tokens"
    ),
    max_time: float = typer.Option(900.0, "--max-time", min=1.0, help="stop after this many seconds"),
    yes: bool = typer.Option(False, "--yes", "-y", help="send without asking"),
    extra_body: str | None = typer.Option(None, "--extra-body", help="JSON merged into every request"),
    timeout: float = typer.Option(120.0, "--timeout", help="seconds per request"),
    seed: int | None = typer.Option(None, "--seed", help="fix the prompts (default: random)"),
    out: Path | None = typer.Option(None, "--out", help="write the report as JSON"),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--output-format"),
) -> None:
    """Timing audit of prompt-cache sharing (Gu et al., ICML 2025): hit and miss procedures per
    sharing level, one-sided KS tests. Exit 0 only when isolation is shown (or a one-tenant audit
    completes)."""
    if min_samples > max_samples:
        raise typer.BadParameter("--min-samples must not exceed --max-samples")
    body = _extra_body(extra_body)
    need_live_extra("probe")
    from prefixlint.live.probe import Probe, ProbeConfig
    from prefixlint.live.probe_report import probe_text
    from prefixlint.live.server_info import ServerUnreachable
    from prefixlint.live.tenants import TenantError, make_tenants

    try:
        tenants = make_tenants(api_key or (), cache_salt or (), org or (), minimum=1)
    except TenantError as exc:
        raise typer.BadParameter(str(exc)) from exc
    cfg = ProbeConfig(
        endpoint=endpoint.value,
        prompt_tokens=prompt_tokens,
        shared_prefix=shared_prefix,
        alpha=alpha,
        min_samples=min_samples,
        max_samples=max_samples,
        warmup=warmup,
        rate=rate or None,
        max_requests=max_requests,
        max_prompt_tokens=max_prompt_tokens,
        max_time_s=max_time,
        seed=seed,
        timeout_s=timeout,
        extra_body=body,
    )
    text = output_format == OutputFormat.text
    progress = (lambda msg: typer.echo(f"probe: {msg}", err=True)) if text else None
    probe_run = Probe(base_url, tenants, cfg, model=model, on_progress=progress)
    try:
        probe_run.discover()
    except ServerUnreachable as exc:
        typer.echo(f"prefixlint: error: {exc}", err=True)
        raise typer.Exit(2) from exc
    except ValueError as exc:
        typer.echo(f"prefixlint: error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(probe_run.plan().describe(base_url), err=True)
    if not yes:
        if not _interactive():
            typer.echo("prefixlint: error: not a terminal; pass --yes to send without asking", err=True)
            raise typer.Exit(2)
        if not typer.confirm("Send them?", default=False, err=True):
            typer.echo("nothing sent", err=True)
            raise typer.Exit(2)
    run = probe_run.run()
    if out is not None:
        run.write(out)
    typer.echo(probe_text(run) if text else run.to_json())
    if text and out is not None:
        typer.echo(f"wrote {out}")
    raise typer.Exit(0 if run.passed else 1)
