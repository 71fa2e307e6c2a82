"""Parsing jinja templates once, with the source span of every node that matters.

jinja2's AST carries line numbers only. :func:`parse_jinja` also runs jinja2's lexer and gives each
output expression, text node and statement tag its exact span (lines, columns and offsets), and
collects comments for suppressions. Results are cached per process by source text, so a template
included from many places is parsed once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from jinja2 import Environment, TemplateSyntaxError, nodes

from prefixlint.analysis.templates.emit import LineIndex

ENV = Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols", "jinja2.ext.i18n"])

# Statement tags whose location is recorded, by node type.
_TAGS: dict[type[nodes.Node], tuple[str, ...]] = {
    nodes.Include: ("include",),
    nodes.Extends: ("extends",),
    nodes.Import: ("import",),
    nodes.FromImport: ("from",),
    nodes.Macro: ("macro",),
    nodes.CallBlock: ("call",),
    nodes.For: ("for",),
    nodes.If: ("if", "elif"),
    nodes.Block: ("block",),
}


@dataclass(frozen=True)
class Span:
    """Where a node's source sits: 1-based lines, 0-based columns, and character offsets."""

    line: int
    col: int
    end_line: int
    end_col: int
    start: int
    end: int


@dataclass
class ParsedJinja:
    """A parsed template: its AST (None on a syntax error), node spans and comments."""

    source: str
    ast: nodes.Template | None
    spans: dict[int, Span] = field(default_factory=dict)
    comments: list[tuple[Span, str]] = field(default_factory=list)
    error_line: int = 0
    error_message: str = ""

    def text(self, span: Span | None) -> str:
        return self.source[span.start : span.end] if span else ""


@lru_cache(maxsize=1024)
def parse_jinja(source: str) -> ParsedJinja:
    """Parse once per process (cached by text). Newlines must already be normalised to ``\\n``."""
    try:
        ast = ENV.parse(source)
    except TemplateSyntaxError as exc:
        parsed = ParsedJinja(source, None, error_line=exc.lineno or 1, error_message=exc.message or str(exc))
        parsed.comments = _comments_only(source)
        return parsed
    parsed = ParsedJinja(source, ast)
    _map_spans(parsed)
    return parsed


def _lex(source: str) -> Iterator[tuple[int, str, str, int, int]]:
    """jinja2's tokens with their offsets: ``(lineno, type, value, start, end)``."""
    cursor = 0
    for lineno, ttype, value in ENV.lex(source):
        start = source.find(value, cursor)
        if start < 0:
            start = cursor
        end = start + len(value.rstrip()) if ttype in ("variable_end", "block_end") else start + len(value)
        cursor = max(cursor, start + len(value))
        yield lineno, ttype, value, start, end


def _comments_only(source: str) -> list[tuple[Span, str]]:
    try:
        return _collect(source, LineIndex(source))[3]
    except TemplateSyntaxError:
        return []


def _collect(source: str, index: LineIndex) -> tuple[list, list, list, list[tuple[Span, str]]]:
    def span(start: int, end: int) -> Span:
        (line, col), (end_line, end_col) = index.position(start), index.position(end)
        return Span(line, col, end_line, end_col, start, end)

    variables: list[Span] = []
    data: list[tuple[int, str, Span]] = []
    tags: list[tuple[str, Span]] = []
    comments: list[tuple[Span, str]] = []
    open_at: int | None = None
    tag_name = ""
    comment_text = ""
    for lineno, ttype, value, start, end in _lex(source):
        if ttype in ("variable_begin", "block_begin", "comment_begin"):
            open_at, tag_name, comment_text = start, "", ""
        elif ttype == "name" and open_at is not None and not tag_name:
            tag_name = value
        elif ttype == "comment":
            comment_text = value
        elif ttype == "data":
            data.append((lineno, value, span(start, start + len(value))))
        elif open_at is not None and ttype == "variable_end":
            variables.append(span(open_at, end))
            open_at = None
        elif open_at is not None and ttype == "block_end":
            tags.append((tag_name, span(open_at, end)))
            open_at = None
        elif open_at is not None and ttype == "comment_end":
            comments.append((span(open_at, end), comment_text))
            open_at = None
    return variables, data, tags, comments


def _preorder(node: nodes.Node) -> Iterator[nodes.Node]:
    yield node
    for child in node.iter_child_nodes():
        yield from _preorder(child)


def _map_spans(parsed: ParsedJinja) -> None:
    """Give each output expression, text node and recorded tag the span of its source.

    The parser creates nodes in token order, so a pre-order walk meets them in the same order as
    the lexer's tokens; each node takes the next unused token on its line.
    """
    variables, data, tags, parsed.comments = _collect(parsed.source, LineIndex(parsed.source))
    vi = di = ti = 0
    assert parsed.ast is not None
    for node in _preorder(parsed.ast):
        if isinstance(node, nodes.Output):
            for child in node.nodes:
                if isinstance(child, nodes.TemplateData):
                    j = di
                    while j < len(data) and data[j][0] <= child.lineno:
                        if data[j][0] == child.lineno and data[j][1] == child.data:
                            parsed.spans[id(child)] = data[j][2]
                            di = j + 1
                            break
                        j += 1
                else:
                    j = vi
                    while j < len(variables) and variables[j].line <= child.lineno:
                        if child.lineno <= variables[j].end_line:
                            parsed.spans[id(child)] = variables[j]
                            vi = j + 1
                            break
                        j += 1
        elif type(node) in _TAGS:
            names = _TAGS[type(node)]
            j = ti
            while j < len(tags) and tags[j][1].line <= node.lineno:
                if tags[j][0] in names and node.lineno <= tags[j][1].end_line:
                    parsed.spans[id(node)] = tags[j][1]
                    ti = j + 1
                    break
                j += 1
