"""Python source analysis: find where prompts are built and sent, and produce their layouts.

Stages, one module each: :mod:`.collect` (one libcst parse, one batched visit), :mod:`.resolve`
(local data flow), :mod:`.project` (other modules of the project), :mod:`.sources` and
:mod:`.evaluate` (what text an expression builds), :mod:`.constants` (module-level prompt tables),
:mod:`.callers` (parameters resolved through the project's call sites), :mod:`.fills` (templates
filled by ``replace``, fill sites with no visible sink), :mod:`.messages` (message lists, blocks,
tools), :mod:`.sinks` (where layouts are sent: plugins and catalog), :mod:`.subclass_sinks` (the
project's classes derived from a framework's agent class), :mod:`.sendpaths` (in-house helpers that
send a prompt), :mod:`.builder` (the layout) and :mod:`.fixes`.

The public entry point is :func:`analyze_python`.
"""

from __future__ import annotations

# First, on purpose: libcst is imported with the code its node classes compiled in an earlier run.
import prefixlint.analysis.libcst_import  # noqa: F401

# isort: split
import re

import libcst as cst

from prefixlint.analysis.catalog import catalog_for
from prefixlint.analysis.python.builder import build_layout, text_layout
from prefixlint.analysis.python.collect import ModuleInfo, parse_module, resolved
from prefixlint.analysis.python.evaluate import Env, Evaluator, _returns
from prefixlint.analysis.python.fills import fill_sites
from prefixlint.analysis.python.marker_fills import marker_fills
from prefixlint.analysis.python.project import ProjectContext
from prefixlint.analysis.python.registry import registry_fills
from prefixlint.analysis.python.resolve import local_ops
from prefixlint.analysis.python.sendpaths import inline_layouts
from prefixlint.analysis.python.sinks import (
    decorator_names,
    keyword_sink,
    match_sink,
    passes_system_prompt,
    sink_specs,
)
from prefixlint.analysis.python.sources import dotted_name, is_static, prompt_name_test
from prefixlint.analysis.python.subclass_sinks import subclass_sink
from prefixlint.analysis.result import AnalysisError, FileAnalysis
from prefixlint.model.layout import Layout, Segment, SourceLocation, Timing
from prefixlint.model.settings import Settings

__all__ = ["ProjectContext", "analyze_python"]


def analyze_python(path: str, text: str, settings: Settings, project: ProjectContext) -> FileAnalysis:
    """Layouts of every prompt built in ``text`` (the file at ``path``). Never raises."""
    result = FileAnalysis(path=path)
    try:
        mod = project.known(path, text) or parse_module(path, text)
    except cst.ParserSyntaxError as exc:
        loc = SourceLocation(path, max(1, exc.raw_line), max(0, exc.raw_column))
        result.errors.append(AnalysisError(loc, f"syntax error: {exc.message}"))
        return result
    except (cst.CSTValidationError, RecursionError, MemoryError, ValueError, TypeError) as exc:
        # The native parser accepts some input (e.g. an identifier libcst's nodes reject).
        result.errors.append(AnalysisError(SourceLocation(path, 1), f"cannot parse: {exc}"))
        return result
    project.remember(path, mod)
    ev = Evaluator(project, settings, catalog_for(settings))
    try:
        result.layouts = _layouts(ev, mod, settings)
    except RecursionError:
        result.errors.append(AnalysisError(SourceLocation(path, 1), "analysis too deep (recursion limit)"))
    except Exception as exc:
        result.errors.append(AnalysisError(SourceLocation(path, 1), f"internal analysis error: {exc!r}"))
    result.errors.extend(ev.errors)
    result.dependencies = {d for d in ev.dependencies if d != resolved(path)}
    return result


