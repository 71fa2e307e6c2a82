"""The evaluator's per-file memo: what text an expression builds in one environment, computed once.

A prompt built from helpers that call helpers asks for the same expressions again and again: every
use of a local name replays the assignments before it, and each replay evaluates the same calls with
the same bound arguments. :class:`TextMemo` keeps each answer by the node and everything of its
:class:`~prefixlint.analysis.python.env.Env` and evaluator state the answer can depend on.

An answer is only kept when it is a function of that key. Summaries shared across a run (a
constant, what callers pass for a parameter) hand back a stand-in while they are being computed, to
break cycles; an answer that read such a stand-in depends on what was in progress, not on its key,
and is computed again next time (:meth:`TextMemo.unsettled`). Templates chosen at run time that an
answer recorded (see :mod:`.templating`) are recorded again when it is reused.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from prefixlint.analysis.python.env import Env
from prefixlint.model.layout import Segment


def _ident(d: dict) -> int:
    """A dict's part of a key: its identity (bindings are never changed once made), 0 when empty."""
    return id(d) if d else 0


class TextMemo:
    """Answers of ``Evaluator.text`` for one file's analysis, with what they recorded."""

    def __init__(self) -> None:
        # key -> (node and env, kept alive so that the ids in the key stay theirs; the segments;
        # the template choices recorded while computing them)
        self._answers: dict[tuple, tuple[Any, list[Segment], list[Any]]] = {}
        self._unsettled = 0
        self.choices: list[Any] = []  # every run-time template choice recorded, in order

    def key(self, node: cst.CSTNode, env: Env, state: tuple) -> tuple:
        return (
            id(node),
            id(env.mod),
            id(env.func),
            id(env.cls),
            _ident(env.bindings),
            env.timing,
            env.pos,
            env.depth,
            env.active,
            _ident(env.self_binds),
            _ident(env.arg_nodes),
            state,
        )

    def get(self, key: tuple) -> tuple[list[Segment], list[Any]] | None:
        hit = self._answers.get(key)
        return None if hit is None else (list(hit[1]), hit[2])

    def mark(self) -> tuple[int, int]:
        """Where an answer's computation starts (see :meth:`put`)."""
        return self._unsettled, len(self.choices)

    def put(self, key: tuple, keep: Any, segs: list[Segment], mark: tuple[int, int]) -> None:
        """Keep ``segs`` unless a stand-in was read since ``mark``."""
        if self._unsettled == mark[0]:
            self._answers[key] = (keep, list(segs), self.choices[mark[1] :])

    def unsettled(self) -> None:
        """A stand-in for a summary still being computed was read: answers in progress are not kept."""
        self._unsettled += 1
