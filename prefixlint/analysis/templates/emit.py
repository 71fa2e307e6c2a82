"""Shared state of one render: where segments go, how source offsets become locations.

Every template style (jinja, placeholders, prompty) turns its source into calls on a
:class:`RenderContext`: ``static`` for text, ``dynamic`` for a placeholder. The context owns the
segment list, the errors, the dependencies and the stack of templates being expanded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from prefixlint.analysis.catalog import Catalog
from prefixlint.analysis.result import AnalysisError
from prefixlint.analysis.templates.bindings import Binding, name_binding
from prefixlint.model.layout import DynamicKind, Section, Segment, SourceLocation, Timing
from prefixlint.model.source_text import LineIndex as LineIndex  # one line index everywhere


@dataclass
class TemplateResult:
    """Segments of one template in template order, the other template files read, and errors."""

    segments: list[Segment]
    dependencies: set[str] = field(default_factory=set)
    errors: list[AnalysisError] = field(default_factory=list)


@dataclass(frozen=True)
class Frame:
    """One source text being rendered: its display path and where it sits in its file."""

    path: str
    line_offset: int = 0
    col_offset: int = 0
    indent: int = 0  # columns every later line was dedented by (a YAML block scalar's indentation)

    def loc(
        self, line: int, col: int, end_line: int | None = None, end_col: int | None = None
    ) -> SourceLocation:
        """A location in the file from a position in the text (offsets apply to the first line only)."""

        def shift(ln: int, c: int) -> tuple[int, int]:
            return ln + self.line_offset, c + (self.col_offset if ln == 1 else self.indent)

        line2, col2 = shift(line, col)
        if end_line is None or end_col is None:
            return SourceLocation(self.path, line2, col2)
        end_line2, end_col2 = shift(end_line, end_col)
        return SourceLocation(self.path, line2, col2, end_line2, end_col2)


@dataclass(frozen=True)
class Flags:
    """Whether content sits in a conditional or repeated block."""

    conditional: bool = False
    repeated: bool = False

    def inside_if(self) -> Flags:
        return Flags(True, self.repeated)

    def inside_for(self) -> Flags:
        return Flags(self.conditional, True)

    def union(self, other: Flags) -> Flags:
        return Flags(self.conditional or other.conditional, self.repeated or other.repeated)


@dataclass
class RenderContext:
    """Everything one call of ``render_segments`` accumulates."""

    catalog: Catalog
    bindings: Mapping[str, Binding]
    search_paths: tuple[Path, ...]
    root: Path
    section: Section = Section.SYSTEM
    role: str | None = "system"
    message_index: int | None = None
    segments: list[Segment] = field(default_factory=list)
    errors: list[AnalysisError] = field(default_factory=list)
    dependencies: set[str] = field(default_factory=set)
    stack: list[tuple[str, str]] = field(default_factory=list)  # (resolved key, display path)
    absolute_paths: bool = False
    _message_start: int = 0

    def static(self, text: str, loc: SourceLocation | None, flags: Flags = Flags()) -> None:
        if not text:
            return
        self.segments.append(
            Segment(
                section=self.section,
                text=text,
                static=True,
                timing=Timing.STATIC,
                role=self.role,
                location=loc,
                message_index=self.message_index,
                conditional=flags.conditional,
                repeated=flags.repeated,
            )
        )

    def dynamic(
        self,
        value: Binding,
        text: str,
        loc: SourceLocation | None,
        flags: Flags = Flags(),
        via: tuple[SourceLocation, ...] = (),
    ) -> None:
        """A placeholder: static text when its binding is static, else a dynamic segment."""
        if value.static:
            self.segments.append(
                Segment(
                    section=self.section,
                    text=value.text,
                    static=True,
                    timing=Timing.STATIC,
                    role=self.role,
                    location=loc,
                    label=value.label or text,
                    message_index=self.message_index,
                    conditional=flags.conditional,
                    repeated=flags.repeated,
                )
            )
            return
        head = value.chain or ((value.location,) if value.location else ())
        chain: list[SourceLocation] = []
        for step in (*head, *via, *((loc,) if loc else ())):
            if not chain or chain[-1] != step:
                chain.append(step)
        self.segments.append(
            Segment(
                section=self.section,
                text=text,
                static=False,
                kind=value.kind or DynamicKind.UNKNOWN,
                timing=value.timing if value.timing is not Timing.STATIC else Timing.REQUEST,
                role=self.role,
                location=loc,
                chain=tuple(chain),
                site=via[0] if via else None,
                label=value.label or text,
                message_index=self.message_index,
                conditional=flags.conditional,
                repeated=flags.repeated,
                confidence=value.confidence,
                granularity=value.granularity,
                cardinality=value.cardinality,
            )
        )

    def switch_role(self, role: str) -> None:
        """Start a new message (dotprompt ``{{role "user"}}``); system roles go to the system section."""
        has_content = any(not s.static or s.text.strip() for s in self.segments[self._message_start :])
        if self.message_index is None:
            self.message_index = 0
        elif has_content:
            self.message_index += 1
        self.role = role
        self.section = Section.SYSTEM if role in ("system", "developer") else Section.MESSAGES
        self._message_start = len(self.segments)

    def mark_last_user_message(self) -> None:
        """Flag the segments of the final message when it is a user turn."""
        last = self.message_index
        if last is None or self.role != "user":
            return
        self.segments = [
            replace(s, is_last_user_message=True) if s.message_index == last else s for s in self.segments
        ]

    def bound(self, name: str) -> Binding | None:
        """The caller's binding for ``name``; a dynamic one without a kind gets the name's kind."""
        value = self.bindings.get(name)
        if value is None or value.static:
            return value
        if value.kind is None:
            value = replace(value, kind=name_binding(name, self.catalog).kind)
        return value if value.label else replace(value, label=name)

    def error(self, loc: SourceLocation, message: str, code: str = "PFX002") -> None:
        err = AnalysisError(location=loc, message=message, code=code)
        if err not in self.errors:
            self.errors.append(err)

    def display(self, path: Path) -> str:
        """How a template file other than the main one is named in locations."""
        resolved = path.resolve()
        if self.absolute_paths:
            return str(resolved)
        try:
            return str(resolved.relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(resolved)
