"""The README rules table, generated from the rules' own metadata."""

from __future__ import annotations

START = "<!-- rules-table:start -->"
END = "<!-- rules-table:end -->"


def _cell(text: str) -> str:
    return text.replace("``", "`").replace("|", "\\|").replace("\n", " ").strip()


def rules_table() -> str:
    """A Markdown table of every registered rule: code, name, fix applicability, summary."""
    from prefixlint.rules.base import all_rules

    lines = ["| Code | Name | Fix | Summary |", "| --- | --- | --- | --- |"]
    for rule in all_rules():
        fix = rule.fix_applicability.value if rule.fix_applicability else ""
        lines.append(f"| {rule.code} | {rule.name} | {fix} | {_cell(rule.summary())} |")
    return "\n".join(lines) + "\n"


def replace_table(document: str, table: str) -> str:
    """``document`` with the text between the rules-table markers replaced by ``table``."""
    start, end = document.index(START) + len(START), document.index(END)
    return document[:start] + "\n" + table + document[end:]


def table_in(document: str) -> str:
    """The text between the rules-table markers, stripped of the surrounding newlines."""
    start, end = document.index(START) + len(START), document.index(END)
    return document[start:end].strip("\n") + "\n"


def update_readme(path: str = "README.md") -> bool:
    """Regenerate the rules table in ``path``; returns True when the file changed."""
    from pathlib import Path

    readme = Path(path)
    old = readme.read_text("utf-8")
    new = replace_table(old, rules_table())
    if new != old:
        readme.write_text(new, "utf-8")
    return new != old
