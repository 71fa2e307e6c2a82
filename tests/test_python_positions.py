"""Lazy node positions agree with a full libcst position pass, and node order follows the source."""

from __future__ import annotations

import libcst as cst
import pytest
from hypothesis import given, settings
from libcst.metadata import MetadataWrapper, PositionProvider
from test_python_fuzz import PROGRAMS

from prefixlint.analysis.python.collect import parse_module
from prefixlint.analysis.python.positions import PositionState

SOURCES = {
    "repeated statements": (
        "def a(x):\n    return x\n\n\ndef b(x):\n    return x\n\n\nclass C:\n    def a(self, x):\n"
        "        return x\n"
    ),
    "decorators and comments": (
        "# leading\n@agent.system_prompt  # trailing\n@other(1, key=[2, 3])\n"
        "def hook(ctx):\n    # inside\n    return f'Today {ctx.now} and {ctx.user!r:>10}'\n"
    ),
    "tabs and nested blocks": (
        "def f(docs):\n\tif docs:\n\t\tfor d in docs:\n\t\t\tparts = [\n\t\t\t\td,\n\t\t\t\t'x',\n\t\t\t]\n"
        "\telse:\n\t\tparts = []\n\treturn parts\n"
    ),
    "parenthesized continuation": (
        "SYSTEM = (\n    'You are helpful. '\n    f'Today is {datetime.now():%Y-%m-%d}. '\n"
        '    "Be brief."\n)\n'
        "x = 1; y = 2; z = x + \\\n    y\n"
    ),
    "calls, params and lambdas": (
        "async def g(a, /, b=1, *args, c: int = 2, **kw):\n"
        "    r = await client.chat.completions.create(model='m', messages=[{'role': 'system',"
        " 'content': a}], **kw)\n    f = lambda q, *, k=0: q if k else None\n    return r\n"
    ),
    "windows newlines": "a = 1\r\nif a:\r\n    b = f'{a}'\r\nelse:\r\n    b = ''\r\n",
    "no trailing newline": "x = [1,\n  2]",
    # libcst's codegen drops the space before this colon: positions after it must not shift
    "lossy codegen": (
        "try:\n    pass\nexcept (OSError, ValueError) :\n    x = 1\n"
        "try:\n    pass\nexcept (OSError, ValueError) :\n    x = 1\ny = f'{x}' + g(x)\n"
    ),
}


