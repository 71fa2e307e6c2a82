"""Typer commands whose option values are coerced without pydantic when they are plain."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from typer.core import TyperCommand

# --- option values without pydantic ---------------------------------------------------------------
#
# typer 0.29 coerces every parameter value through a pydantic ``TypeAdapter`` built on each
# invocation (``typer._coercion.build_runtime_param``), even an unset option and its own ``--help``;
# only a bool flag that already holds a bool, and file types, skip it. Importing pydantic and building
# about 15 adapters costs some 0.2 s, more than a warm ``check`` spends linting, and no annotation,
# ``parser=`` or ``min=`` avoids it. So these commands use typer's ``cls=`` hook to give each
# parameter a coercer for the plain shapes they declare (str, int, Path, list[str], bool). A value it
# is not sure of goes to typer's own coercion: values are accepted or rejected, and errors worded,
# exactly as typer does (tests/test_cli_startup.py compares the two).

_UNSURE = object()

try:  # typer internals (the pinned 0.29); without them typer's own coercion is used unchanged
    from typer._click.exceptions import BadParameter as _BadParameter
    from typer._coercion import RuntimeParam as _RuntimeParam
    from typer._coercion import build_runtime_param as _build_runtime_param
    from typer._param_types import coerce_cli_path as _coerce_cli_path
except ImportError:  # pragma: no cover
    _RuntimeParam = None


def _lean_value(annotation: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
    """``value`` as typer would coerce it for ``annotation``, or ``_UNSURE``."""
    if info.parser is not None:
        return _UNSURE
    if annotation is str or annotation is bool:
        return value if type(value) is annotation else _UNSURE
    if annotation is int:
        if type(value) is str and value.isascii() and value.isdigit() and len(value) <= 18:
            number = int(value)
        elif type(value) is int:
            number = value
        else:
            return _UNSURE
        if info.clamp or (info.min is not None and number < info.min):
            return _UNSURE
        return _UNSURE if info.max is not None and number > info.max else number
    if annotation is Path and info.path_type is None and type(value) is str:
        try:  # typer's own checks (exists, readable, ...) on the path pydantic would have built
            return _coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
        except (_BadParameter, ValueError):  # ValueError: a NUL byte, which pydantic reports
            return _UNSURE  # let typer word the error from the value as given
    if (
        get_origin(annotation) is list
        and get_args(annotation) == (str,)
        and type(value) in (list, tuple)
        and all(type(v) is str for v in value)
    ):
        return list(value)
    return _UNSURE


if _RuntimeParam is not None:

    @dataclass(frozen=True)
    class _LeanRuntimeParam(_RuntimeParam):  # type: ignore[misc,valid-type]
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            out = _lean_value(self.annotation, self.parameter_info, value, param, ctx)
            if out is not _UNSURE:
                return out
            full = param._runtime_param = _build_runtime_param(self.descriptor)
            return full._coerce_value(value, param=param, ctx=ctx)


def install_lean_coercion(params: list[Any]) -> None:
    if _RuntimeParam is None:  # pragma: no cover
        return
    for p in params:
        descriptor = getattr(p, "type_descriptor", None)
        if descriptor is None or getattr(p, "_runtime_param", 0) is not None:
            continue
        if descriptor.file_annotation is None:
            p._runtime_param = _LeanRuntimeParam(
                parameter_info=descriptor.parameter_info,
                annotation=descriptor.annotation,
                descriptor=descriptor,
            )


class LeanCommand(TyperCommand):
    """A typer command whose parameters are coerced without pydantic when the value is plain."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        install_lean_coercion(params)
        return params