def _layouts(ev: Evaluator, mod: ModuleInfo, settings: Settings) -> list[Layout]:
    specs = sink_specs(settings)
    layouts: list[Layout] = []
    for site in mod.calls:
        spec = match_sink(dotted_name(site.node.func), mod, specs)
        timing = Timing.REQUEST if site.func is not None else Timing.PROCESS
        env = Env(mod=mod, func=site.func, cls=site.cls, timing=timing, pos=mod.pos(site.node))
        if spec is None:
            spec = subclass_sink(ev, site.node.func, env, specs)
        if spec is None:
            fn = ev._function_for(site.node.func, env)
            if fn is not None:
                sent = inline_layouts(ev, site.node, env, fn, specs, settings)
                if sent:
                    layouts.extend(sent)
                    continue
            if not passes_system_prompt([a.keyword.value for a in site.node.args if a.keyword]):
                continue
            spec = keyword_sink()
        layouts.extend(ev.each_template_choice(lambda: build_layout(ev, site, spec, env, settings)))  # noqa: B023
    layouts.extend(_decorated(ev, mod, settings))
    seen = _dynamic_locations(layouts)
    for layout in _named(ev, mod, settings):
        locs = _dynamic_locations([layout])
        if locs and not (locs & seen):
            layouts.append(layout)
            seen |= locs
    for name, segs, where in [*fill_sites(ev, mod), *registry_fills(ev, mod), *marker_fills(ev, mod)]:
        if name.endswith((".format()", ".format_map()")) and makes_a_template(segs):
            continue  # a template for a later stage, no request (see _has_dynamic)
        layout = text_layout(segs, f"{name} (filled here)", where, settings)
        locs = _dynamic_locations([layout])
        if locs and not (locs & seen):
            layouts.append(layout)
            seen |= locs
    return layouts


def _dynamic_locations(layouts: list[Layout]) -> set[tuple[str, int, int]]:
    out = set()
    for layout in layouts:
        for seg in layout.segments:
            if seg.breaks_cache and seg.location is not None:
                out.add((seg.location.path, seg.location.line, seg.location.col))
    return out


def _decorated(ev: Evaluator, mod: ModuleInfo, settings: Settings) -> list[Layout]:
    """Functions registered as system-prompt hooks (pydantic-ai ``@agent.system_prompt``...)."""
    decos = decorator_names()
    # Hooks of one agent are spliced in registration (source) order: one layout per agent.
    groups: dict[str, list[Segment]] = {}
    where: dict[str, SourceLocation | None] = {}
    for fdef, cls in mod.decorated:
        for deco in fdef.decorators:
            node = deco.decorator.func if isinstance(deco.decorator, cst.Call) else deco.decorator
            name = dotted_name(node)
            if not any(name == d or name.endswith("." + d) for d in decos):
                continue
            returns = _returns(fdef, mod)
            if not returns:
                continue
            ret = returns[-1]
            env = Env(mod=mod, func=fdef, cls=cls, pos=mod.pos(ret))
            segs = ev.text(ret.value, env)  # type: ignore[arg-type]
            agent = name.rsplit(".", 1)[0]
            if agent not in groups:
                groups[agent] = _agent_static_prompt(ev, mod, agent)
                where[agent] = mod.loc(fdef)
            groups[agent].extend(segs)
    return [
        text_layout(segs, f"{agent} system-prompt hooks", where[agent], settings)
        for agent, segs in groups.items()
    ]


def _agent_static_prompt(ev: Evaluator, mod: ModuleInfo, agent: str) -> list[Segment]:
    """The ``system_prompt=`` given to ``agent = Agent(...)``, which precedes its hooks."""
    value = mod.assigns.get(agent)
    if not isinstance(value, cst.Call):
        return []
    for arg in value.args:
        if arg.keyword is not None and arg.keyword.value in ("system_prompt", "instructions"):
            return ev.text(arg.value, ev.module_env(mod).at(mod.pos(value)))
    return []


