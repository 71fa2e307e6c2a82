"""Fix candidates the analyzer attaches to segments (character-offset edits, ruff's model)."""

from __future__ import annotations

import libcst as cst

from prefixlint.analysis.python.collect import ModuleInfo
from prefixlint.model.edits import Applicability, Edit, Fix


def _safety(safe: bool) -> Applicability:
    return Applicability.SAFE if safe else Applicability.UNSAFE


def sort_keys_fix(mod: ModuleInfo, call: cst.Call, safe: bool = False) -> Fix | None:
    """Add ``sort_keys=True`` to a ``json.dumps(...)`` call; ``safe`` when every key is a string."""
    span = mod.span(call)
    if span is None or not call.args:
        return None
    end = span[1] - 1
    if mod.text[end : end + 1] != ")":
        return None
    last = call.args[-1]
    has_comma = isinstance(last.comma, cst.Comma)
    insert = "sort_keys=True" if has_comma else ", sort_keys=True"
    if has_comma:
        # put it right after the trailing comma, keeping the closing bracket where it is
        arg_span = mod.span(last)
        pos = arg_span[1] if arg_span else end
        comma = mod.text.find(",", pos, end)  # an argument's span ends before its comma
        pos = comma + 1 if comma >= 0 else pos
        insert = " sort_keys=True,"
        return Fix("Add `sort_keys=True`", (Edit(pos, pos, insert),), _safety(safe), "sort-keys", mod.path)
    return Fix("Add `sort_keys=True`", (Edit(end, end, insert),), _safety(safe), "sort-keys", mod.path)


def sorted_fix(mod: ModuleInfo, iter_node: cst.BaseExpression, safe: bool = False) -> Fix | None:
    """Wrap the iterable of a set iteration in ``sorted(...)``; ``safe`` when its items are strings."""
    span = mod.span(iter_node)
    if span is None:
        return None
    src = mod.text[span[0] : span[1]]
    return Fix(
        "Iterate in sorted order",
        (Edit(span[0], span[1], f"sorted({src})"),),
        _safety(safe),
        "sorted",
        mod.path,
    )


def move_line_to_end_fix(mod: ModuleInfo, fstring: cst.FormattedString, expr: cst.CSTNode) -> Fix | None:
    """Move the line of an f-string that holds ``expr`` to the end of the string."""
    fspan, espan = mod.span(fstring), mod.span(expr)
    if fspan is None or espan is None:
        return None
    quote = fstring.end
    cstart = fspan[0] + len(fstring.start)
    cend = fspan[1] - len(quote)
    return _move_line(mod, cstart, cend, "\n" if len(quote) == 3 else "\\n", espan[0], espan[1])


def move_template_line_to_end_fix(
    mod: ModuleInfo, literal: cst.SimpleString, start: int, end: int
) -> Fix | None:
    """Move the line of a template string constant holding the placeholder at ``start:end`` to its end."""
    span = mod.span(literal)
    if span is None or "b" in literal.prefix.lower():
        return None
    triple = len(literal.quote) == 3
    if not triple and "r" in literal.prefix.lower():
        return None  # a raw one-line string has no line breaks to move around
    cstart = span[0] + len(literal.prefix) + len(literal.quote)
    cend = span[1] - len(literal.quote)
    return _move_line(mod, cstart, cend, "\n" if triple else "\\n", start, end)


def _move_line(mod: ModuleInfo, cstart: int, cend: int, sep: str, start: int, end: int) -> Fix | None:
    """Move the line of the string body ``text[cstart:cend]`` holding ``start:end`` to the end."""
    content = mod.text[cstart:cend]
    a, b = start - cstart, end - cstart
    if not (0 <= a <= b <= len(content)):
        return None
    ls = content.rfind(sep, 0, a)
    ls = 0 if ls < 0 else ls + len(sep)
    le = content.find(sep, b)
    if le < 0 or not content[le + len(sep) :].strip():
        return None
    line = content[ls:le]
    rest = content[:ls] + content[le + len(sep) :]
    new = rest + line + sep if rest.endswith(sep) else rest + sep + line
    return Fix(
        "Move the dynamic line to the end of the prompt",
        (Edit(cstart, cend, new),),
        Applicability.UNSAFE,
        "move-to-end",
        mod.path,
    )


def swap_concat_fix(mod: ModuleInfo, binop: cst.BinaryOperation) -> Fix | None:
    """Rewrite ``dynamic + static`` as ``static + dynamic``."""
    span, lspan, rspan = mod.span(binop), mod.span(binop.left), mod.span(binop.right)
    if span is None or lspan is None or rspan is None:
        return None
    left = mod.text[lspan[0] : lspan[1]]
    right = mod.text[rspan[0] : rspan[1]]
    return Fix(
        "Move the dynamic part after the static text",
        (Edit(span[0], span[1], f"{right} + {left}"),),
        Applicability.UNSAFE,
        "move-to-end",
        mod.path,
    )
