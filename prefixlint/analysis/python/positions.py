"""Exact source positions of libcst nodes, computed lazily for the nodes that are asked about.

A full position pass (libcst's ``PositionProvider``) regenerates the code of every node of a module,
which costs more than half a parse. The analyzer needs positions for a few nodes only (those a
finding, snippet or fix points at), so :class:`LazyPositions` regenerates an enclosing node (an
*anchor*: the simple statement around the node, or the part of a compound statement's header it is
in) and finds its text in the source. Concatenated codegen tokens are the source text itself, so
where that text occurs exactly once in the part of the source known to contain the anchor, the
anchor starts there, and every node inside it gets its position from the same codegen; later
questions about that statement cost nothing. Otherwise the next enclosing node is tried, up to the
module itself (a full pass). The positions are the ones ``PositionProvider`` reports (syntactic
extents), as character offsets.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

# Nodes whose code does not depend on arguments their parent passes to codegen, so their text can
# be searched for. A ``Param`` or an element renders a default comma or star only when its parent
# asks; an ``Arg`` of a parsed tree spells out every comma but the last one's (never rendered).
_ANCHORS = (
    cst.BaseStatement,
    cst.BaseSmallStatement,
    cst.BaseExpression,
    cst.FormattedStringExpression,
    cst.Parameters,
    cst.Arg,
    cst.Decorator,
)
# Nodes that hold statements: an anchor is sought below them first (a whole ``def`` is costly).
_CONTAINERS = (cst.BaseCompoundStatement, cst.BaseSuite, cst.Module)


class PositionState:
    """A libcst codegen state that records every node's extent as character offsets.

    ``extent`` holds everything a node's codegen writes; ``syntactic`` holds the narrower extents
    PositionProvider reports for the nodes that declare one (a statement without its leading lines
    and indentation, a ``def`` without its decorators). :meth:`position` combines them. The
    generated text is kept only when asked (``keep_text``): a search needs it, a full pass does
    not. It is also its own ``record_syntactic_position`` context manager (those nest).
    """

    __slots__ = (
        "default_indent",
        "default_newline",
        "extent",
        "frames",
        "indent_len",
        "indent_tokens",
        "off",
        "parts",
        "pending",
        "pop",
        "provider",
        "push",
        "stack",
        "syntactic",
    )

    def __init__(self, module: cst.Module, indent: list[str] | None = None, keep_text: bool = False) -> None:
        self.default_indent = module.default_indent
        self.default_newline = module.default_newline
        self.provider = None
        self.indent_tokens: list[str] = list(indent or ())
        self.indent_len = sum(len(t) for t in self.indent_tokens)
        self.off = 0
        self.parts: list[str] | None = [] if keep_text else None
        self.extent: dict[int, tuple[int, int]] = {}
        self.syntactic: dict[int, tuple[int, int]] = {}
        self.stack: list[int] = []
        self.frames: list[tuple[int, object, object, int]] = []
        self.pending: tuple[int, object, object] = (0, None, None)
        self.push = self.stack.append
        self.pop = self.stack.pop

    @property
    def tokens(self) -> list[str]:  # Module._codegen_impl only asks whether anything was written
        return [""] if self.off else []

    @property
    def text(self) -> str:
        return "".join(self.parts or ())

    def position(self, key: int) -> tuple[int, int] | None:
        """PositionProvider's extent of the node with id ``key`` (None when not generated here)."""
        return self.syntactic.get(key) or self.extent.get(key)

    def increase_indent(self, value: str) -> None:
        self.indent_tokens.append(value)
        self.indent_len += len(value)

    def decrease_indent(self) -> None:
        self.indent_len -= len(self.indent_tokens.pop())

    def add_indent_tokens(self) -> None:
        self.off += self.indent_len
        if self.parts is not None:
            self.parts.extend(self.indent_tokens)

    def add_token(self, value: str) -> None:
        self.off += len(value)
        if self.parts is not None:
            self.parts.append(value)

    def pop_trailing_newline(self) -> None:
        pass

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.push(self.off)

    def after_codegen(self, node: cst.CSTNode) -> None:
        self.extent[id(node)] = (self.pop(), self.off)

    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: object = None, end_node: object = None
    ) -> PositionState:
        self.pending = (id(node), start_node, end_node)
        return self

    def __enter__(self) -> None:
        key, start_node, end_node = self.pending
        self.frames.append((key, start_node, end_node, self.off))

    def __exit__(self, *exc: object) -> None:
        key, start_node, end_node, start = self.frames.pop()
        if start_node is not None:
            start = self.position(id(start_node))[0]  # type: ignore[index]
        end = self.position(id(end_node))[1] if end_node is not None else self.off  # type: ignore[index]
        self.syntactic[key] = (start, end)