def _named(ev: Evaluator, mod: ModuleInfo, settings: Settings) -> list[Layout]:
    """Layouts for prompt-named constants, variables and helpers that reach no sink found here."""
    cat = ev.catalog
    out: list[Layout] = []
    here = resolved(mod.path)

    is_prompt = prompt_name_test(cat)

    def used_elsewhere(name: str) -> bool:
        others = ev.project.references(name, is_prompt) - {here}
        ev.dependencies.update(others)
        return bool(others)

    for name, value in mod.assigns.items():
        if not is_prompt(name) or used_elsewhere(name):
            continue
        env = ev.module_env(mod).at(mod.pos(value))
        segs = ev.constant(mod, name)
        if is_static(segs) and mod.name_uses.get(name, 0) <= 1:
            tmpl = ev.template_source(value, env)
            if tmpl is not None and "{" in tmpl.text:
                segs = ev.render(tmpl, "format", {}, env, value)
        if _has_dynamic(segs):
            out.append(text_layout(segs, f"{name} (name)", mod.loc(mod.assign_targets[name]), settings))
    functions = list(mod.functions.values())
    for cls in mod.classes.values():
        functions.extend(cls.methods.values())
    for fdef in functions:
        cls = mod.func_class.get(fdef)
        end_pos = mod.end_pos(fdef)
        for name, ops in local_ops(mod, fdef).items():
            if not is_prompt(name) or not any(op.kind in ("assign", "aug") for op in ops):
                continue
            env = Env(mod=mod, func=fdef, cls=cls, pos=end_pos)
            tail = [op for op in ops if op.kind in ("assign", "aug")][-_tail(ops) :]
            for segs in ev.each_template_choice(lambda: ev._replay_text(tail, env)):  # noqa: B023
                if _has_dynamic(segs):
                    out.append(text_layout(segs, f"{name} (name)", mod.loc(ops[0].node), settings))
        if (
            is_prompt(fdef.name.value)
            and fdef.name.value != "__init__"
            and cls is None
            and not used_elsewhere(fdef.name.value)
        ):
            returns = _returns(fdef, mod)
            if returns:
                env = Env(mod=mod, func=fdef, cls=cls, pos=mod.pos(returns[-1]))
                segs = ev.text(returns[-1].value, env)  # type: ignore[arg-type]
                if _has_dynamic(segs):
                    out.append(text_layout(segs, f"{fdef.name.value}() (name)", mod.loc(fdef), settings))
    return out


def _tail(ops: list) -> int:
    """How many trailing assign/aug ops make up the final value (from the last plain assignment)."""
    seq = [op for op in ops if op.kind in ("assign", "aug")]
    n = 0
    for op in reversed(seq):
        n += 1
        if op.kind == "assign" and not op.conditional:
            break
    return n


# A prompt-named value reaching no known sink is reported only ahead of a long static body.
MIN_STATIC_CHARS_AFTER = 200


# A placeholder left in the text after it was filled: ``{{input_text}}`` of a ``str.format``
# template, or of an f-string, comes out as ``{input_text}``. (Not for texts filled marker by
# marker with ``replace``: there a marker left is one that another helper replaces.)
_LEFT_PLACEHOLDER = re.compile(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*\}(?!\})")


def makes_a_template(segs: list[Segment]) -> bool:
    """True when the filled text still holds a placeholder (``{input_text}``)."""
    return _LEFT_PLACEHOLDER.search("".join(s.text for s in segs if s.static)) is not None


def _has_dynamic(segs: list[Segment]) -> bool:
    """True when a cache-breaking piece sits ahead of a long static body, in a text that is sent as
    it is. A text that still holds placeholders once filled is a template made for a later stage
    (prompt tuning writes one to a file; indexing fills it per chunk): what was filled in is fixed
    for every request the later stage sends, so it is not a prompt with a value ahead of its body
    as long as no model call of it is in view (a layout with a sink is built elsewhere)."""
    if makes_a_template(segs):
        return False
    for i, seg in enumerate(segs):
        if seg.breaks_cache and seg.kind is not None:
            after = sum(len(s.text) for s in segs[i + 1 :] if s.static)
            if after >= MIN_STATIC_CHARS_AFTER:
                return True
    return False
