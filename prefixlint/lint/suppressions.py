"""Suppression comments: parse them, match findings against them, report unused ones, add new ones.

Syntax (ruff's ``noqa`` model, with prefixlint's own words):

- line level, Python: ``# prefixlint: ignore[PFX101, PFX102]`` at the end of the line, or after the
  closing quotes of a multi-line string (it then covers every line of that string);
  ``# prefixlint: ignore`` without codes silences every code on the line;
- line level, templates: ``{# prefixlint: ignore[PFX101] #}`` on the line;
- file level: ``# prefixlint: ignore-file`` or ``# prefixlint: ignore-file[PFX101]`` on a line of its
  own (``{# prefixlint: ignore-file[...] #}`` in a template).

Codes in a directive that silence nothing are reported as ``PFX900`` (like ruff's RUF100).
"""

from __future__ import annotations

import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field

from prefixlint.model.edits import Applicability, Edit, Fix
from prefixlint.model.findings import Finding, Severity
from prefixlint.model.layout import SourceLocation
from prefixlint.model.source_text import line_starts, split_lines

UNUSED_CODE = "PFX900"
_CODES = r"(?:\[(?P<codes>[^\]]*)\])?"
PY_DIRECTIVE_RE = re.compile(r"#\s*prefixlint:\s*(?P<kind>ignore-file|ignore)\b" + _CODES)
TEMPLATE_DIRECTIVE_RE = re.compile(
    r"\{#-?\s*prefixlint:\s*(?P<kind>ignore-file|ignore)\b" + _CODES + r"[^#]*#\}"
)
_CODE_RE = re.compile(r"^[A-Z]+\d{3}$")


@dataclass(frozen=True)
class Directive:
    """One suppression comment. ``codes`` is None for a blanket directive."""

    line: int
    col: int
    end_col: int
    codes: tuple[str, ...] | None
    file_level: bool = False
    text: str = ""


@dataclass
class FileSuppressions:
    """Every directive of one file, and which lines each line-level directive covers."""

    path: str
    directives: list[Directive] = field(default_factory=list)
    # A finding on line ``l`` is covered by directives on ``anchor.get(l, l)`` (multi-line strings).
    anchor: dict[int, int] = field(default_factory=dict)
    style: str = "python"
    # False when a file without any directive skipped the tokenizer: matching needs no anchors
    # then, and :func:`add_ignores` computes them itself.
    anchors_known: bool = True

    def anchor_line(self, line: int) -> int:
        """The line a suppression for ``line`` must be written on."""
        seen = 0
        while line in self.anchor and seen < 1000:
            line = self.anchor[line]
            seen += 1
        return line

    def matching(self, line: int, code: str) -> tuple[Directive, str] | None:
        """The directive (and the code in it) that silences ``code`` on ``line``, if any."""
        target = self.anchor_line(line)
        for d in self.directives:
            if not d.file_level and d.line not in (line, target):
                continue
            if d.codes is None:
                return d, "*"
            for c in d.codes:
                if code == c or (c and code.startswith(c) and not _CODE_RE.match(c)):
                    return d, c
        return None

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "style": self.style,
            "anchor": {str(k): v for k, v in self.anchor.items()},
            "anchors_known": self.anchors_known,
            "directives": [
                [
                    d.line,
                    d.col,
                    d.end_col,
                    list(d.codes) if d.codes is not None else None,
                    d.file_level,
                    d.text,
                ]
                for d in self.directives
            ],
        }

    @classmethod
    def from_dict(cls, data: dict) -> FileSuppressions:
        return cls(
            path=data["path"],
            style=data.get("style", "python"),
            anchor={int(k): v for k, v in data.get("anchor", {}).items()},
            anchors_known=data.get("anchors_known", True),
            directives=[
                Directive(d[0], d[1], d[2], tuple(d[3]) if d[3] is not None else None, d[4], d[5])
                for d in data.get("directives", [])
            ],
        )


def _split_codes(raw: str | None) -> tuple[str, ...] | None:
    if raw is None:
        return None
    return tuple(c.strip().upper() for c in raw.split(",") if c.strip())


