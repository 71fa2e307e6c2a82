"""Template files bound through the project's render calls: ``convo.template("review", file=path)``.

A template file linted on its own classifies its placeholders by name. Many applications render
their prompt files through an in-house helper that takes the template's name and the values as
keyword arguments. Where a call of the project names the file (a string argument equal to its stem,
its name, or a trailing part of its path, and naming no other file of the project) and passes
keyword arguments, each keyword is evaluated at that call like any other value, and binds the
template variable of that name: what the caller passes beats a guess from the name, except where
the caller's value is of unknown nature and the name says more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import libcst as cst

from prefixlint.analysis.catalog import catalog_for
from prefixlint.analysis.python.collect import CallSite, ModuleInfo, evaluated
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.evaluate import Evaluator
from prefixlint.analysis.python.project import ProjectContext
from prefixlint.analysis.python.sources import is_static, join_text
from prefixlint.analysis.templates.bindings import Binding, combine, name_binding
from prefixlint.analysis.templates.files import files_with_stem
from prefixlint.model.layout import DynamicKind, Segment, SourceLocation, Timing

# A name mentioned in more Python files than this is too common to follow (``system``, ``main``).
MAX_CALLER_FILES = 40
# Render calls read per template file.
MAX_RENDER_CALLS = 24
_NAME = re.compile(r"[\w.\-/]{1,200}")


def caller_bindings(project: ProjectContext, path: str) -> tuple[dict[str, Binding], set[str]]:
    """What the project's render calls of the template at ``path`` bind, and the files read for it.

    Keywords bound by several calls take the value that matters most (:func:`combine`).
    """
    target = Path(path).resolve()
    stem = target.name.split(".", 1)[0]
    if not stem or not stem.isascii():
        return {}, set()
    files = project.references(stem, lambda _n: True)
    if not files or len(files) > MAX_CALLER_FILES:
        return {}, set()
    ev = Evaluator(project, project.settings, catalog_for(project.settings))
    found: dict[str, list[Binding]] = {}
    deps: set[str] = set()
    calls = 0
    quoted = re.compile(rf"""["'/]{re.escape(stem)}(?:\.[\w.]+)?["']""")
    for file in sorted(files):
        if not _mentions(file, quoted):
            continue  # no string names the file: not parsed for this
        mod = project.load(file)
        if mod is None:
            continue
        for site in _render_calls(mod, target, project.root):
            calls += 1
            if calls > MAX_RENDER_CALLS:
                break
            deps.add(mod.path)
            for key, value in _keyword_values(ev, mod, site).items():
                found.setdefault(key, []).append(value)
    deps.update(ev.dependencies)
    out = {}
    for key, values in found.items():
        value = combine(values)
        if _unknown(value) and name_binding(key, ev.catalog).kind is not DynamicKind.UNKNOWN:
            continue  # the caller tells nothing: the name's kind stays (``question``: user input)
        out[key] = value
    return out, deps


def _unknown(value: Binding) -> bool:
    return not value.static and value.kind in (None, DynamicKind.UNKNOWN) and value.timing is Timing.UNKNOWN


def _mentions(file: str, quoted: re.Pattern[str]) -> bool:
    try:
        return quoted.search(Path(file).read_text("utf-8", errors="replace")) is not None
    except OSError:
        return False


def _render_calls(mod: ModuleInfo, target: Path, root: Path) -> Iterable[CallSite]:
    """Calls of ``mod`` with a string argument that names ``target`` and with keyword arguments."""
    for site in mod.calls:
        args = site.node.args
        if not any(a.keyword is not None for a in args):
            continue
        for arg in args:
            if arg.keyword is None and not arg.star and isinstance(arg.value, cst.SimpleString):
                name = evaluated(arg.value)
                if isinstance(name, str) and _names(name, target, root):
                    yield site
                    break


def _names(name: str, target: Path, root: Path) -> bool:
    """Whether ``name`` refers to ``target`` and to no other file of the project."""
    name = name.strip().removeprefix("./")
    stem = target.name.split(".", 1)[0]
    if not _NAME.fullmatch(name) or ".." in name or PurePosixPath(name).name.split(".", 1)[0] != stem:
        return False
    found = [p for p in _same_stem(str(root), stem) if _ends_with(p, name)]
    return found == [str(target)]


def _ends_with(path: str, name: str) -> bool:
    """``core/prompts/review.prompt`` ends with ``review``, ``review.prompt`` or ``prompts/review``."""
    pure = PurePosixPath(Path(path).as_posix())
    parts = PurePosixPath(name).parts
    if not parts:
        return False
    last = parts[-1]
    if last not in (pure.name, pure.name.split(".", 1)[0]):
        return False
    head = parts[:-1]
    return not head or pure.parent.parts[-len(head) :] == head


def _same_stem(root: str, stem: str) -> tuple[str, ...]:
    """The project's other-than-Python files named ``stem`` (any suffix), resolved."""
    found = files_with_stem(Path(root), stem)
    return tuple(str(Path(p).resolve()) for p in found if not p.endswith((".py", ".pyi", ".pyc")))


def _keyword_values(ev: Evaluator, mod: ModuleInfo, site: CallSite) -> dict[str, Binding]:
    """The keyword arguments of a render call, evaluated where the call stands."""
    timing = Timing.REQUEST if site.func is not None else Timing.PROCESS
    env = Env(mod=mod, func=site.func, cls=site.cls, timing=timing, pos=mod.pos(site.node))
    loc = mod.loc(site.node)
    binds = ev._call_binds(site.node, env)
    return {key: _binding(segs, key, loc) for key, segs in binds.items() if not key.isdigit()}


def _binding(segs: list[Segment], key: str, loc: SourceLocation | None) -> Binding:
    """A caller's value as a template binding (the render call is in its chain)."""
    if is_static(segs):
        return Binding(static=True, timing=Timing.STATIC, text=join_text(segs), location=loc)
    d = next(s for s in segs if not s.static)
    chain = (*d.chain, loc) if loc is not None and loc not in d.chain else d.chain
    return Binding(
        static=False,
        kind=d.kind,
        timing=d.timing,
        label=d.label or key,
        location=d.location,
        chain=chain,
        confidence=d.confidence,
        granularity=d.granularity,
        cardinality=d.cardinality,
    )
