"""``cst_parse.parse_module``: libcst's tree without per-node validation, and validation restored."""

from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest
from libcst._nodes.base import CSTNode

from prefixlint.analysis.python import cst_parse

SOURCES = [
    "x = (1,\n     2)\n",
    "@decorator(arg)\nasync def f(a, /, b=1, *c, d: int = 2, **e) -> str:\n    return f'{a!r:>{b}}'\n",
    "class A(B, metaclass=M):\n    'doc'\n    x: int = 1\n\n"
    "    def g(self):  # comment\n        yield from h()\n",
    "match p:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v}:\n        pass\n",
    "lambda: (yield)\nwith (a as b, c as d):\n    del e[0], f.g\n",
]


@pytest.mark.parametrize("text", SOURCES)
def test_the_tree_is_libcsts_tree(text: str) -> None:
    ours = cst_parse.parse_module(text)
    assert ours.deep_equals(cst.parse_module(text))
    assert ours.code == text


def test_this_packages_own_modules_parse_to_the_same_trees() -> None:
    package = Path(cst_parse.__file__).parent
    for path in sorted(package.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert cst_parse.parse_module(text).deep_equals(cst.parse_module(text)), path


@pytest.mark.parametrize("text", ["x = (1,", "def f(:\n    pass\n", "f(a=1, 2)\n", "del f()\n"])
def test_invalid_syntax_still_raises(text: str) -> None:
    with pytest.raises(cst.ParserSyntaxError):
        cst_parse.parse_module(text)


def test_nodes_built_after_a_parse_are_validated_again() -> None:
    validate = CSTNode.__dict__["__post_init__"]
    cst_parse.parse_module("x = 1\n")
    with pytest.raises(cst.ParserSyntaxError):
        cst_parse.parse_module("x = (\n")
    assert CSTNode.__dict__["__post_init__"] is validate
    with pytest.raises(cst.CSTValidationError):  # a lambda's parameters cannot be annotated
        cst.Lambda(
            params=cst.Parameters(
                params=[cst.Param(cst.Name("a"), annotation=cst.Annotation(cst.Name("int")))]
            ),
            body=cst.Name("a"),
        )


def test_the_parser_skips_validation_only_in_a_single_threaded_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With another thread alive, that thread could be building nodes: the parse validates as usual."""
    seen: list[bool] = []
    real = cst.parse_module

    def spy(text: str) -> cst.Module:
        seen.append(CSTNode.__dict__["__post_init__"] is cst_parse._no_validation)
        return real(text)

    monkeypatch.setattr(cst_parse.cst, "parse_module", spy)
    with monkeypatch.context() as alone:
        # a thread an earlier test left behind in this process must not make the first parse validate
        alone.setattr(threading, "active_count", lambda: 1)
        cst_parse.parse_module("x = 1\n")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        cst_parse.parse_module("x = 1\n")
    finally:
        stop.set()
        other.join()
    assert seen == [True, False]
