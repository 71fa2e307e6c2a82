"""``prefixlint bench``: TTFT and retention checks against an OpenAI-compatible server.

Import-light on purpose (no torch, no matplotlib, no httpx at import time): the main CLI mounts
``app`` as ``prefixlint bench``. Exit codes: 0 the run completed (with ``--strict``: and found
nothing); 1 requests failed, or ``--strict`` and a finding; 2 usage error, or the server could not be
reached at all.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any

import typer

app = typer.Typer(
    help="Measure prefix-cache TTFT and check what the server claims.",
    no_args_is_help=True,
    add_completion=False,
)

API_KEY_ENVS = ["PREFIXLINT_API_KEY", "OPENAI_API_KEY"]


class EndpointChoice(str, Enum):
    chat = "chat"
    completions = "completions"


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


def _ints(value: str) -> list[int]:
    try:
        out = [int(v.replace("_", "")) for v in value.split(",") if v.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"expected comma-separated integers, got {value!r}") from exc
    if not out or any(v < 2 for v in out):
        raise typer.BadParameter("prompt lengths must be at least 2 tokens")
    return out


def _extra_body(value: str | None) -> dict[str, Any]:
    if not value:
        return {}
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"--extra-body is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise typer.BadParameter("--extra-body must be a JSON object")
    return data


def _client(
    base_url: str,
    model: str,
    api_key: str | None,
    endpoint: EndpointChoice,
    max_tokens: int,
    timeout: float,
    cache_salt: str | None,
    extra_body: str | None,
):  # type: ignore[no-untyped-def]
    from prefixlint.live.client import BenchClient

    return BenchClient(
        base_url=base_url,
        model=model,
        api_key=api_key,
        endpoint=endpoint.value,
        max_tokens=max_tokens,
        timeout_s=timeout,
        cache_salt=cache_salt,
        extra_body=_extra_body(extra_body),
    )


def _emit(run, out: Path | None, plot: Path | None, fmt: OutputFormat, strict: bool) -> None:  # type: ignore[no-untyped-def]
    from prefixlint.live.summary import errors, findings, summary_text

    if out is not None:
        run.write(out)
    if plot is not None:
        from prefixlint.live.plot import plot_run

        plot_run(run, plot)
    if fmt == OutputFormat.json:
        typer.echo(run.to_json())
    else:
        typer.echo(summary_text(run))
        if out is not None:
            typer.echo(f"wrote {out}")
        if plot is not None:
            typer.echo(f"wrote {plot}")
    if errors(run) or (strict and findings(run)):
        raise typer.Exit(1)


def _require_plots(plot: Path | None) -> None:
    """Fail before any request is sent when ``--plot`` cannot be honoured (exit 2, a usage error)."""
    if plot is None:
        return
    from prefixlint.live.plot import PlotsUnavailable, require_matplotlib

    try:
        require_matplotlib()
    except PlotsUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _compare(paths: tuple[Path, Path], fmt: OutputFormat) -> None:
    from prefixlint.live.compare import compare_json, compare_text
    from prefixlint.live.results import SchemaError, load_run

    try:
        a, b = (load_run(p) for p in paths)
    except SchemaError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(json.dumps(compare_json(a, b), indent=2) if fmt == OutputFormat.json else compare_text(a, b))


BaseUrl = typer.Option(None, "--base-url", help="API base URL, e.g. http://localhost:8000/v1")
Model = typer.Option(None, "--model", help="model name sent in the request (default: the first listed)")
ApiKey = typer.Option(
    None,
    "--api-key",
    envvar=API_KEY_ENVS,
    show_envvar=True,
    help="bearer token (default from PREFIXLINT_API_KEY or OPENAI_API_KEY)",
)
Endpoint = typer.Option(EndpointChoice.chat, "--endpoint", help="/chat/completions or /completions")
MaxTokens = typer.Option(1, "--max-tokens", min=1)
Timeout = typer.Option(120.0, "--timeout", help="seconds per request")
CacheSalt = typer.Option(
    None, "--cache-salt", help="cache_salt sent with every request (vLLM, SGLang, engine)"
)
ExtraBody = typer.Option(None, "--extra-body", help="JSON object merged into every request body")
Out = typer.Option(None, "--out", help="write the run as JSON")
Plot = typer.Option(None, "--plot", help="write a plot (.png or .svg)")
Fmt = typer.Option(OutputFormat.text, "--output-format")
Seed = typer.Option(None, "--seed", help="fix the prompts (default: random, recorded in the JSON)")
Label = typer.Option(None, "--label", help="name of this run in comparisons")
Strict = typer.Option(False, "--strict", help="exit 1 when reports and measurements disagree")


def need_live_extra(command: str) -> None:
    """Exit 2 with the install line when the live-server tools' dependencies are missing."""
    try:
        import httpx  # noqa: F401
    except ImportError as exc:
        typer.echo(f"error: prefixlint {command} needs httpx: pip install 'prefixlint[live]'", err=True)
        raise typer.Exit(2) from exc


def _server(base_url: str | None, model: str | None, api_key: str | None, timeout: float):  # type: ignore[no-untyped-def]
    """What the server says about itself; exit 2 when it cannot be reached or names no model."""
    if not base_url:
        typer.echo("error: --base-url is required", err=True)
        raise typer.Exit(2)
    need_live_extra("bench")
    from prefixlint.live.server_info import ServerUnreachable, discover

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        info = discover(base_url, model=model, headers=headers, timeout_s=timeout)
    except ServerUnreachable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if info.model is None:
        typer.echo("error: the server lists no model under /models; pass --model", err=True)
        raise typer.Exit(2)
    return info


