"""The rule base class, its examples, and the registry.

A rule is one class in one module of :mod:`prefixlint.rules`. Its docstring is its documentation;
``VALID`` and ``INVALID`` hold examples that the test suite runs through the whole checker, so a rule
cannot drift from what it claims. Rules read layouts (never libcst or jinja2 trees) and return
findings; they never write files.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from prefixlint.model.edits import Applicability
from prefixlint.model.findings import Finding, Impact, Severity
from prefixlint.model.layout import Layout, SourceLocation
from prefixlint.model.settings import Settings
from prefixlint.rules.selection import is_selected

CODE_RE = re.compile(r"^PFX\d{3}$")


@dataclass(frozen=True)
class Example:
    """A rule example: one or more files, checked together as a small project.

    ``code`` is the main file's text, named ``path``. ``files`` adds other files of the project
    (e.g. ``prompts.py`` or ``templates/system.j2``). For an invalid example, ``line`` is the
    expected 1-based line of the finding in ``path``, ``col`` and ``end_col`` its 1-based column
    range as ``prefixlint check`` prints it (``end_line`` when it ends on another line), all
    checked when given; ``fixed`` is the expected text of ``path`` after ``prefixlint check --fix``
    (``--unsafe-fixes`` too when ``unsafe=True``). The test suite also keeps a snapshot of every
    finding of every example (``tests/__snapshots__/test_rule_examples.ambr``).
    """

    code: str
    path: str = "example.py"
    files: dict[str, str] = field(default_factory=dict)
    line: int | None = None
    col: int | None = None
    end_line: int | None = None
    end_col: int | None = None
    fixed: str | None = None
    unsafe: bool = False
    provider: str | None = None
    model: str | None = None
    note: str = ""


@dataclass
class RuleContext:
    """What a rule may read besides the layout."""

    settings: Settings
    path: str = ""
    source: str = ""


_REGISTRY: dict[str, type[Rule]] = {}


class Rule:
    """Base class. Subclasses set the class attributes and implement :meth:`check`."""

    code: ClassVar[str]
    name: ClassVar[str]
    fix_applicability: ClassVar[Applicability | None] = None
    default_severity: ClassVar[Severity] = Severity.MEDIUM
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.isabstract(cls) or not getattr(cls, "code", None):
            return
        if not CODE_RE.match(cls.code):
            raise ValueError(f"{cls.__name__}: rule code {cls.code!r} must look like PFX123")
        if cls.code in _REGISTRY and _REGISTRY[cls.code] is not cls:
            other = _REGISTRY[cls.code].__name__
            raise ValueError(f"duplicate rule code {cls.code}: {cls.__name__} and {other}")
        _REGISTRY[cls.code] = cls

    @classmethod
    def summary(cls) -> str:
        """First line of the docstring."""
        return (inspect.getdoc(cls) or "").strip().splitlines()[0] if cls.__doc__ else ""

    @classmethod
    def documentation(cls) -> str:
        """The whole docstring: what it flags, why, and how to fix it."""
        return inspect.getdoc(cls) or ""

    def check(self, layout: Layout, ctx: RuleContext) -> Iterable[Finding]:
        """Findings for one layout."""
        raise NotImplementedError

    # Helpers for subclasses -------------------------------------------------------------------

    def finding(
        self,
        location: SourceLocation,
        impact: Impact | None,
        ctx: RuleContext,
        message: str,
        cap: Severity | None = None,
    ) -> Finding:
        """A finding of this rule with severity derived from ``impact``, the thresholds and ``cap``."""
        return Finding(
            code=self.code,
            message=message,
            location=location,
            severity=severity_for(impact, ctx.settings, self.default_severity, cap),
            impact=impact,
            rule_name=self.name,
        )


def severity_for(
    impact: Impact | None, settings: Settings, default: Severity, cap: Severity | None = None
) -> Severity:
    """The severity of a finding that costs ``impact``.

    Informational (``INFO``, not failing the run) when fewer than ``min-impact-tokens`` tokens are at
    stake (:attr:`Impact.at_stake`: none when the prompt can never reach the provider's minimum).
    Otherwise the tokens lost against ``thresholds`` (``high``, ``medium``, else low), never above
    the rule's ``default`` nor above ``cap`` (the cost model of the value: a date, a value with a few
    texts, one per user), and never below low.
    """
    if impact is None:
        return default
    if impact.at_stake < settings.min_impact_tokens:
        return Severity.INFO
    t = settings.thresholds
    lost = impact.tokens_lost
    sev = Severity.HIGH if lost >= t.high else Severity.MEDIUM if lost >= t.medium else Severity.LOW
    for ceiling in (default, cap):
        if ceiling is not None and sev.rank > ceiling.rank:
            sev = ceiling
    return sev if sev.rank >= Severity.LOW.rank else Severity.LOW


@functools.cache
def load_builtin_rules() -> None:
    """Import every module of :mod:`prefixlint.rules` so their classes register (once)."""
    import importlib
    import pkgutil

    import prefixlint.rules as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{pkg.__name__}.{info.name}")


def all_rules() -> list[type[Rule]]:
    """Every registered rule class, sorted by code (built-ins and plugin rules)."""
    load_builtin_rules()
    from prefixlint.plugins import load_plugins

    load_plugins()
    return [_REGISTRY[c] for c in sorted(_REGISTRY)]


def get_rule(code: str) -> type[Rule] | None:
    """The rule with ``code`` (case-insensitive), or None."""
    all_rules()
    return _REGISTRY.get(code.upper())


def iter_selected(settings: Settings, path_ignores: Iterable[str] = ()) -> Iterator[type[Rule]]:
    """Rules enabled by select/extend-select minus ignore and per-file ignores."""
    ignores = tuple(path_ignores)
    return (rule for rule in all_rules() if is_selected(rule.code, settings, ignores))
