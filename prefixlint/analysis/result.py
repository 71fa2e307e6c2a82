"""What an analyzer returns for one file."""

from __future__ import annotations

from dataclasses import dataclass, field

from prefixlint.model.layout import Layout, SourceLocation


@dataclass(frozen=True)
class AnalysisError:
    """A file that could not be analysed (syntax error, bad encoding, include loop...).

    ``code`` is the diagnostic code reported for it (``PFX001`` for unreadable or unparsable input).
    """

    location: SourceLocation
    message: str
    code: str = "PFX001"


@dataclass
class FileAnalysis:
    """Layouts found in one file, errors, and the other files the result depends on.

    ``dependencies`` lists every other file read while analysing this one (imported modules,
    templates, included templates); the lint cache invalidates the result when any of them changes.
    """

    path: str
    layouts: list[Layout] = field(default_factory=list)
    errors: list[AnalysisError] = field(default_factory=list)
    dependencies: set[str] = field(default_factory=set)
