"""The module walk's child fields: read from libcst's field types, resolved as ``get_type_hints`` would.

``collect._child_fields`` takes a node type's field types as they are and calls ``get_type_hints``
only for a type that names a class by a string (``Sequence["CompIf"]``). Both must give the same
fields, in the same order, for every node class of the installed libcst.
"""

from __future__ import annotations

import dataclasses
import typing

import libcst as cst
import pytest

from prefixlint.analysis.python import collect


def _node_classes() -> list[type]:
    out: set[type] = set()
    todo = [cst.CSTNode]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in out:
                out.add(sub)
                todo.append(sub)
    return sorted((c for c in out if dataclasses.is_dataclass(c)), key=lambda c: c.__qualname__)


def _through_type_hints(kind: type) -> tuple[str, ...]:
    """The fields as the walk read them before: every annotation resolved by ``get_type_hints``."""
    hints = typing.get_type_hints(kind)
    names = [
        f.name
        for f in dataclasses.fields(kind)
        if any(
            issubclass(c, cst.CSTNode) and not issubclass(c, collect._SKIPPED)
            for c in collect._classes(hints[f.name])
        )
    ]
    first = [n for n in collect._SOURCE_ORDER.get(kind, ()) if n in names]
    return tuple(reversed(first + [n for n in names if n not in first]))


@pytest.mark.parametrize("kind", _node_classes(), ids=lambda c: c.__qualname__)
def test_child_fields_match_the_resolved_type_hints(kind: type) -> None:
    assert collect._child_fields(kind) == _through_type_hints(kind)


def test_a_forward_reference_is_found_inside_a_generic() -> None:
    assert collect._forward(typing.Sequence["CompIf"])  # type: ignore[name-defined]  # noqa: F821
    assert collect._forward(dict[str, typing.ForwardRef("CompFor")])
    assert not collect._forward(typing.Sequence[cst.Name])
    assert not collect._forward(cst.Name)


def test_nodes_with_forward_references_keep_their_child_fields() -> None:
    # ``CompFor.ifs`` and ``inner_for_in`` are declared with forward references: without resolving
    # them, a comprehension's conditions and inner loops would not be walked
    assert {"ifs", "inner_for_in"} <= set(collect._child_fields(cst.CompFor))
    assert "cases" in collect._child_fields(cst.Match)
