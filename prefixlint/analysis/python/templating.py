"""Templates inside Python: where template text comes from, and rendering it with bindings.

:class:`TemplateMixin` is part of the evaluator. It finds the raw text of a template (a string
constant, possibly in another module; a prompt file read with ``open(p).read()``,
``Path(...).read_text()`` or ``importlib.resources``, also through a helper that returns it; a key
of a loaded YAML or TOML file; a Jinja file found through the ``FileSystemLoader`` directories, by a
name known statically or built at run time), and renders it through
:mod:`prefixlint.analysis.templates` with the values the caller binds (``.format``,
``.format_map``, ``.render``, a chain of ``.replace``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

import libcst as cst

from prefixlint.analysis.python import fixes
from prefixlint.analysis.python.collect import ModuleInfo, evaluated
from prefixlint.analysis.python.constants import table_item
from prefixlint.analysis.python.env import Env
from prefixlint.analysis.python.objects import class_of, field_default
from prefixlint.analysis.python.pieces import Piece, relocate, replaced_pieces, string_pieces
from prefixlint.analysis.python.resolve import find_param, local_ops, ops_before
from prefixlint.analysis.python.sources import dotted_name, is_static, join_text, static, with_chain
from prefixlint.analysis.python.taint import dominant
from prefixlint.analysis.result import AnalysisError
from prefixlint.model.edits import Fix
from prefixlint.model.layout import Section, Segment, SourceLocation, Timing, evolve

_T = TypeVar("_T")
MAX_TEMPLATE_CHOICES = 16


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
    indent: int = 0  # columns the file's later lines lose in the text (a YAML block)
    # a template joined from several literals: where each piece sits (see :mod:`.pieces`)
    pieces: tuple[Piece, ...] = ()


class TemplateMixin:
    """Template lookup and rendering for :class:`~prefixlint.analysis.python.evaluate.Evaluator`."""

    # Template names built at run time: while one prompt is built, the other files each such name
    # could load (``_template_choices``); and the file a rebuild is told to take for a name.
    _template_choices: list[tuple[int, list[Path]]] | None = None
    _forced_templates: dict[int, Path] | None = None

    def each_template_choice(self, build: Callable[[], _T | None]) -> list[_T]:
        """``build()``, then once more for each other file a run-time template name can load.

        ``env.get_template(f"{name}.md")`` stands for every matching file; the first build takes the
        costliest one, and each rebuild takes another (at most ``MAX_TEMPLATE_CHOICES`` in all), so
        each file gets its own prompt and its own findings.
        """
        self._template_choices = []
        try:
            first = build()
        finally:
            pending, self._template_choices = self._template_choices, None
        out = [first] if first is not None else []
        budget = MAX_TEMPLATE_CHOICES - 1
        for key, others in pending:
            for path in others:
                if budget <= 0:
                    return out
                budget -= 1
                self._forced_templates = {key: path}
                try:
                    got = build()
                finally:
                    self._forced_templates = None
                if got is not None:
                    out.append(got)
        return out

    def template_source(self, node: cst.CSTNode, env: Env, depth: int = 0) -> TemplateSrc | None:
        """The raw template text ``node`` holds, and where it starts, or None when unknown."""
        if depth > 8:
            return None
        mod = env.mod
        if isinstance(node, (cst.ConcatenatedString, cst.FormattedString)):
            # literals on several lines, or f-strings of constants: each piece keeps its place
            got = string_pieces(node, mod, lambda expr: self._constant_text(expr, env))
            if got is None:
                return None
            text, pieces = got
            if not pieces:
                return None
            return TemplateSrc(text, mod.path, pieces[0][1], pieces[0][2], pieces=pieces)
        if isinstance(node, cst.SimpleString):
            val = evaluated(node)
            if not isinstance(val, str):
                return None
            at = mod.start(node)
            line, col = (at[0] - 1, at[1]) if at else (0, 0)
            col += len(node.prefix) + len(node.quote)
            body = node.value[len(node.prefix) + len(node.quote) : len(node.value) - len(node.quote)]
            if body.startswith("\\\n"):
                line, col = line + 1, 0
            # ``"Intro.\\nToday is {today}"`` on one line: each escape is two source characters
            one_line = "\n" not in body and "\\" in body and "r" not in node.prefix.lower()
            pieces: tuple[Piece, ...] = ((0, line, col, True),) if one_line else ()
            return TemplateSrc(val, mod.path, line, col, literal=node, module=mod, pieces=pieces)
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
        argument = getattr(env.bindings, "argument", None)  # a call's bindings (LazyBindings)
        bound = argument(node.value) if argument is not None and isinstance(node, cst.Name) else None
        if bound is not None and not self._reassigned_param(node.value, env):  # type: ignore[attr-defined,union-attr]
            got = self.template_source(bound[0], bound[1], depth + 1)  # read where the caller writes it
            if got is not None:
                return got
        if (
            isinstance(node, cst.Name)
            and node.value in env.bindings
            and is_static(env.bindings[node.value])
            and not self._reassigned_param(node.value, env)  # type: ignore[attr-defined]
        ):
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
        if isinstance(node, cst.Attribute):
            # ``settings.prompts.answer``: a field of a project class, whose default is the template
            return self._field_source(node, env, depth)
        if isinstance(node, cst.Subscript):  # ``PROMPTS["qa"]``: an item of a module-level table
            item = table_item(self, node, env)  # type: ignore[arg-type]
            if item is not None:
                value, tmod = item
                got = self.template_source(value, self.module_env(tmod).at(tmod.pos(value)), depth + 1)
                return _chained(got, mod.loc(node))
        if isinstance(node, cst.Subscript) or _is_get(node):
            return self._keyed_source(node, env)  # ``yaml.safe_load(f)["system"]``
        if isinstance(node, cst.Call):
            f = node.func
            name = dotted_name(f)
            if isinstance(f, cst.Attribute) and f.attr.value == "replace":
                return self._replaced_source(node, f.value, env, depth)
            legacy = len(node.args) >= 2 and name in (
                "read_text",
                "resources.read_text",
                "importlib.resources.read_text",
            )
            reads = isinstance(f, cst.Attribute) and f.attr.value in ("read_text", "read")
            if legacy or reads:
                path = self._resource_path(node, env) if legacy else self._file_path(f.value, env)  # type: ignore[attr-defined]
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
                    _trim(got, dedent="dedent" in name)
                return got
            if name.rsplit(".", 1)[-1] in ("Template",) and node.args:
                return self.template_source(node.args[0].value, env, depth + 1)
            return self._file_text_source(node, env)
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or):
            # ``system_prompt or DEFAULT_PROMPT``: the default's text when the left one is unknown
            return self.template_source(node.left, env, depth + 1) or self.template_source(
                node.right, env, depth + 1
            )
        return None

    def _replaced_source(
        self, node: cst.Call, recv: cst.BaseExpression, env: Env, depth: int
    ) -> TemplateSrc | None:
        """``TEMPLATE.replace("{tools}", TOOLS)`` with constant texts: the template with it done, its
        other placeholders still where they are written (to be filled by a ``.format`` after it)."""
        args = node.args
        if len(args) != 2 or any(a.keyword is not None or a.star for a in args):
            return None
        old, new = (self._constant_text(a.value, env) for a in args)
        got = self.template_source(recv, env, depth + 1) if old and new is not None else None
        if got is None or old not in got.text:
            return got
        start = (got.line_offset, got.col_offset)
        text, pieces = replaced_pieces(got.text, start, got.pieces, old, new)  # type: ignore[arg-type]
        return evolve(got, text=text, pieces=pieces, literal=None)

    def _constant_text(self, node: cst.BaseExpression, env: Env) -> str | None:
        """The text of an f-string's expression when it is a constant (``{RULES}``), else None."""
        segs = self.text(node, env)  # type: ignore[attr-defined]
        return join_text(segs) if is_static(segs) else None

    def _field_source(self, node: cst.Attribute, env: Env, depth: int) -> TemplateSrc | None:
        """The template a field's default holds, for an object whose class the code names."""
        owner = class_of(self, node.value, env)  # type: ignore[arg-type]
        if owner is None:
            return None
        value = field_default(owner[0], node.attr.value)
        if value is None:
            return None
        fmod = owner[1]
        got = self.template_source(value, self.module_env(fmod).at(fmod.pos(value)), depth + 1)
        return _chained(got, env.mod.loc(node))

    def _keyed_source(self, node: cst.BaseExpression, env: Env, depth: int = 0) -> TemplateSrc | None:
        """``yaml.safe_load(f)["agent"]["system"]``, ``cfg.get("system")`` on a loaded YAML/TOML file."""
        keys: list[str | int] = []
        cur = node
        while True:
            if (
                isinstance(cur, cst.Subscript)
                and len(cur.slice) == 1
                and isinstance(cur.slice[0].slice, cst.Index)
            ):
                key = cur.slice[0].slice.value
                value = evaluated(key) if isinstance(key, (cst.SimpleString, cst.Integer)) else None
                if not isinstance(value, (str, int)):
                    return None
                keys.append(value)
                cur = cur.value
            elif _is_get(cur):
                value = evaluated(cur.args[0].value)  # type: ignore[attr-defined]
                keys.append(value)  # type: ignore[arg-type]
                cur = cur.func.value  # type: ignore[attr-defined]
            else:
                break
        loaded = self._loaded_document(cur, env, depth)
        if loaded is None:
            return None
        path, kind = loaded
        try:
            from prefixlint.analysis.templates.structured import keyed_value

            text = path.read_text("utf-8")
        except (ImportError, OSError, UnicodeDecodeError):
            return None
        found = keyed_value(text, list(reversed(keys)), kind)
        if found is None:
            return None
        self.dependencies.add(str(path))
        loc = env.mod.loc(node)
        chain = (loc,) if loc else ()
        return TemplateSrc(found.text, str(path), found.line, found.col, chain, indent=found.indent)

    def _loaded_document(self, node: cst.BaseExpression, env: Env, depth: int) -> tuple[Path, str] | None:
        """The YAML or TOML file that ``node`` holds parsed: ``yaml.safe_load(f)``, or a name bound to it."""
        if depth > 8:
            return None
        if isinstance(node, cst.Name):
            value = None
            if env.func is not None:
                ops = local_ops(env.mod, env.func).get(node.value)
                if ops:
                    before = ops_before(ops, env.pos)
                    if len(before) != 1 or before[0].kind != "assign":
                        return None
                    value, env = before[0].value, env.at(before[0].pos)
                elif find_param(env.func, node.value) is not None:
                    return None
            if value is None:
                value = env.mod.assigns.get(node.value)
                env = self.module_env(env.mod).at(env.mod.pos(value)) if value is not None else env  # type: ignore[attr-defined]
            return self._loaded_document(value, env, depth + 1) if value is not None else None
        if not isinstance(node, cst.Call) or not node.args:
            return None
        name = dotted_name(node.func)
        last = name.rsplit(".", 1)[-1]
        if last in ("safe_load", "full_load", "load", "unsafe_load") and "yaml" in name.lower():
            kind = "yaml"
        elif last in ("load", "loads") and name.split(".")[0] in ("tomllib", "tomli", "toml", "rtoml"):
            kind = "toml"
        else:
            return None
        arg = node.args[0].value
        if (
            isinstance(arg, cst.Call)
            and isinstance(arg.func, cst.Attribute)
            and arg.func.attr.value in ("read", "read_text")
        ):
            arg = arg.func.value
        path = self._file_path(arg, env)
        return (path, kind) if path is not None and path.is_file() else None

    def _file_text_source(self, node: cst.BaseExpression, env: Env) -> TemplateSrc | None:
        """Template text a helper call returns when it reads a prompt file (``load_prompt("x.txt")``).

        The value is evaluated; when it is the whole text of one non-Python file, that file is the
        template, so placeholders are located in it.
        """
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("read_text", "read", "replace", "format", "format_map", "render")
        ):
            return None  # evaluating these asks for their template source again
        if not isinstance(node, cst.Call) or self._function_for(node.func, env) is None:  # type: ignore[attr-defined]
            return None  # only a helper of this project can return a file's text
        busy = self.__dict__.setdefault("_reading_files", set())
        if id(node) in busy:
            return None
        busy.add(id(node))
        try:
            segs = self.text(node, env)  # type: ignore[attr-defined]
        finally:
            busy.discard(id(node))
        if len(segs) != 1 or not segs[0].static or segs[0].location is None:
            return None
        where = segs[0].location
        if where.path.endswith((".py", ".pyi")) or (where.line, where.col) != (1, 0):
            return None
        try:
            if Path(where.path).read_text("utf-8") != segs[0].text:
                return None  # not the file's own text (a rendered or changed copy): its lines differ
        except (OSError, UnicodeDecodeError):
            return None
        loc = env.mod.loc(node)
        return TemplateSrc(segs[0].text, where.path, 0, 0, (*segs[0].chain, *((loc,) if loc else ())))

    def file_text(self, node: cst.Call, env: Env) -> list[Segment] | None:
        """``open(p).read()``, ``Path(p).read_text()``: the file's text, located in the file itself."""
        tmpl = self.template_source(node, env)
        if tmpl is None:
            return None
        if tmpl.path.endswith((".py", ".pyi")):
            return [static(tmpl.text, env.mod.loc(node))]
        return [evolve(static(tmpl.text, SourceLocation(tmpl.path, 1, 0)), chain=tmpl.chain)]

    def replace_fill(self, node: cst.Call, env: Env) -> list[Segment] | None:
        """``template.replace("{x}", value)`` (chained, or reassigned step by step) on known template text.

        The replaced keys are placeholders of a "literal" template; None when the text the first
        ``replace`` applies to is not a known template.
        """
        pairs: list[tuple[str, cst.BaseExpression, Env]] = []
        cur: cst.BaseExpression = node
        cur_env = env
        for _ in range(64):
            if _is_replace(cur):
                call = cur  # type: ignore[assignment]
                key = evaluated(call.args[0].value)  # type: ignore[attr-defined]
                pairs.append((key, call.args[1].value, cur_env))  # type: ignore[attr-defined]
                cur = call.func.value  # type: ignore[attr-defined]
                continue
            if isinstance(cur, cst.Name) and cur_env.func is not None:
                ops = local_ops(cur_env.mod, cur_env.func).get(cur.value) or []
                before = [op for op in ops if op.pos < cur_env.pos]
                if before and before[-1].kind == "assign" and _is_replace(before[-1].value):
                    cur_env = cur_env.at(before[-1].pos)
                    cur = before[-1].value
                    continue
            break
        if not pairs:
            return None
        base = self.template_source(cur, cur_env)
        if base is None:
            return None
        binds: dict[str, list[Segment]] = {}
        for key, value, at in reversed(pairs):
            if key and key in base.text and key not in binds:
                binds[key] = self.text(value, at)  # type: ignore[attr-defined]
        if not binds or all(is_static(v) for v in binds.values()):
            return None  # nothing dynamic goes in: the plain evaluation gives the same text
        return self.render(base, "literal", binds, env, node)

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
            if value is None and env.func is not None:
                value = _with_target(env.func, node.value)
            if value is None:
                value = mod.assigns.get(node.value)
            return self._file_path(value, env, depth + 1) if value is not None else None
        if isinstance(node, cst.Attribute) and node.attr.value == "parent":
            inner = self._file_path(node.value, env, depth + 1)
            return inner.parent if inner is not None else None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            left = self._file_path(node.left, env, depth + 1)
            part = self._path_part(node.right, env)
            return left / part if left is not None and part is not None else None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            # ``str(Path(__file__).parent) + "/prompts/" + name``
            part = self._path_part(node.right, env)
            if part is None:
                return None
            left = self._file_path(node.left, env, depth + 1)
            if left is None:
                return None
            return Path(str(left) + part) if not part.startswith("/") else left / part.lstrip("/")
        if isinstance(node, cst.Call):
            name = dotted_name(node.func)
            last = name.rsplit(".", 1)[-1]
            if last in ("resolve", "absolute") and isinstance(node.func, cst.Attribute):
                # ``p.resolve(strict=True)``: the path is the object, unless unbound (``Path.resolve(p)``)
                bound = dotted_name(node.func.value).rsplit(".", 1)[-1] != "Path"  # PurePath has neither
                if bound or not node.args:
                    return self._file_path(node.func.value, env, depth + 1)
            if last in ("Path", "PurePath", "open", "resolve", "absolute", "str", "fspath") and node.args:
                return self._file_path(node.args[0].value, env, depth + 1)
            if last in ("joinpath", "join") and isinstance(node.func, cst.Attribute):
                if name.endswith("path.join"):
                    parts = [self._file_path(a.value, env, depth + 1) for a in node.args[:1]]
                    base = parts[0]
                    rest = node.args[1:]
                else:
                    base = self._file_path(node.func.value, env, depth + 1)
                    rest = node.args
                for a in rest:
                    v = self._path_part(a.value, env)
                    if base is None or v is None:
                        return None
                    base = base / v
                return base
            if last == "files" and node.args and ("resources" in name or name == "files"):
                # ``importlib.resources.files("pkg")``: the package's folder in the project
                return self._package_dir(node.args[0].value, env)
            if name.endswith(("path.abspath", "path.realpath", "path.normpath")) and node.args:
                return self._file_path(node.args[0].value, env, depth + 1)
            if name.endswith("path.dirname") and node.args:
                inner = self._file_path(node.args[0].value, env, depth + 1)
                return inner.parent if inner is not None else None
        return None

    def _resource_path(self, node: cst.Call, env: Env) -> Path | None:
        """``importlib.resources.read_text("pkg.prompts", "system.md")``: the file it reads."""
        if len(node.args) < 2:
            return None
        pkg, part = self._package_dir(node.args[0].value, env), self._path_part(node.args[1].value, env)
        return pkg / part if pkg is not None and part is not None else None

    def _package_dir(self, node: cst.BaseExpression, env: Env) -> Path | None:
        """The folder of the package named by ``node`` (a dotted string, ``__package__``, ``__name__``)."""
        mod = env.mod
        if isinstance(node, cst.Name) and node.value in ("__package__", "__name__"):
            return mod.directory
        dotted = self._path_part(node, env)
        if not dotted:
            return None
        rel = Path(*dotted.split("."))
        root = Path(self.project.root).resolve()
        here = Path(mod.directory).resolve()
        bases = [here, *(p for p in here.parents if p == root or root in p.parents), root / "src"]
        for base in bases:
            if (base / rel).is_dir():
                return base / rel
        return None

    def _path_part(self, node: cst.BaseExpression, env: Env) -> str | None:
        """A literal piece of a path: a string, or a parameter the caller bound to a constant."""
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            v = evaluated(node)
            return v if isinstance(v, str) else None
        if isinstance(node, cst.Name):
            segs = env.bindings.get(node.value)
            if (
                segs is None
                and node.value in env.mod.assigns
                and (env.func is None or node.value not in local_ops(env.mod, env.func))
            ):
                value = env.mod.assigns[node.value]
                v = evaluated(value) if isinstance(value, cst.SimpleString) else None
                return v if isinstance(v, str) else None
            if segs is not None and is_static(segs):
                return join_text(segs)
        return None

    def _jinja_render(self, node: cst.Call, recv: cst.BaseExpression, env: Env) -> list[Segment] | None:
        binds = self._call_binds(node, env)
        recv, env_at = self._template_object(recv, env)
        if isinstance(recv, cst.Call):
            env = env_at
            rname = dotted_name(recv.func).rsplit(".", 1)[-1]
            if rname == "get_template" and recv.args:
                path = self._jinja_file(recv.args[0].value, env)
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

    def dict_literal(self, node: cst.BaseExpression, env: Env) -> tuple[cst.Dict, Env] | None:
        """The dict literal ``node`` is, or that a local name was last set to (``.format(**values)``)."""
        if isinstance(node, cst.Dict):
            return node, env
        argument = getattr(env.bindings, "argument", None)  # a call's bindings (LazyBindings)
        bound = argument(node.value) if argument is not None and isinstance(node, cst.Name) else None
        if bound is not None:  # a helper's parameter: the dict its caller passes (``**kwargs`` too)
            return self.dict_literal(*bound)
        if isinstance(node, cst.Name) and env.func is not None:
            ops = local_ops(env.mod, env.func).get(node.value)
            if ops:
                before = ops_before(ops, env.pos)
                if len(before) == 1 and before[0].kind == "assign" and isinstance(before[0].value, cst.Dict):
                    return before[0].value, env.at(before[0].pos)
        return None

    def _template_object(self, recv: cst.BaseExpression, env: Env) -> tuple[cst.BaseExpression, Env]:
        """``tpl`` in ``tpl.render(...)`` when a name holds ``env.get_template(...)`` or ``Template(...)``."""
        if not isinstance(recv, cst.Name):
            return recv, env
        value, at = None, env
        if env.func is not None:
            ops = local_ops(env.mod, env.func).get(recv.value)
            if ops:
                before = ops_before(ops, env.pos)
                if len(before) == 1 and before[0].kind == "assign":
                    value, at = before[0].value, env.at(before[0].pos)
        elif recv.value in env.mod.assigns:
            value = env.mod.assigns[recv.value]
            at = self.module_env(env.mod).at(env.mod.pos(value))  # type: ignore[attr-defined]
        if isinstance(value, cst.Call):
            last = dotted_name(value.func).rsplit(".", 1)[-1]
            if last in ("get_template", "Template", "from_string"):
                return value, at
        return recv, env

    def _jinja_file(self, arg: cst.BaseExpression, env: Env) -> Path | None:
        """The file ``env.get_template(arg)`` loads.

        A name known statically (a literal, or a parameter every caller passes as a constant) is
        looked up as a loader would. A name built at run time (``f"{name}.md"``) stands for the
        project's template files that match its pattern; of those, the one whose first per-request
        placeholder sits ahead of the most static text is the one reported.
        """
        tname = self._path_part(arg, env)
        if tname is None and isinstance(arg, cst.FormattedString):
            segs = self.text(arg, env)  # type: ignore[attr-defined]
            if is_static(segs):
                tname = join_text(segs)
            else:
                return self._pattern_template(arg, env)
        return self._find_jinja(tname, env) if tname is not None else None

    def _pattern_template(self, arg: cst.FormattedString, env: Env) -> Path | None:
        from prefixlint.analysis.python.template_patterns import best_candidate, candidates, pattern_of

        if self._forced_templates and id(arg) in self._forced_templates:
            return self._forced_templates[id(arg)]
        pattern = pattern_of(arg)
        if pattern is None:
            return None
        found = candidates(pattern, self._jinja_dirs(env))
        best = best_candidate(found)
        if best is not None and len(found) > 1:
            self.record_choice((id(arg), [p for p in found if p != best]))
        return best

    def record_choice(self, choice: tuple[int, list[Path]]) -> None:
        """Note the other files a run-time template name could load (for :meth:`each_template_choice`)."""
        self.memo.choices.append(choice)  # type: ignore[attr-defined]
        if self._template_choices is not None:
            self._template_choices.append(choice)

    def _find_jinja(self, name: str, env: Env) -> Path | None:
        dirs = self._jinja_dirs(env)
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

    def _jinja_dirs(self, env: Env) -> list[Path]:
        """Folders the module's Jinja loaders read, then the usual template folders."""
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
        return dirs

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
                # the piece that decides what the filled value is: a per-request one over an unknown one
                d = dominant(segs) or segs[0]
                bindings[key] = Binding(
                    static=False,
                    kind=d.kind,
                    timing=d.timing,
                    label=d.label or key,
                    location=d.location,
                    chain=d.chain,
                    confidence=d.confidence,
                    granularity=d.granularity,
                    cardinality=d.cardinality,
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
                indent=tmpl.indent,
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
        rendered = result.segments
        if tmpl.pieces:
            start = (tmpl.line_offset, tmpl.col_offset)
            rendered = relocate(list(rendered), tmpl.text, tmpl.path, start, tmpl.pieces)
        out = []
        for seg in rendered:
            if seg.static:
                out.append(seg)
            else:
                if renders_now and env.timing is Timing.PROCESS and seg.timing is Timing.REQUEST:
                    seg = evolve(seg, timing=Timing.PROCESS)
                out.append(evolve(seg, chain=(*tmpl.chain, *seg.chain), fixes=_move_fix(tmpl, seg)))
        return with_chain(out, loc)


def _trim(src: TemplateSrc, dedent: bool) -> None:
    """``textwrap.dedent`` or ``str.strip`` applied to ``src``'s text, its placement kept: the lines a
    strip drops move the start down, and the margin a dedent drops becomes ``indent``."""
    text = src.text
    if src.literal is not None and src.pieces:
        src.pieces = ()  # one literal's escapes: its text no longer starts where the literal does
    if dedent:
        new = textwrap.dedent(text)
        old_lines, new_lines = text.split("\n"), new.split("\n")
        margin = next((len(a) - len(b) for a, b in zip(old_lines, new_lines, strict=True) if b.strip()), 0)
        src.indent += margin
        if old_lines[0].strip():
            src.col_offset += margin
        src.text = new
        return
    new = text.strip()
    lead = text[: len(text) - len(text.lstrip())]
    if "\n" in lead:
        src.line_offset += lead.count("\n")
        src.col_offset = len(lead) - lead.rfind("\n") - 1 + src.indent  # a later line of the text
    else:
        src.col_offset += len(lead)
    src.text = new


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


def _with_target(func: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The expression ``name`` is bound to by ``with EXPR as name:`` in ``func``, if one."""
    found = _with_targets(func).get(name, ())
    return found[0] if len(found) == 1 else None


# One walk of a function for every name asked about (a walk per name made one large module cost
# minutes). Nodes hash by identity; bounded, least recently used first out.
@lru_cache(maxsize=256)
def _with_targets(func: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
    """Every ``with EXPR as name:`` in ``func`` (not in the functions nested in it), by name."""
    found: dict[str, list[cst.BaseExpression]] = {}
    stack: list[cst.CSTNode] = list(func.body.children)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef):
            continue
        if isinstance(node, cst.WithItem):
            asname = node.asname
            if asname is not None and isinstance(asname.name, cst.Name):
                found.setdefault(asname.name.value, []).append(node.item)
        stack.extend(node.children)
    return found


def _is_get(node: cst.CSTNode) -> bool:
    """``x.get("key")`` (with or without a default)."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "get"
        and 1 <= len(node.args) <= 2
        and isinstance(node.args[0].value, cst.SimpleString)
        and isinstance(evaluated(node.args[0].value), str)
    )


def _is_replace(node: cst.CSTNode) -> bool:
    """``x.replace("literal", value)``."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "replace"
        and len(node.args) >= 2
        and isinstance(node.args[0].value, cst.SimpleString)
        and isinstance(evaluated(node.args[0].value), str)
    )


def _chained(got: TemplateSrc | None, loc: SourceLocation | None) -> TemplateSrc | None:
    if got is not None and loc is not None:
        got.chain = (*got.chain, loc)
    return got
