"""The payload files of one directory, checked together.

They are samples of one template as often as not, so their requests are aligned and what varies
between them is reported. Their results are cached per file like any other, each depending on the
other files of the group, and are checked again together when any of them (or the group) changes.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence

from prefixlint.lint.checker import FileResult, check_source
from prefixlint.lint.discover import Target
from prefixlint.lint.payload_files import PAYLOAD
from prefixlint.model.findings import error_finding
from prefixlint.model.source_text import read_source


def payload_groups(targets: Sequence[Target]) -> list[list[Target]]:
    """Payload targets that share a directory and settings, where there are two or more."""
    by_dir: dict[tuple[str, int], list[Target]] = {}
    for t in targets:
        if t.kind == PAYLOAD:
            by_dir.setdefault((os.path.dirname(t.path), id(t.settings)), []).append(t)
    return [sorted(g, key=lambda t: t.path) for g in by_dir.values() if len(g) > 1]


def split_groups(
    targets: Sequence[Target], results: dict[str, FileResult], todo: list[Target]
) -> tuple[list[Target], list[list[Target]]]:
    """``todo`` without grouped payload files, and the groups to check again.

    A group whose members all came from the cache, each computed with exactly the other members as
    its group, stands; any other is checked again as a whole (its cached members are dropped).
    """
    stale: list[list[Target]] = []
    grouped: set[str] = set()
    for group in payload_groups(targets):
        paths = {t.path for t in group}
        grouped |= paths
        fresh = all(t.path in results and results[t.path].dependencies == paths - {t.path} for t in group)
        if not fresh:
            stale.append(group)
            for t in group:
                results.pop(t.path, None)
    return [t for t in todo if t.path not in grouped], stale


def check_group(group: Sequence[Target]) -> list[FileResult]:
    """Check the payload files of one directory together; never raises for bad input."""
    from prefixlint.analysis.payloads.analyze import analyze_payload_files

    settings = group[0].settings
    paths = {t.path for t in group}
    texts: dict[str, str] = {}
    out: list[FileResult] = []
    for t in group:
        text, err = read_source(t.path)
        if err is not None or text is None:
            out.append(FileResult(path=t.path, findings=[err] if err else []))
        else:
            texts[t.path] = text
    try:
        analyses = analyze_payload_files(texts.items(), settings)
    except Exception as exc:  # an analyzer bug: report it on every file, as check_source does
        message = f"Internal error while analysing this file: {type(exc).__name__}: {exc}"
        detail = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        for path in texts:
            out.append(FileResult(path=path, findings=[error_finding(path, message)], internal_error=detail))
        return out
    for path, text in texts.items():
        result = check_source(path, text, settings, PAYLOAD, analysis=analyses[path])
        out.append(result)
    for result in out:
        result.dependencies = paths - {result.path}
    return out
