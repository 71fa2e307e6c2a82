"""The lint cache: per-file results keyed by path, mtime, size (content hash fallback) and dependencies.

Layout on disk, like ``.ruff_cache``::

    <cache-dir>/CACHEDIR.TAG
    <cache-dir>/.gitignore                      # "*"
    <cache-dir>/<version>/<settings fingerprint>/results.json

One JSON file per settings fingerprint keeps a warm run to a single read. It is written atomically
(temporary file + rename). Entries for files not seen for 30 days are dropped on write. The file also
records :func:`code_fingerprint` (prefixlint's own source files), so a developer who edits a rule
never gets results computed by the old code: a mismatch discards every entry.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint import __version__
from prefixlint.model.edits import Applicability, Edit, Fix
from prefixlint.model.files import file_key, write_atomic
from prefixlint.model.findings import Finding, Impact, Severity
from prefixlint.model.layout import SourceLocation

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by prefixlint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_MAX_AGE_S = 30 * 24 * 3600
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_CODE_FINGERPRINT: list[str] = []


def code_fingerprint() -> str:
    """Hash of the sorted ``(path, size, mtime_ns)`` of prefixlint's own files and of the names and
    versions of installed third-party plugins, once per process.

    Covers every file of the installed package (``.py`` and data files, not ``__pycache__``): about
    130 ``stat`` calls, well under a millisecond, so it stays cheap on the warm path.
    """
    if not _CODE_FINGERPRINT:
        rows = []
        for dirpath, dirnames, filenames in os.walk(_PACKAGE_DIR):
            dirnames[:] = [d for d in dirnames if d != "__pycache__" and not d.startswith(".")]
            for name in filenames:
                if name.endswith((".pyc", ".pyo")):
                    continue
                full = os.path.join(dirpath, name)
                try:
                    st = os.stat(full)
                except OSError:
                    continue
                rows.append(f"{os.path.relpath(full, _PACKAGE_DIR)}\0{st.st_size}\0{st.st_mtime_ns}")
        rows.sort()
        rows.extend(third_party_plugins())
        digest = hashlib.blake2b("\n".join(rows).encode(), digest_size=8).hexdigest()
        _CODE_FINGERPRINT.append(f"{__version__}+{digest}")
    return _CODE_FINGERPRINT[0]


@functools.cache
def third_party_plugins() -> tuple[str, ...]:
    """``entry-point=distribution==version`` for each plugin installed from outside prefixlint."""
    from prefixlint.plugins.entry_points import entry_points

    found = set()
    # prefixlint.plugins.ENTRY_POINT_GROUP, spelt out: that module costs more to import than this.
    for ep in entry_points(group="prefixlint.plugins"):
        if ep.value.split(":", 1)[0].startswith("prefixlint."):
            continue
        found.add(f"{ep.name}={ep.dist}")
    return tuple(sorted(found))


# --- serialization ------------------------------------------------------------------------------
#
# Findings are stored compactly: a warm run decodes every cached finding, and JSON lists of plain
# values parse faster than objects. A location is ``[path, line, col, end_line, end_col]``; in a
# chain, one in the finding's own file leaves the path out (``[line, col, end_line, end_col]``).
# Any change to this format changes :func:`code_fingerprint`, which discards older cache files.

_IMPACT_FIELDS = tuple(f.name for f in dataclasses.fields(Impact))  # Impact(*values) order
_SEVERITIES = {s.value: s for s in Severity}
_APPLICABILITIES = {a.value: a for a in Applicability}


def location_to_list(loc: SourceLocation, same_path: str | None = None) -> list[Any]:
    """``loc`` as a list; without the path when it is ``same_path``."""
    if loc.path == same_path:
        return [loc.line, loc.col, loc.end_line, loc.end_col]
    return [loc.path, loc.line, loc.col, loc.end_line, loc.end_col]


def location_from_list(values: list[Any], same_path: str | None = None) -> SourceLocation:
    if len(values) == 4:
        return SourceLocation(same_path, *values)  # type: ignore[arg-type]
    return SourceLocation(*values)


def fix_to_list(fix: Fix) -> list[Any]:
    return [
        fix.message,
        [[e.start, e.end, e.content] for e in fix.edits],
        fix.applicability.value,
        fix.purpose,
        fix.path,
    ]


def fix_from_list(values: list[Any]) -> Fix:
    message, edits, applicability, purpose, path = values
    return Fix(
        message,
        tuple(Edit(start, end, content) for start, end, content in edits),
        _APPLICABILITIES.get(applicability) or Applicability(applicability),
        purpose,
        path,
    )


def impact_to_list(impact: Impact) -> list[Any]:
    return [getattr(impact, name) for name in _IMPACT_FIELDS]


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def finding_to_dict(f: Finding) -> dict[str, Any]:
    """``f`` as JSON-ready data for the cache (read back by :func:`finding_from_dict`)."""
    path = f.location.path
    return {
        "code": f.code,
        "message": f.message,
        "location": location_to_list(f.location),
        "severity": f.severity.value,
        "impact": impact_to_list(f.impact) if f.impact else None,
        "fix": fix_to_list(f.fix) if f.fix else None,
        "chain": [location_to_list(c, path) for c in f.chain],
        "confidence": f.confidence,
        "snippet": f.snippet,
        "rule_name": f.rule_name,
        "blocking": f.blocking,
        "extra": {k: _jsonable(v) for k, v in f.extra.items()},
    }


def finding_from_dict(d: dict[str, Any]) -> Finding:
    location = location_from_list(d["location"])
    severity = d.get("severity", "medium")
    impact = d.get("impact")
    fix = d.get("fix")
    return Finding(
        code=d["code"],
        message=d["message"],
        location=location,
        severity=_SEVERITIES.get(severity) or Severity(severity),
        impact=Impact(*impact) if impact else None,
        fix=fix_from_list(fix) if fix else None,
        chain=tuple(location_from_list(c, location.path) for c in d.get("chain", ())),
        confidence=d.get("confidence", 1.0),
        snippet=d.get("snippet", ""),
        rule_name=d.get("rule_name", ""),
        blocking=d.get("blocking", True),
        extra=d.get("extra", {}),
    )


# --- the cache ----------------------------------------------------------------------------------


def content_hash(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.blake2b(fh.read(), digest_size=16).hexdigest()
    except OSError:
        return None


@dataclass
class LintCache:
    """Results of one settings fingerprint, loaded once and saved once per run."""

    directory: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    dirty: bool = False
    now: float = field(default_factory=time.time)  # one clock reading per run for the ``seen`` stamps
    _dep_keys: dict[str, list[int] | None] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def open(cls, cache_dir: Path, fingerprint: str) -> LintCache:
        directory = cache_dir / __version__ / fingerprint
        cache = cls(directory)
        try:
            with open(directory / "results.json", "rb") as fh:
                data = json.loads(fh.read())
            if (
                isinstance(data, dict)
                and data.get("version") == __version__
                and data.get("code") == code_fingerprint()
                and isinstance(data.get("files"), dict)
            ):
                cache.entries = data["files"]
        except (OSError, ValueError):
            pass
        return cache

    def get(self, path: str) -> dict[str, Any] | None:
        """The cached result for ``path`` when the file and its dependencies are unchanged."""
        entry = self.entries.get(path)
        if entry is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = entry["key"]
        if st.st_mtime_ns != key[0] or st.st_size != key[1]:
            if st.st_size != key[1] or content_hash(path) != entry.get("hash"):
                return None
            entry["key"] = [st.st_mtime_ns, st.st_size]  # touched but identical: refresh the mtime
            self.dirty = True
        deps = entry.get("deps")
        if deps:
            known = self._dep_keys
            for dep, dep_key in deps.items():
                if dep not in known:
                    now = file_key(dep)
                    known[dep] = list(now) if now else None
                if known[dep] != dep_key:
                    return None
        if self.now - entry.get("seen", 0) > 24 * 3600:
            entry["seen"] = int(self.now)
            self.dirty = True
        return entry["result"]

    def put(self, path: str, result: dict[str, Any], dependencies: set[str] | list[str]) -> None:
        key = file_key(path)
        if key is None:
            return
        deps = {}
        for dep in dependencies:
            if dep == path:
                continue
            dk = file_key(dep)
            deps[dep] = list(dk) if dk else None
        self.entries[path] = {
            "key": [key[0], key[1]],
            "hash": content_hash(path),
            "deps": deps,
            "seen": int(time.time()),
            "result": result,
        }
        self.dirty = True

    def save(self) -> None:
        """Write the results atomically, with ``CACHEDIR.TAG`` and a ``.gitignore`` at the cache root."""
        if not self.dirty:
            return
        now = time.time()
        self.entries = {p: e for p, e in self.entries.items() if now - e.get("seen", now) < _MAX_AGE_S}
        root = self.directory.parent.parent
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tag = root / "CACHEDIR.TAG"
            if not tag.exists():
                tag.write_text(CACHEDIR_TAG, encoding="utf-8")
            ignore = root / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Automatically created by prefixlint.\n*\n", encoding="utf-8")
            payload = {"version": __version__, "code": code_fingerprint(), "files": self.entries}
            write_atomic(self.directory / "results.json", json.dumps(payload, separators=(",", ":")))
        except OSError:
            pass  # a read-only checkout must still lint; the cache is only an optimisation
        self.dirty = False
