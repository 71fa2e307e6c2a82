"""A rule's documentation as text (``prefixlint rule CODE``), as JSON, and the one-line listing."""

from __future__ import annotations

from typing import Any


def rule_json(rule: Any) -> dict[str, Any]:
    """Everything ``prefixlint rule CODE --output-format json`` prints for ``rule``."""
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary(),
        "fix": rule.fix_applicability.value if rule.fix_applicability else None,
        "default_severity": rule.default_severity.value,
        "documentation": rule.documentation(),
        "examples": {
            "valid": [_example_json(e) for e in rule.VALID],
            "invalid": [_example_json(e) for e in rule.INVALID],
        },
    }


def _example_json(example: Any) -> dict[str, Any]:
    return {
        "path": example.path,
        "code": example.code,
        "files": example.files,
        "line": example.line,
        "fixed": example.fixed,
        "unsafe": example.unsafe,
        "note": example.note,
    }


def rule_lines(rules: list[Any]) -> str:
    """One line per rule: code, name, fix applicability, summary (``prefixlint rules``)."""
    width = max((len(r.name) for r in rules), default=10)
    out = []
    for r in rules:
        fix = r.fix_applicability.value if r.fix_applicability else "-"
        out.append(f"{r.code}  {r.name:<{width}}  {fix:<7}  {r.summary()}\n")
    return "".join(out)


def rule_text(rule: Any) -> str:
    """The rule's docstring and its examples, with the fixed text of fixable ones, as Markdown-ish text."""
    fix = rule.fix_applicability.value if rule.fix_applicability else "none"
    out = [
        f"# {rule.name} ({rule.code})",
        "",
        f"Fix: {fix}. Severity: at most {rule.default_severity.value}; it follows the tokens at stake "
        "(informational below `min-impact-tokens`, see docs/severity.md).",
        "",
        rule.documentation(),
        "",
    ]
    for title, examples in (("Flagged", rule.INVALID), ("Not flagged", rule.VALID)):
        for ex in examples:
            out.append(f"## {title}: {ex.path}" + (f" ({ex.note})" if ex.note else ""))
            out.extend(["", "```", ex.code.rstrip("\n"), "```", ""])
            if ex.fixed is not None:
                kind = "unsafe" if ex.unsafe else "safe"
                out.extend([f"Fixed ({kind} fix):", "", "```", ex.fixed.rstrip("\n"), "```", ""])
    return "\n".join(out) + "\n"