@app.command()
def ttft(
    base_url: str | None = BaseUrl,
    model: str | None = Model,
    api_key: str | None = ApiKey,
    prompt_tokens: str = typer.Option("1024,2048,4096", "--prompt-tokens", help="comma-separated lengths"),
    shared_prefix: float = typer.Option(
        0.9, "--shared-prefix", help="fraction of the prompt the hit arm shares"
    ),
    new_suffix_tokens: int | None = typer.Option(
        None, "--new-suffix-tokens", help="fixed fresh suffix per hit (overrides --shared-prefix)"
    ),
    samples: int = typer.Option(20, "--samples", min=2, help="requests per arm and length"),
    warmup: int = typer.Option(3, "--warmup", min=0, help="unmeasured requests per length"),
    max_tokens: int = MaxTokens,
    endpoint: EndpointChoice = Endpoint,
    cache_salt: str | None = CacheSalt,
    extra_body: str | None = ExtraBody,
    timeout: float = Timeout,
    threshold_method: str = typer.Option("ks", "--threshold-method", help="ks or midpoint"),
    sleep: float = typer.Option(0.0, "--sleep", help="seconds between requests"),
    metrics_url: str | None = typer.Option(None, "--metrics-url", help="default: <server root>/metrics"),
    no_metrics: bool = typer.Option(False, "--no-metrics", help="do not scrape Prometheus counters"),
    seed: int | None = Seed,
    label: str | None = Label,
    out: Path | None = Out,
    plot: Path | None = Plot,
    compare: tuple[Path, Path] | None = typer.Option(
        None, "--compare", help="show two saved runs side by side instead of running"
    ),
    output_format: OutputFormat = Fmt,
    strict: bool = Strict,
) -> None:
    """Hit vs miss TTFT per prompt length, and whether reported cached tokens match the timing."""
    if compare:
        _compare(compare, output_format)
        return
    if threshold_method not in {"ks", "midpoint"}:
        raise typer.BadParameter("--threshold-method must be ks or midpoint")
    if new_suffix_tokens is None and not 0.0 < shared_prefix < 1.0:
        raise typer.BadParameter("--shared-prefix must be between 0 and 1 (exclusive)")
    lengths = _ints(prompt_tokens)
    _require_plots(plot)
    info = _server(base_url, model, api_key, timeout)
    from prefixlint.live.ttft import TTFTConfig, run_ttft

    cfg = TTFTConfig(
        prompt_tokens=lengths,
        shared_prefix=shared_prefix,
        new_suffix_tokens=new_suffix_tokens,
        samples=samples,
        warmup=warmup,
        seed=seed,
        threshold_method=threshold_method,
        sleep_s=sleep,
        metrics_url=metrics_url,
        check_metrics=not no_metrics,
        label=label,
    )
    with _client(
        base_url, info.model, api_key, endpoint, max_tokens, timeout, cache_salt, extra_body
    ) as client:
        run = run_ttft(client, cfg, server=info)
    _emit(run, out, plot, output_format, strict)


@app.command()
def retention(
    base_url: str | None = BaseUrl,
    model: str | None = Model,
    api_key: str | None = ApiKey,
    contexts: int = typer.Option(8, "--contexts", min=1, help="unique contexts to fill"),
    context_tokens: int = typer.Option(4096, "--context-tokens", min=2, help="tokens per context"),
    advertised_tokens: int | None = typer.Option(
        None, "--advertised-tokens", help="claimed context/pool size (default: max_model_len from /v1/models)"
    ),
    probe_suffix_tokens: int = typer.Option(16, "--probe-suffix-tokens", min=1),
    threshold_ms: float | None = typer.Option(
        None, "--threshold-ms", help="hit TTFT threshold when the server reports no cached_tokens"
    ),
    endpoint: EndpointChoice = Endpoint,
    max_tokens: int = MaxTokens,
    cache_salt: str | None = CacheSalt,
    extra_body: str | None = ExtraBody,
    timeout: float = Timeout,
    seed: int | None = Seed,
    label: str | None = Label,
    out: Path | None = Out,
    plot: Path | None = Plot,
    output_format: OutputFormat = Fmt,
    strict: bool = Strict,
) -> None:
    """Fill N unique contexts, re-probe newest first, and compare what is kept with the claim."""
    _require_plots(plot)
    info = _server(base_url, model, api_key, timeout)
    from prefixlint.live.retention import RetentionConfig, run_retention

    cfg = RetentionConfig(
        contexts=contexts,
        context_tokens=context_tokens,
        advertised_tokens=advertised_tokens,
        probe_suffix_tokens=probe_suffix_tokens,
        threshold_s=threshold_ms / 1000.0 if threshold_ms is not None else None,
        seed=seed,
        label=label,
    )
    with _client(
        base_url, info.model, api_key, endpoint, max_tokens, timeout, cache_salt, extra_body
    ) as client:
        run = run_retention(client, cfg)
    _emit(run, out, plot, output_format, strict)


@app.command("compare")
def compare_cmd(
    a: Path = typer.Argument(..., exists=True, dir_okay=False),
    b: Path = typer.Argument(..., exists=True, dir_okay=False),
    output_format: OutputFormat = Fmt,
) -> None:
    """Show two saved runs side by side (same as ``ttft --compare A B``)."""
    _compare((a, b), output_format)


@app.command()
def schema(
    output_format: OutputFormat = Fmt,  # every prefixlint command takes --output-format; both print JSON
) -> None:
    """Print the JSON Schema of a results file."""
    from prefixlint.live.results import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


def main() -> None:  # pragma: no cover - convenience entry point
    """Run ``app`` (``python -m prefixlint.commands.bench``)."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