def parse_python(path: str, text: str, *, anchors: bool = False) -> FileSuppressions:
    """Directives of a Python file, found with the tokenizer so strings never count as comments.

    A file that cannot hold a directive is not tokenized (most files: the tokenizer costs about a
    third of a libcst parse) unless ``anchors`` asks for the multi-line string map anyway.
    """
    if not anchors and "prefixlint" not in text:
        return FileSuppressions(path=path, style="python", anchors_known=False)
    out = FileSuppressions(path=path, style="python")
    try:
        tokens = list(tokenize.generate_tokens(iter(split_lines(text, keepends=True)).__next__))
    except (tokenize.TokenError, SyntaxError, IndentationError, ValueError):
        return _parse_lines(path, text, PY_DIRECTIVE_RE, "python")
    fstring_starts: list[int] = []
    fstart = getattr(tokenize, "FSTRING_START", None)
    fend = getattr(tokenize, "FSTRING_END", None)
    line_has_code: set[int] = set()
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            m = PY_DIRECTIVE_RE.search(tok.string)
            if m:
                file_level = m.group("kind") == "ignore-file"
                if file_level and tok.start[0] in line_has_code:
                    file_level = False  # ignore-file must stand on its own line
                out.directives.append(
                    Directive(
                        line=tok.start[0],
                        col=tok.start[1] + m.start(),
                        end_col=tok.start[1] + m.end(),
                        codes=_split_codes(m.group("codes")),
                        file_level=file_level,
                        text=m.group(0),
                    )
                )
            continue
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            line_has_code.update(range(tok.start[0], tok.end[0] + 1))
        start_line = None
        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            start_line = tok.start[0]
        elif fstart is not None and tok.type == fstart:
            fstring_starts.append(tok.start[0])
        elif fend is not None and tok.type == fend and fstring_starts:
            s = fstring_starts.pop()
            if tok.end[0] > s:
                start_line = s
        if start_line is not None:
            for line in range(start_line, tok.end[0]):
                out.anchor[line] = tok.end[0]
    return out


def _parse_lines(path: str, text: str, regex: re.Pattern[str], style: str) -> FileSuppressions:
    out = FileSuppressions(path=path, style=style)
    for lineno, line in enumerate(split_lines(text), start=1):
        for m in regex.finditer(line):
            file_level = m.group("kind") == "ignore-file" and not line[: m.start()].strip()
            out.directives.append(
                Directive(lineno, m.start(), m.end(), _split_codes(m.group("codes")), file_level, m.group(0))
            )
    return out


def parse_template(path: str, text: str) -> FileSuppressions:
    """Directives of a template: ``{# prefixlint: ignore[CODE] #}`` comments."""
    return _parse_lines(path, text, TEMPLATE_DIRECTIVE_RE, "template")


def parse_suppressions(path: str, text: str, style: str = "python") -> FileSuppressions:
    """Directives of ``text`` for a Python file (``style='python'``) or a template (anything else)."""
    if style == "python":
        return parse_python(path, text)
    return parse_template(path, text)


@dataclass
class SuppressionResult:
    """Findings left after suppression, and which directive codes were used."""

    kept: list[Finding]
    suppressed: list[Finding]
    used: set[tuple[str, int, str]]  # (path, directive line, code or '*')


def apply_suppressions(findings: Iterable[Finding], tables: dict[str, FileSuppressions]) -> SuppressionResult:
    """Drop findings silenced by a directive of the file they are located in."""
    kept: list[Finding] = []
    suppressed: list[Finding] = []
    used: set[tuple[str, int, str]] = set()
    for f in findings:
        table = tables.get(f.location.path)
        hit = table.matching(f.location.line, f.code) if table is not None and f.code != UNUSED_CODE else None
        if hit is None:
            kept.append(f)
        else:
            directive, code = hit
            used.add((f.location.path, directive.line, code))
            suppressed.append(f)
    return SuppressionResult(kept, suppressed, used)


