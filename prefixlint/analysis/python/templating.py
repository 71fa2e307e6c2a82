"""Templates inside Python: where template text comes from, and rendering it with bindings.

:class:`TemplateMixin` is part of the evaluator. It finds the raw text of a template (a string
constant, possibly in another module; a prompt file read with ``Path(...).read_text()``; a Jinja
file found through the ``FileSystemLoader`` directories), and renders it through
:mod:`prefixlint.analysis.templates` with the values the caller binds.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from prefixlint.analysis.python import fixes
from prefixlint.analysis.python.collect import ModuleInfo, evaluated
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.resolve import find_param, local_ops, ops_before
from prefixlint.analysis.python.sources import dotted_name, is_static, join_text, static, with_chain
from prefixlint.analysis.result import AnalysisError
from prefixlint.model.edits import Fix
from prefixlint.model.layout import Section, Segment, SourceLocation, Timing, evolve


@dataclass
class TemplateSrc:
    """Template text and where it starts (for placeholder locations)."""

    text: str
    path: str
    line_offset: int = 0
    col_offset: int = 0
    chain: tuple[SourceLocation, ...] = ()
    # the string constant the text was read from, and its module: a fix can move a line of it
    literal: cst.SimpleString | None = None
    module: ModuleInfo | None = None


class TemplateMixin:
    """Template lookup and rendering for :class:`~prefixlint.analysis.python.evaluate.Evaluator`."""

    def template_source(self, node: cst.CSTNode, env: Env, depth: int = 0) -> TemplateSrc | None:
        """The raw template text ``node`` holds, and where it starts, or None when unknown."""
        if depth > 8:
            return None
        mod = env.mod
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            val = evaluated(node)
            if not isinstance(val, str):
                return None
            at = mod.start(node)
            line, col = (at[0] - 1, at[1]) if at else (0, 0)
            if isinstance(node, cst.SimpleString):
                col += len(node.prefix) + len(node.quote)
                body = node.value[len(node.prefix) + len(node.quote) :]
                if body.startswith("\\\n"):
                    line, col = line + 1, 0
            if isinstance(node, cst.SimpleString):
                return TemplateSrc(val, mod.path, line, col, literal=node, module=mod)
            return TemplateSrc(val, mod.path, line, col)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            # ``"""... {date} ...""" + RULES``: a template followed by plain static text
            head = self.template_source(node.left, env, depth + 1)
            tail = self.text(node.right, env)  # type: ignore[attr-defined]
            if head is None or not is_static(tail):
                return None
            rest = join_text(tail)
            if any(mark in rest for mark in "{}$%"):
                return None  # its placeholders would be placed as if they continued the head
            return evolve(head, text=head.text + rest, literal=None)  # (a moved line would stay ahead of it)
        if isinstance(node, cst.Name) and node.value in env.bindings and is_static(env.bindings[node.value]):
            segs = env.bindings[node.value]
            first = segs[0].location if segs else None
            line, col = (first.line - 1, first.col) if first is not None else (0, 0)
            return TemplateSrc(join_text(segs), first.path if first else mod.path, line, col)
        if isinstance(node, cst.Name):
            loc = mod.loc(node)
            if env.func is not None:
                ops = local_ops(mod, env.func).get(node.value)
                if ops:
                    before = ops_before(ops, env.pos)
                    if len(before) == 1 and before[0].kind == "assign":
                        got = self.template_source(before[0].value, env.at(before[0].pos), depth + 1)
                        return _chained(got, loc)
                    return None
                if find_param(env.func, node.value) is not None:
                    return None
            if node.value in mod.assigns:
                value = mod.assigns[node.value]
                got = self.template_source(value, self.module_env(mod).at(mod.pos(value)), depth + 1)
                return _chained(got, loc)
            if node.value in mod.imports:
                imp = self._imported(mod, node.value)
                if imp is not None and imp[1] is not None and imp[1] in imp[0].assigns:
                    tmod = imp[0]
                    value = tmod.assigns[imp[1]]
                    got = self.template_source(value, self.module_env(tmod).at(tmod.pos(value)), depth + 1)
                    return _chained(got, loc)
            return None
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            base, attr = node.value.value, node.attr.value
            if base == "self" and env.cls is not None and attr in env.cls.init_attrs:
                value = env.cls.init_attrs[attr]
                init = env.cls.methods.get("__init__")
                sub_env = env.deeper(func=init, pos=mod.pos(value) + 1, bindings=dict(env.self_binds))
                return self.template_source(value, sub_env, depth + 1)
            if base in mod.imports:
                imp = self._imported(mod, base)
                if imp is not None and imp[1] is None and attr in imp[0].assigns:
                    tmod = imp[0]
                    value = tmod.assigns[attr]
                    return self.template_source(value, self.module_env(tmod).at(tmod.pos(value)), depth + 1)
            return None
        if isinstance(node, cst.Call):
            f = node.func
            name = dotted_name(f)
            if isinstance(f, cst.Attribute) and f.attr.value in ("read_text", "read"):
                path = self._file_path(f.value, env)
                if path is not None and path.is_file():
                    try:
                        text = path.read_text("utf-8")
                    except (OSError, UnicodeDecodeError):
                        return None
                    self.dependencies.add(str(path))
                    return TemplateSrc(text, str(path), 0, 0, (mod.loc(node),) if mod.loc(node) else ())
            if name.rsplit(".", 1)[-1] in ("dedent", "cleandoc", "strip") and (
                node.args or isinstance(f, cst.Attribute)
            ):
                inner = node.args[0].value if node.args else f.value  # type: ignore[union-attr]
                got = self.template_source(inner, env, depth + 1)
                if got is not None:
                    got.text = textwrap.dedent(got.text) if "dedent" in name else got.text.strip()
                return got
            if name.rsplit(".", 1)[-1] in ("Template",) and node.args:
                return self.template_source(node.args[0].value, env, depth + 1)
        return None

    def _file_path(self, node: cst.BaseExpression, env: Env, depth: int = 0) -> Path | None:
        """Evaluate a path expression: ``Path(__file__).parent / "prompts" / "x.txt"``, ``open("x")``."""
        if depth > 8:
            return None
        mod = env.mod
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            val = evaluated(node)
            if not isinstance(val, str):
                return None
            p = Path(val)
            if p.is_absolute():
                return p
            for base in (mod.directory, self.project.root):
                if (base / p).exists():
                    return base / p
            return mod.directory / p
        if isinstance(node, cst.Name):
            if node.value == "__file__":
                return Path(mod.path).resolve()
            value = None
            if env.func is not None:
                ops = local_ops(mod, env.func).get(node.value)
                if ops:
                    before = ops_before(ops, env.pos)
                    value = before[-1].value if before else None
            if value is None:
                value = mod.assigns.get(node.value)
            return self._file_path(value, env, depth + 1) if value is not None else None
        if isinstance(node, cst.Attribute) and node.attr.value == "parent":
            inner = self._file_path(node.value, env, depth + 1)
            return inner.parent if inner is not None else None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            left = self._file_path(node.left, env, depth + 1)
            right = node.right
            if left is not None and isinstance(right, cst.SimpleString) and isinstance(evaluated(right), str):
                return left / evaluated(right)
            return None
        if isinstance(node, cst.Call):
            name = dotted_name(node.func)
            last = name.rsplit(".", 1)[-1]
            if last in ("Path", "PurePath", "open", "resolve", "absolute") and node.args:
                return self._file_path(node.args[0].value, env, depth + 1)
            if last in ("resolve", "absolute") and isinstance(node.func, cst.Attribute):
                return self._file_path(node.func.value, env, depth + 1)
            if last in ("joinpath", "join") and isinstance(node.func, cst.Attribute):
                if name.endswith("path.join"):
                    parts = [self._file_path(a.value, env, depth + 1) for a in node.args[:1]]
                    base = parts[0]
                    rest = node.args[1:]
                else:
                    base = self._file_path(node.func.value, env, depth + 1)
                    rest = node.args
                for a in rest:
                    if base is None or not isinstance(a.value, cst.SimpleString):
                        return None
                    v = evaluated(a.value)
                    base = base / v if isinstance(v, str) else None
                return base
            if name.endswith("path.dirname") and node.args:
                inner = self._file_path(node.args[0].value, env, depth + 1)
                return inner.parent if inner is not None else None
        return None

    def _jinja_render(self, node: cst.Call, recv: cst.BaseExpression, env: Env) -> list[Segment] | None:
        binds = self._call_binds(node, env)
        if isinstance(recv, cst.Call):
            rname = dotted_name(recv.func).rsplit(".", 1)[-1]
            if rname == "get_template" and recv.args:
                arg = recv.args[0].value
                tname = evaluated(arg) if isinstance(arg, cst.SimpleString) else None
                if not isinstance(tname, str):
                    return None
                path = self._find_jinja(tname, env)
                if path is None:
                    return None
                try:
                    text = path.read_text("utf-8")
                except (OSError, UnicodeDecodeError):
                    return None
                self.dependencies.add(str(path))
                return self.render(
                    TemplateSrc(text, str(path)),
                    "jinja",
                    binds,
                    env,
                    node,
                    search_paths=(path.parent,),
                    renders_now=True,
                )
            if rname in ("Template", "from_string") and recv.args:
                tmpl = self.template_source(recv.args[0].value, env)
                if tmpl is not None:
                    return self.render(tmpl, "jinja", binds, env, node, renders_now=True)
        tmpl = self.template_source(recv, env)
        if tmpl is not None:
            return self.render(tmpl, "jinja", binds, env, node, renders_now=True)
        return None

    def _find_jinja(self, name: str, env: Env) -> Path | None:
        mod = env.mod
        dirs: list[Path] = []
        for call in mod.calls:
            cname = dotted_name(call.node.func).rsplit(".", 1)[-1]
            if cname in ("FileSystemLoader", "PackageLoader") and call.node.args:
                idx = 0 if cname == "FileSystemLoader" else min(1, len(call.node.args) - 1)
                arg = call.node.args[idx].value
                if cname == "PackageLoader" and len(call.node.args) < 2:
                    dirs.append(mod.directory / "templates")
                    continue
                elems = arg.elements if isinstance(arg, (cst.List, cst.Tuple)) else [arg]
                for el in elems:
                    value = el.value if isinstance(el, cst.BaseElement) else el
                    p = self._file_path(value, env)  # type: ignore[arg-type]
                    if p is not None:
                        dirs.append(p)
                        rel = getattr(value, "evaluated_value", None)
                        if isinstance(rel, str) and not Path(rel).is_absolute():
                            dirs.append(self.project.root / rel)
        dirs.extend([mod.directory / "templates", mod.directory, self.project.root / "templates"])
        try:
            from prefixlint.analysis.templates import find_template
        except ImportError:
            find_template = None  # type: ignore[assignment]
        if find_template is not None:
            try:
                found = find_template(name, dirs, self.project.root)
            except Exception:
                found = None
            if found is not None:
                return Path(found)
        for d in dirs:
            if (d / name).is_file():
                return d / name
        return None

    def render(
        self,
        tmpl: TemplateSrc,
        style: str,
        binds: dict[str, list[Segment]],
        env: Env,
        node: cst.CSTNode,
        search_paths: tuple[Path, ...] = (),
        renders_now: bool = False,
    ) -> list[Segment]:
        """Segments of a template filled with ``binds`` (via :mod:`prefixlint.analysis.templates`).

        ``renders_now`` says that ``node`` renders the template where it stands (a ``.render()``
        call), rather than reading a template whose placeholders are filled later. A render that
        runs at import time (``env.timing`` is PROCESS) fixes every value of its output once per
        process, including the values the template computes itself.
        """
        loc = env.mod.loc(node)
        try:
            from prefixlint.analysis.templates import Binding, render_segments
        except ImportError:
            # Template analysis unavailable: keep the text, and the bound dynamic values after it.
            out = [static(tmpl.text, loc)]
            for segs in binds.values():
                out.extend(s for s in segs if not s.static)
            return out
        bindings = {}
        for key, segs in binds.items():
            if is_static(segs):
                bindings[key] = Binding(static=True, text=join_text(segs), location=loc)
            else:
                d = next((s for s in segs if not s.static), segs[0])
                bindings[key] = Binding(
                    static=False,
                    kind=d.kind,
                    timing=d.timing,
                    label=d.label or key,
                    location=d.location,
                    chain=d.chain,
                    confidence=d.confidence,
                )
        try:
            result = render_segments(
                tmpl.text,
                style=style,
                path=tmpl.path,
                section=Section.SYSTEM,
                role="system",
                line_offset=tmpl.line_offset,
                col_offset=tmpl.col_offset,
                bindings=bindings,
                search_paths=search_paths,
                settings=self.settings,
                root=self.project.root,
            )
        except Exception as exc:
            self.errors.append(AnalysisError(loc or SourceLocation(env.mod.path, 1), f"template: {exc}"))
            return [static(tmpl.text, loc)]
        self.dependencies.update(str(d) for d in result.dependencies)
        self.errors.extend(result.errors)
        out = []
        for seg in result.segments:
            if seg.static:
                out.append(seg)
            else:
                if renders_now and env.timing is Timing.PROCESS and seg.timing is Timing.REQUEST:
                    seg = evolve(seg, timing=Timing.PROCESS)
                out.append(evolve(seg, chain=(*tmpl.chain, *seg.chain), fixes=_move_fix(tmpl, seg)))
        return with_chain(out, loc)


def _move_fix(tmpl: TemplateSrc, seg: Segment) -> tuple[Fix, ...]:
    """An unsafe fix moving the line of a per-request placeholder to the end of its string constant."""
    mod, loc = tmpl.module, seg.location
    if seg.fixes or tmpl.literal is None or mod is None or loc is None or not seg.breaks_cache:
        return seg.fixes
    if loc.path != mod.path or loc.end_line is None or loc.end_col is None:
        return seg.fixes
    start, end = mod.offset(loc.line, loc.col), mod.offset(loc.end_line, loc.end_col)
    if not mod.text[start:end].startswith(("{", "$", "%")):
        return seg.fixes  # the location does not point at the placeholder in this source
    fix = fixes.move_template_line_to_end_fix(mod, tmpl.literal, start, end)
    return (fix,) if fix is not None else seg.fixes


def _chained(got: TemplateSrc | None, loc: SourceLocation | None) -> TemplateSrc | None:
    if got is not None and loc is not None:
        got.chain = (*got.chain, loc)
    return got
