"""``prefixlint diff A B [C ...]``: where rendered requests diverge, and what stays cacheable.

Exit codes: 0 compared (and every threshold met), 1 a threshold failed (``--min-cacheable``,
``--min-shared``), 2 a usage error or an input that cannot be compared (unreadable, malformed JSON with
its line and column, not a request).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from prefixlint.commands.common import EXIT_CLEAN, EXIT_FINDINGS, fail, write_output

DIFF_FORMATS = ("text", "json")


def diff(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="Two or more request payloads (JSON, JSON Lines) or rendered prompts; '-' reads stdin."
        ),
    ],
    output_format: Annotated[str, typer.Option("--output-format", help="text (default) or json.")] = "text",
    output_file: Annotated[
        Path | None, typer.Option("-o", "--output-file", help="Write the report here.")
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider", help="Provider whose tokenizer counts and whose cache --min-cacheable checks."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model (tokenizer, minimums).")] = None,
    payload_shape: Annotated[
        str,
        typer.Option(
            "--payload-shape", help="Request shape of JSON inputs: auto, chat, responses or messages."
        ),
    ] = "auto",
    text: Annotated[
        bool, typer.Option("--text", help="Read every input as a rendered prompt (plain text).")
    ] = False,
    min_cacheable: Annotated[
        int | None,
        typer.Option("--min-cacheable", min=0, help="Exit 1 when the cacheable prefix is below N tokens."),
    ] = None,
    min_shared: Annotated[
        int | None,
        typer.Option("--min-shared", min=0, help="Exit 1 when the shared prefix is below N tokens."),
    ] = None,
    color: Annotated[str, typer.Option("--color", help="auto (default), always or never.")] = "auto",
) -> None:
    """Compare rendered requests: the first divergence, and the prefix each provider can cache."""
    from prefixlint.analysis.payloads.compare import InputError, compare, load_inputs, read_samples
    from prefixlint.model.providers import UnknownProviderError, get_provider
    from prefixlint.model.settings import PAYLOAD_SHAPES, Settings

    if output_format not in DIFF_FORMATS:
        raise fail(f"--output-format: unknown format {output_format!r} for `diff` (text, json)")
    if payload_shape not in PAYLOAD_SHAPES:
        raise fail(
            f"--payload-shape: unknown shape {payload_shape!r}; expected one of {', '.join(PAYLOAD_SHAPES)}"
        )
    if color not in ("auto", "always", "never"):
        raise fail(f"--color: unknown value {color!r} (auto, always, never)")
    if provider is not None:
        try:
            get_provider(provider)
        except UnknownProviderError as exc:
            raise fail(f"--provider: {exc}") from exc
    settings = _settings(Settings, provider, model, payload_shape)
    try:
        samples, cache, texts = read_samples(
            load_inputs(inputs, _read_stdin), settings, as_text=text, provider=provider
        )
    except InputError as exc:
        raise fail(str(exc)) from exc
    if len(samples) < 2:
        raise fail("diff needs two requests or more (files, '-', or a JSON Lines file of several)")
    first = samples[0]
    target = provider or _provider_of(first, settings)
    result = compare(samples, cache, target, model or _model_of(first, settings), texts)
    data = result.to_dict()
    code, notes = _thresholds(result, target, min_cacheable, min_shared)
    data["checks"] = notes
    if output_format == "json":
        from prefixlint.report.diff import render_diff_json

        report = render_diff_json(data)
    else:
        from prefixlint.report.diff import render_diff_text

        report = render_diff_text(data, _use_color(color, output_file))
        report += "".join(f"{'FAILED' if not n['passed'] else 'passed'}: {n['check']}\n" for n in notes)
    write_output(report, output_file)
    raise typer.Exit(code)


def _settings(cls: Any, provider: str | None, model: str | None, shape: str) -> Any:
    data: dict[str, Any] = {"payload-shape": shape}
    if provider:
        data["provider"] = provider
    if model:
        data["model"] = model
    return cls.model_validate(data)


def _provider_of(sample: Any, settings: Any) -> str:
    from prefixlint.analysis.payloads.analyze import provider_for

    if sample.payload is None:
        return settings.provider
    return provider_for(sample.payload.body, sample.payload.api, settings)[0]


def _model_of(sample: Any, settings: Any) -> str | None:
    if sample.payload is None:
        return settings.model
    model = sample.payload.body.get("model")
    return model if isinstance(model, str) else settings.model


def _thresholds(
    result: Any, provider: str, min_cacheable: int | None, min_shared: int | None
) -> tuple[int, list[dict[str, Any]]]:
    """The exit code and the outcome of each threshold asked for."""
    notes = []
    if min_cacheable is not None:
        got = result.cacheable_for(provider) or 0
        notes.append(
            {
                "check": f"cacheable prefix under {provider}'s rules is {got:,} tokens "
                f"(minimum asked: {min_cacheable:,})",
                "passed": got >= min_cacheable,
            }
        )
    if min_shared is not None:
        notes.append(
            {
                "check": f"shared prefix is {result.shared:,} tokens (minimum asked: {min_shared:,})",
                "passed": result.shared >= min_shared,
            }
        )
    return (EXIT_FINDINGS if any(not n["passed"] for n in notes) else EXIT_CLEAN), notes


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        from prefixlint.analysis.payloads.compare import InputError

        raise InputError(f"-: not UTF-8 text (byte {exc.start})") from None


def _use_color(choice: str, output_file: Path | None) -> bool:
    if choice != "auto":
        return choice == "always"
    return output_file is None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