def unused_findings(
    table: FileSuppressions,
    used: set[tuple[str, int, str]],
    enabled: Iterable[str],
    known: Iterable[str],
    text: str | None = None,
) -> list[Finding]:
    """``PFX900`` findings for directive codes of ``table`` that silenced nothing.

    Only codes that are enabled for this file, unknown codes and blanket directives are reported,
    so running with a narrower ``--select`` does not flag suppressions of other rules.
    """
    enabled_set, known_set = set(enabled), set(known)
    out: list[Finding] = []
    for d in table.directives:
        if d.codes is None:
            if (table.path, d.line, "*") in used:
                continue
            unused, reason = ["*"], "unused blanket suppression"
        else:
            unused = []
            reasons = []
            for c in d.codes:
                if (table.path, d.line, c) in used:
                    continue
                if c not in known_set and not any(k.startswith(c) for k in known_set):
                    unused.append(c)
                    reasons.append(f"unknown: {c}")
                elif c in enabled_set or any(e.startswith(c) for e in enabled_set):
                    unused.append(c)
                    reasons.append(f"unused: {c}")
            if not unused:
                continue
            reason = "unused suppression (" + "; ".join(reasons) + ")"
        fix = _removal_fix(table, d, unused, text) if text is not None else None
        out.append(
            Finding(
                code=UNUSED_CODE,
                message=reason[0].upper() + reason[1:],
                location=SourceLocation(table.path, d.line, d.col, d.line, d.end_col),
                severity=Severity.INFO,
                fix=fix,
                rule_name="unused-suppression",
            )
        )
    return out


def _removal_fix(table: FileSuppressions, d: Directive, unused: list[str], text: str) -> Fix | None:
    offsets = line_starts(text)
    if not text.endswith(("\n", "\r")):
        offsets.append(len(text))  # the end of the last line
    if d.line - 1 >= len(offsets):
        return None
    base = offsets[d.line - 1]
    start, end = base + d.col, base + d.end_col
    if text[start:end] != d.text:
        return None
    remaining = [c for c in (d.codes or ()) if c not in unused]
    if remaining:
        new = _render(table.style, d.file_level, remaining)
        return Fix(
            "Remove unused codes from the suppression",
            (Edit(start, end, new),),
            Applicability.SAFE,
            purpose="remove-suppression",
            path=table.path,
        )
    # Remove the whole comment and the whitespace before it.
    while start > base and text[start - 1] in " \t":
        start -= 1
    line_end = offsets[d.line] if d.line < len(offsets) else len(text)
    rest = text[end:line_end]
    if table.style == "python" and rest.strip() == "" and not text[base:start].strip():
        # The comment stood alone on its line: drop the whole line.
        return Fix(
            "Remove unused suppression",
            (Edit(base, line_end, ""),),
            Applicability.SAFE,
            purpose="remove-suppression",
            path=table.path,
        )
    return Fix(
        "Remove unused suppression",
        (Edit(start, end, ""),),
        Applicability.SAFE,
        purpose="remove-suppression",
        path=table.path,
    )


def _render(style: str, file_level: bool, codes: Iterable[str]) -> str:
    kind = "ignore-file" if file_level else "ignore"
    body = f"prefixlint: {kind}[{', '.join(codes)}]"
    return f"# {body}" if style == "python" else f"{{# {body} #}}"


def add_ignores(text: str, table: FileSuppressions, findings: Iterable[Finding]) -> tuple[str, int]:
    """``text`` with a suppression added for every finding; returns the new text and how many lines changed.

    A Python comment goes at the end of the finding's line, or after the closing quotes of the
    multi-line string the line belongs to; codes merge into a directive already on that line. Lines
    ending in a backslash continuation are left alone.
    """
    if table.style == "python" and not table.anchors_known:
        table = parse_python(table.path, text, anchors=True)
    wanted: dict[int, set[str]] = {}
    for f in findings:
        if f.code in (UNUSED_CODE, "PFX001"):
            continue
        line = table.anchor_line(f.location.line) if table.style == "python" else f.location.line
        wanted.setdefault(line, set()).add(f.code)
    if not wanted:
        return text, 0
    lines = split_lines(text, keepends=True)
    changed = 0
    for line_no, codes in wanted.items():
        if line_no < 1 or line_no > len(lines):
            continue
        raw = lines[line_no - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body) :]
        if table.style == "python" and body.rstrip().endswith("\\"):
            continue
        existing = next((d for d in table.directives if d.line == line_no and not d.file_level), None)
        if existing is not None and existing.codes is None:
            continue
        if existing is not None and existing.text and existing.text in body:
            merged = sorted({*(existing.codes or ()), *codes})
            body = body.replace(existing.text, _render(table.style, False, merged), 1)
        else:
            sep = "  " if table.style == "python" else ""  # whitespace before {# #} would render
            body = (
                (body.rstrip() if table.style == "python" else body)
                + sep
                + _render(table.style, False, sorted(codes))
            )
        lines[line_no - 1] = body + ending
        changed += 1
    return "".join(lines), changed
