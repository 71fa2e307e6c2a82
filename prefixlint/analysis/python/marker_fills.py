"""Helpers that fill prompt text they receive as a parameter: ``def fill(text, goals):
text = text.replace("{goals}", ...)``, with the text coming from storage the analyzer cannot see.

The markers such a helper replaces name the prompt files it can fill
(:mod:`prefixlint.analysis.templates.marked`). For each such file, the helper's return value is
evaluated with the parameter bound to the file's text, so the values it puts in land on the
markers' lines in the file; other parameters are resolved through the project's callers. The result
is reported like a fill site: when a per-request value sits ahead of a long static body.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.analysis.python.collect import ModuleInfo, evaluated
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.evaluate import _returns
from prefixlint.analysis.python.registry import breaks_ahead_of_static
from prefixlint.analysis.python.resolve import find_param
from prefixlint.analysis.python.sources import static
from prefixlint.model.layout import Segment, SourceLocation, Timing

if TYPE_CHECKING:
    from prefixlint.analysis.python.evaluate import Evaluator

# Files one helper is evaluated against (each is one more evaluation of its body).
MAX_FILES_PER_HELPER = 8


def marker_fills(ev: Evaluator, mod: ModuleInfo) -> list[tuple[str, list[Segment], SourceLocation | None]]:
    """``(name, pieces, where)`` for each prompt file a helper of ``mod`` fills through a text parameter."""
    try:
        from prefixlint.analysis.templates.marked import files_with_markers, is_marker
    except ImportError:
        return []
    markers: dict[tuple[int, str], set[str]] = {}
    where: dict[tuple[int, str], cst.FunctionDef] = {}
    for site in mod.calls:
        func = site.node.func
        if (
            site.func is None
            or not isinstance(func, cst.Attribute)
            or func.attr.value != "replace"
            or not isinstance(func.value, cst.Name)
            or len(site.node.args) < 2
            or not isinstance(site.node.args[0].value, cst.SimpleString)
        ):
            continue
        param = func.value.value
        marker = evaluated(site.node.args[0].value)
        if not isinstance(marker, str) or not is_marker(marker) or find_param(site.func, param) is None:
            continue
        key = (id(site.func), param)
        markers.setdefault(key, set()).add(marker)
        where[key] = site.func
    out = []
    root = str(Path(ev.project.root).resolve())
    for key, found in markers.items():
        fdef, param = where[key], key[1]
        files = files_with_markers(root, found)[:MAX_FILES_PER_HELPER]
        returns = _returns(fdef, mod)
        if not files or not returns:
            continue
        ret = returns[-1]
        for path, text in files:
            env = Env(
                mod=mod,
                func=fdef,
                cls=mod.func_class.get(fdef),
                bindings={param: [static(text, SourceLocation(path, 1, 0))]},
                timing=Timing.REQUEST,
                pos=mod.pos(ret),
            )
            segs = ev.text(ret.value, env)  # type: ignore[arg-type]
            if breaks_ahead_of_static(segs):
                ev.dependencies.add(path)
                out.append((f"{fdef.name.value}() fills {Path(path).name}", segs, mod.loc(fdef)))
    return out