def _expected(module: cst.Module) -> dict[int, tuple[int, int, int, int]]:
    """Every node's position from libcst's own PositionProvider (line/col pairs)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    return {
        id(node): (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in positions.items()
    }


def _check(text: str) -> None:
    info = parse_module("m.py", text)
    expected = _expected(info.module)
    seen = 0
    for key in list(info.order):
        node = _node(info, key)
        if node is None or node is info.module:  # (the module's own end is libcst's business)
            continue
        loc = info.loc(node)
        assert loc is not None
        assert (loc.line, loc.col, loc.end_line, loc.end_col) == expected[key], (type(node).__name__, text)
        seen += 1
    assert seen > 0 or not info.module.body


_BY_ID: dict[int, tuple[object, dict[int, cst.CSTNode]]] = {}


def _node(info, key: int) -> cst.CSTNode | None:
    """The node of ``info``'s module whose id is ``key``."""
    cached = _BY_ID.get(id(info))
    if cached is None or cached[0] is not info:
        nodes: dict[int, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = [info.module]
        while stack:
            node = stack.pop()
            nodes[id(node)] = node
            stack.extend(node.children)
        _BY_ID.clear()
        _BY_ID[id(info)] = cached = (info, nodes)
    return cached[1].get(key)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_lazy_positions_match_position_provider(name: str) -> None:
    _check(SOURCES[name])


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_each_node_placed_alone_matches_position_provider(name: str) -> None:
    """Asked in any order, one node at a time from a fresh module, each answer is exact."""
    text = SOURCES[name]
    first = parse_module("m.py", text)
    expected = _expected(first.module)
    keys = [k for k in first.order if _node(first, k) not in (None, first.module)]
    for key in keys[::-1]:
        info = parse_module("m.py", text)
        index = list(first.order).index(key)
        node = _node(info, list(info.order)[index])
        loc = info.loc(node)
        assert loc is not None
        assert (loc.line, loc.col, loc.end_line, loc.end_col) == expected[key], type(node).__name__


def test_lossy_codegen_is_realigned_with_the_source() -> None:
    text = SOURCES["lossy codegen"]
    info = parse_module("m.py", text)
    assert info.module.code != text  # the libcst behaviour this guards against
    last = info.assign_targets["y"]
    loc = info.loc(last)
    assert loc is not None and (loc.line, loc.col) == (9, 0)


def test_order_follows_source_except_a_def_before_its_decorators() -> None:
    text = SOURCES["decorators and comments"] + SOURCES["calls, params and lambdas"]
    info = parse_module("m.py", text)
    full = PositionState(info.module)
    info.module._codegen(full)  # type: ignore[arg-type]
    keyed = sorted(
        (
            k
            for k in info.order
            if full.position(k) is not None
            and not isinstance(_node(info, k), cst.FunctionDef)
            and not isinstance(info.parents.get(k), cst.FunctionDef)
        ),
        key=info.order.__getitem__,
    )
    starts = [full.position(k)[0] for k in keyed]  # type: ignore[index]
    assert starts == sorted(starts)


def test_end_pos_is_after_every_node_of_the_function() -> None:
    info = parse_module("m.py", SOURCES["tabs and nested blocks"] + "\nAFTER = 1\n")
    fdef = info.functions["f"]
    inside = [k for k, p in info.parents.items() if p is fdef]
    assert all(info.order[k] < info.end_pos(fdef) for k in inside)
    assert info.pos(info.assign_targets["AFTER"]) >= info.end_pos(fdef)


@settings(max_examples=40, deadline=None)
@given(PROGRAMS)
def test_generated_programs_positions_match(program: str) -> None:
    try:
        cst.parse_module(program)
    except Exception:
        return
    _check(program)


def test_walk_falls_back_to_every_field_when_type_hints_cannot_be_read(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A node type whose annotations do not resolve is still walked (all its fields are visited)."""
    import typing

    from prefixlint.analysis.python import collect

    source = SOURCES["calls, params and lambdas"]
    expected = parse_module("m.py", source)
    monkeypatch.setattr(collect, "_CHILD_FIELDS", {})

    def broken(kind: type) -> dict:
        raise NameError("unresolvable annotation")

    monkeypatch.setattr(typing, "get_type_hints", broken)
    got = parse_module("m.py", source)
    assert got.name_uses == expected.name_uses
    assert [type(c.node).__name__ for c in got.calls] == [type(c.node).__name__ for c in expected.calls]
    assert set(got.functions) == set(expected.functions) and got.imports == expected.imports


def test_a_node_is_placed_by_searching_its_statement_not_by_a_full_pass() -> None:
    """A node of a statement whose text occurs once is placed from that statement's codegen alone:
    the module is never regenerated whole (the point of :class:`LazyPositions`)."""
    info = parse_module("m.py", SOURCES["parenthesized continuation"])
    loc = info.loc(info.assign_targets["z"])
    assert loc is not None and (loc.line, loc.col) == (6, 14)
    assert info.positions._placed_extent(id(info.module)) is None


def test_a_method_is_placed_without_regenerating_its_class() -> None:
    """``return x`` occurs three times, so its method is the anchor sought: regenerated with the
    class body's indentation, its text is found, and neither the class nor the module is
    regenerated whole."""
    info = parse_module("m.py", SOURCES["repeated statements"])
    cls = info.classes["C"]
    (ret,) = info.returns[cls.methods["a"]]
    loc = info.loc(ret.value)
    assert loc is not None and (loc.line, loc.col) == (11, 15)
    assert info.positions._placed_extent(id(cls.node)) is None
    assert info.positions._placed_extent(id(info.module)) is None
