"""Where an expression is evaluated: the module, function, class, bound parameters and timing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst

from prefixlint.analysis.python.collect import ClassInfo, ModuleInfo
from prefixlint.model.layout import Segment, Timing, evolve


@dataclass(frozen=True)
class Env:
    """Where an expression is evaluated: module, function, bound parameters, timing, use position."""

    mod: ModuleInfo
    func: cst.FunctionDef | None = None
    cls: ClassInfo | None = None
    bindings: Mapping[str, list[Segment]] = field(default_factory=dict)
    timing: Timing = Timing.REQUEST
    pos: int = 1 << 60
    depth: int = 0
    active: tuple[int, ...] = ()
    # ``__init__`` arguments of the instance whose method is evaluated (``self.x = x``).
    self_binds: Mapping[str, list[Segment]] = field(default_factory=dict)
    # Parameter -> the caller's argument expression and where it is evaluated, for a call followed
    # into an in-house send path (a message list passed to ``call_model(messages)``).
    arg_nodes: dict[str, tuple[cst.BaseExpression, Env]] = field(default_factory=dict)

    def at(self, pos: int) -> Env:
        return evolve(self, pos=pos)

    def deeper(self, **kw: object) -> Env:
        return evolve(self, depth=self.depth + 1, **kw)  # type: ignore[arg-type]

    def callee(
        self, mod: ModuleInfo, func: cst.FunctionDef, cls: ClassInfo | None, at: cst.CSTNode, **kw: object
    ) -> Env:
        """Inside ``func`` (called from here), evaluated per request at node ``at`` of ``mod``.

        ``kw`` sets the call's ``bindings``, ``self_binds`` or ``arg_nodes``."""
        return Env(
            mod=mod,
            func=func,
            cls=cls,
            timing=Timing.REQUEST,
            pos=mod.pos(at),
            depth=self.depth + 1,
            active=(*self.active, id(func)),
            **kw,  # type: ignore[arg-type]
        )
