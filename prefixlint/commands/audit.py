"""``prefixlint audit``: replay request logs through provider cache models.

Exit codes: 0 the audit ran (and passed ``--fail-under`` / ``--fail-on``); 1 a ``--fail-under`` or
``--fail-on`` threshold failed; 2 usage error, an input that cannot be read, a bad record under
``--strict``, a bad price file, or no usable record at all.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from prefixlint.commands.common import EXIT_FINDINGS, fail, write_output


class Format(str, Enum):
    text = "text"
    json = "json"


class Metric(str, Enum):
    simulated = "simulated"
    reported = "reported"
    fixed = "fixed"


def _rate(value: str) -> float:
    text = value.strip()
    try:
        v = float(text.rstrip("%"))
    except ValueError as exc:
        raise typer.BadParameter(f"expected a hit rate like 0.6 or 60%, got {value!r}") from exc
    if text.endswith("%") or v > 1:
        v /= 100
    if not 0 <= v <= 1:
        raise typer.BadParameter("a hit rate is between 0 and 1 (or 0% and 100%)")
    return v


def _tokens(value: str) -> list[int]:
    out = []
    for part in value.split(","):
        p = part.strip().lower().replace("_", "")
        if not p:
            continue
        mult = 1
        if p[-1] in "km":
            mult = 1024 if p[-1] == "k" else 1024 * 1024
            p = p[:-1]
        try:
            out.append(int(float(p) * mult))
        except ValueError as exc:
            raise typer.BadParameter(f"expected token counts like 64k,1m, got {value!r}") from exc
    if not out or any(v <= 0 for v in out):
        raise typer.BadParameter("token counts must be positive")
    return out


def audit(
    paths: Annotated[
        list[str] | None, typer.Argument(help="Log files (JSONL or JSON, plain or gzip); - reads stdin.")
    ] = None,
    output_format: Annotated[Format, typer.Option("--output-format", help="text or json.")] = Format.text,
    output_file: Annotated[
        Path | None, typer.Option("-o", "--output-file", help="Write the report here.")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML report.")
    ] = None,
    trace_out: Annotated[
        Path | None, typer.Option("--trace-out", help="Write an anonymised replayable trace (JSONL).")
    ] = None,
    trace_block: Annotated[int, typer.Option("--trace-block", min=1, help="Tokens per trace block.")] = 16,
    trace_key: Annotated[
        str | None,
        typer.Option("--trace-key", help="Hex key of the trace hashes (default: random per export)."),
    ] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", help="Provider of records that do not name one (e.g. vllm).")
    ] = None,
    request_field: Annotated[
        str | None, typer.Option("--request-field", help="Dotted path of the request body.")
    ] = None,
    timestamp_field: Annotated[
        str | None, typer.Option("--timestamp-field", help="When the request was sent.")
    ] = None,
    end_field: Annotated[
        str | None, typer.Option("--end-field", help="When the response began or ended.")
    ] = None,
    duration_field: Annotated[
        str | None, typer.Option("--duration-field", help="Milliseconds to the response.")
    ] = None,
    provider_field: Annotated[
        str | None, typer.Option("--provider-field", help="The provider's name.")
    ] = None,
    model_field: Annotated[
        str | None, typer.Option("--model-field", help="The model (default: the body's).")
    ] = None,
    org_field: Annotated[
        str | None, typer.Option("--org-field", help="Organisation, workspace or API key.")
    ] = None,
    tenant_field: Annotated[str | None, typer.Option("--tenant-field", help="e.g. user.id")] = None,
    session_field: Annotated[
        str | None, typer.Option("--session-field", help="An explicit conversation id.")
    ] = None,
    template_field: Annotated[
        str | None, typer.Option("--template-field", help="An explicit template name.")
    ] = None,
    usage_field: Annotated[str | None, typer.Option("--usage-field", help="The response usage.")] = None,
    capacity: Annotated[
        str | None,
        typer.Option("--capacity", help="KV capacity of self-hosted engines in tokens (LRU), e.g. 2m."),
    ] = None,
    capacity_points: Annotated[
        str | None,
        typer.Option("--capacity-points", help="Capacities of the hit-rate curve (default: 64k to 16m)."),
    ] = None,
    no_routing: Annotated[
        bool, typer.Option("--no-routing", help="Do not model prefix+key routing.")
    ] = False,
    prices: Annotated[Path | None, typer.Option("--prices", help="TOML file overriding prices.")] = None,
    redact: Annotated[bool, typer.Option("--redact", help="Excerpts as shape and hash only.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 2 on the first bad record.")] = False,
    show_problems: Annotated[int, typer.Option("--show-problems", min=0, help="Bad records listed.")] = 20,
    fail_under: Annotated[
        str | None, typer.Option("--fail-under", help="Exit 1 when the hit rate is below this (0.6 or 60%).")
    ] = None,
    fail_metric: Annotated[
        Metric, typer.Option("--fail-metric", help="Rate --fail-under checks.")
    ] = Metric.simulated,
    fail_on: Annotated[
        str | None, typer.Option("--fail-on", help="Exit 1 when any of these causes occur (comma-separated).")
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", "-j", min=1, help="Local processes (by partition).")
    ] = 1,
    dask: Annotated[bool, typer.Option("--dask", help="Run on a local Dask cluster.")] = False,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", help="Run on this Dask scheduler (tcp://host:8786).")
    ] = None,
    reorder_window: Annotated[
        float, typer.Option("--reorder-window", min=0, help="Seconds of disorder put right.")
    ] = 60.0,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bar.")] = False,
) -> None:
    """Replay request logs through provider cache models: hit rates, causes, money, capacity."""
    from prefixlint.audit.causes import CAUSES
    from prefixlint.audit.reader import InputError
    from prefixlint.audit.records import FieldMap
    from prefixlint.audit.replay import ReplayOptions
    from prefixlint.model.prices import PriceBook, PriceFileError
    from prefixlint.model.providers import UnknownProviderError, get_provider

    inputs = paths or ["-"]
    threshold = _rate(fail_under) if fail_under is not None else None
    fail_causes = [c.strip() for c in (fail_on or "").split(",") if c.strip()]
    unknown = [c for c in fail_causes if c not in CAUSES]
    if unknown:
        raise fail(f"--fail-on: unknown cause(s) {', '.join(unknown)}; known: {', '.join(CAUSES)}")
    if provider:
        try:
            get_provider(provider)
        except UnknownProviderError as exc:
            raise fail(f"--provider: {exc}") from exc
    try:
        book = PriceBook.load(prices)
    except PriceFileError as exc:
        raise fail(str(exc)) from exc
    key = b""
    if trace_out is not None:
        try:
            key = bytes.fromhex(trace_key) if trace_key else os.urandom(16)
        except ValueError as exc:
            raise fail("--trace-key must be hexadecimal") from exc
    cap = _tokens(capacity)[0] if capacity else None
    points = tuple(_tokens(capacity_points)) if capacity_points else tuple(1 << e for e in range(16, 25, 2))
    options = ReplayOptions(
        capacity_tokens=cap,
        capacity_points=points,
        redact=redact,
        routing=not no_routing,
        prices=book,
        trace_block=trace_block,
        trace_key=key,
    )
    fields = FieldMap(
        request=request_field,
        timestamp=timestamp_field,
        end=end_field,
        duration=duration_field,
        provider=provider_field,
        model=model_field,
        organization=org_field,
        tenant=tenant_field,
        session=session_field,
        template=template_field,
        usage=usage_field,
        default_provider=provider.lower() if provider else None,
    )
    try:
        if dask or scheduler:
            if trace_out is not None:
                raise fail("--trace-out runs locally (drop --dask/--scheduler, or use --workers)")
            try:
                from prefixlint.audit.distributed import run_on_dask
            except ImportError as exc:  # pragma: no cover - depends on the extra
                raise fail("--dask needs the audit-dask extra: pip install 'prefixlint[audit-dask]'") from exc
            if "-" in inputs:
                raise fail("--dask reads files, not standard input")
            result = run_on_dask(
                inputs, fields, options, scheduler, strict=strict, show_problems=show_problems
            )
        else:
            result = _run_local(
                inputs,
                fields,
                options,
                strict,
                workers,
                reorder_window,
                trace_out,
                show_problems,
                no_progress,
            )
    except InputError as exc:
        raise fail(str(exc)) from exc
    from prefixlint.report.audit_json import audit_document, render_audit_json

    doc = audit_document(result)
    if html is not None:
        from prefixlint.report.audit_html import render_audit_html

        try:
            page = render_audit_html(doc)
        except ImportError as exc:
            raise fail("--html needs matplotlib: pip install 'prefixlint[audit]'") from exc
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(page, encoding="utf-8")
    if output_format is Format.json:
        write_output(render_audit_json(result), output_file)
    else:
        from prefixlint.report.audit_text import render_audit_text

        color = output_file is None and sys.stdout.isatty()
        write_output(render_audit_text(doc, color=color), output_file)
        if html is not None:
            typer.echo(f"wrote {html}", err=True)
        if trace_out is not None:
            typer.echo(f"wrote {trace_out}", err=True)
    if result.input.used == 0:
        raise fail("no usable record in the input (see the problems above)")
    code = 0
    if threshold is not None:
        total = doc["total"]
        rate = total[fail_metric.value]
        if rate is None:
            raise fail(f"--fail-under: the log carries no usage, so there is no {fail_metric.value} hit rate")
        if rate < threshold:
            typer.echo(
                f"prefixlint audit: {fail_metric.value} hit rate {rate:.1%} "
                f"is below --fail-under {threshold:.1%}",
                err=True,
            )
            code = EXIT_FINDINGS
    hit = [c["cause"] for c in doc["causes"] + doc["flags"] if c["cause"] in fail_causes and c["requests"]]
    if hit:
        typer.echo(f"prefixlint audit: --fail-on cause(s) found: {', '.join(sorted(set(hit)))}", err=True)
        code = EXIT_FINDINGS
    if code:
        raise typer.Exit(code)


def _run_local(inputs, fields, options, strict, workers, window, trace_out, show_problems, no_progress):  # type: ignore[no-untyped-def]
    from prefixlint.audit.run import run_audit

    if no_progress or not sys.stderr.isatty():
        return run_audit(
            inputs,
            fields,
            options,
            strict=strict,
            workers=workers,
            reorder_window=window,
            trace_path=trace_out,
            show_problems=show_problems,
        )
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("auditing"),
        BarColumn(),
        TextColumn("{task.completed:,} records"),
        TimeElapsedColumn(),
        transient=True,
    ) as bar:
        task = bar.add_task("audit", total=None)
        return run_audit(
            inputs,
            fields,
            options,
            strict=strict,
            workers=workers,
            reorder_window=window,
            trace_path=trace_out,
            show_problems=show_problems,
            progress=lambda n: bar.update(task, completed=n),
        )
