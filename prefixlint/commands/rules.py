"""``prefixlint rules`` and ``prefixlint rule CODE``: the rules and their documentation."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from prefixlint.commands.common import fail, write_output


def rules(
    output_format: Annotated[
        str, typer.Option("--output-format", help="text (default), json, or markdown (the README table).")
    ] = "text",
) -> None:
    """List every rule: code, name, fix applicability and summary."""
    from prefixlint.report.rule_docs import rule_json, rule_lines
    from prefixlint.rules.base import all_rules

    found = all_rules()
    if output_format == "json":
        write_output(json.dumps([rule_json(r) for r in found], indent=2) + "\n", None)
    elif output_format == "markdown":
        from prefixlint.report.markdown import rules_table

        write_output(rules_table(), None)
    elif output_format == "text":
        write_output(rule_lines(found), None)
    else:
        raise fail(f"--output-format: unknown format {output_format!r} for `rules` (text, json, markdown)")


def rule(
    code: Annotated[str, typer.Argument(help="A rule code, e.g. PFX101.")],
    output_format: Annotated[str, typer.Option("--output-format", help="text (default) or json.")] = "text",
) -> None:
    """Print a rule's documentation and examples."""
    from prefixlint.report.rule_docs import rule_json, rule_text
    from prefixlint.rules.base import get_rule

    found = get_rule(code)
    if found is None:
        raise fail(f"unknown rule code {code!r} (see `prefixlint rules`)")
    if output_format == "json":
        write_output(json.dumps(rule_json(found), indent=2) + "\n", None)
    elif output_format == "text":
        write_output(rule_text(found), None)
    else:
        raise fail(f"--output-format: unknown format {output_format!r} for `rule` (text, json)")