class LazyPositions:
    """``id(node) -> (start, end)`` character offsets, worked out on demand (see the module doc).

    Each placed anchor keeps its codegen's offsets relative to where it was found; a question looks
    through the few placements of the module instead of copying every node's offsets.
    """

    def __init__(self, module: cst.Module, text: str, parent: Callable[[int], cst.CSTNode | None]) -> None:
        self.module = module
        self.text = text
        self.parent = parent
        self.placed: list[tuple[PositionState, int]] = []
        self.answers: dict[int, tuple[int, int]] = {}

    def get(self, node: cst.CSTNode) -> tuple[int, int] | None:
        key = id(node)
        found = self.answers.get(key)
        if found is None:
            found = self._placed_position(key) or self._locate(node)
            if found is not None:
                self.answers[key] = found
        return found

    def _placed_position(self, key: int) -> tuple[int, int] | None:
        for state, at in self.placed:
            span = state.position(key)
            if span is not None:
                return span[0] + at, span[1] + at
        return None

    def _placed_extent(self, key: int) -> tuple[int, int] | None:
        for state, at in self.placed:
            span = state.extent.get(key)
            if span is not None:
                return span[0] + at, span[1] + at
        return None

    def _locate(self, node: cst.CSTNode) -> tuple[int, int] | None:
        # The ancestors of ``node`` up to the nearest one already placed, which bounds the search
        # (its full extent: leading lines, decorators and indentation included).
        chain: list[cst.CSTNode] = []
        lo, hi = 0, len(self.text)
        cur: cst.CSTNode | None = node
        while cur is not None:
            span = self._placed_extent(id(cur))
            if span is not None:
                lo, hi = span
                break
            chain.append(cur)
            cur = self.parent(id(cur))
        # Start with the whole simple statement (or header part) around the node: later questions
        # about the same statement are then answered without another codegen.
        start = 0
        for i, cand in enumerate(chain):
            if isinstance(cand, _ANCHORS):
                start = i
            if isinstance(cand, _CONTAINERS) or isinstance(self.parent(id(cand)), _CONTAINERS):
                break
        for cand in chain[start:]:
            if cand is self.module:
                break
            if isinstance(cand, _ANCHORS) and self._place(cand, lo, hi):
                return self._placed_position(id(node))
        if self._placed_extent(id(self.module)) is None:
            self._full_pass()
        return self._placed_position(id(node))

    def _place(self, anchor: cst.CSTNode, lo: int, hi: int) -> bool:
        """Regenerate ``anchor``; if its text occurs once in ``text[lo:hi]``, it was found."""
        state = PositionState(self.module, self._indent_of(anchor), keep_text=True)
        anchor._codegen(state)  # type: ignore[arg-type]
        code = state.text
        if not code:
            return False
        at = self.text.find(code, lo, hi)
        if at < 0 or self.text.find(code, at + 1, hi) >= 0:
            return False
        state.parts = None
        self.placed.append((state, at))
        return True

    def _indent_of(self, node: cst.CSTNode) -> list[str]:
        """The indentation codegen has in effect at ``node`` (one entry per enclosing block)."""
        out: list[str] = []
        cur = self.parent(id(node))
        default = self.module.default_indent
        while cur is not None:
            if isinstance(cur, cst.IndentedBlock):
                out.append(default if cur.indent is None else cur.indent)
            cur = self.parent(id(cur))
        out.reverse()
        return out

    def _full_pass(self) -> None:
        state = PositionState(self.module, keep_text=True)
        self.module._codegen(state)  # type: ignore[arg-type]
        code, state.parts = state.text, None
        if code != self.text:
            # libcst's codegen can lose whitespace (``except (A, B) :`` comes back as ``...):``);
            # offsets after such a place are moved to where the source has them
            shift = _alignment(code, self.text)
            if shift is not None:
                # a start moves to its first character; an end stays just after its last one
                def moved(span: tuple[int, int]) -> tuple[int, int]:
                    a, b = span
                    return shift[a], (shift[b - 1] + 1 if b > a else shift[a])

                state.extent = {k: moved(v) for k, v in state.extent.items()}
                state.syntactic = {k: moved(v) for k, v in state.syntactic.items()}
        self.placed.insert(0, (state, 0))


def _alignment(code: str, source: str) -> list[int] | None:
    """Offsets in ``source`` of each offset of ``code``, for texts that differ only in whitespace
    (None when they differ otherwise)."""
    out: list[int] = []
    i = j = 0
    while i < len(code):
        if j < len(source) and code[i] == source[j]:
            out.append(j)
            i += 1
            j += 1
        elif j < len(source) and source[j] in " \t\f":
            j += 1  # whitespace the codegen left out
        elif code[i] in " \t\f":
            out.append(j)  # whitespace the codegen added
            i += 1
        else:
            return None
    out.append(j)
    return out
