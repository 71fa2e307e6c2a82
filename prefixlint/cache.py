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

import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint import __version__
from prefixlint.diagnostics import Finding, Impact, Severity
from prefixlint.edits import Applicability, Edit, Fix
from prefixlint.layout import SourceLocation

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by prefixlint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_MAX_AGE_S = 30 * 24 * 3600
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_CODE_FINGERPRINT: list[str] = []


def code_fingerprint() -> str:
    """Hash of the sorted ``(path, size, mtime_ns)`` of prefixlint's own files, once per process.

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
        digest = hashlib.blake2b("\n".join(rows).encode(), digest_size=8).hexdigest()
        _CODE_FINGERPRINT.append(f"{__version__}+{digest}")
    return _CODE_FINGERPRINT[0]


# --- serialization ------------------------------------------------------------------------------


def location_to_dict(loc: SourceLocation) -> dict[str, Any]:
    return {
        "path": loc.path,
        "line": loc.line,
        "col": loc.col,
        "end_line": loc.end_line,
        "end_col": loc.end_col,
    }


def location_from_dict(d: dict[str, Any]) -> SourceLocation:
    return SourceLocation(d["path"], d["line"], d.get("col", 0), d.get("end_line"), d.get("end_col"))


def fix_to_dict(fix: Fix) -> dict[str, Any]:
    return {
        "message": fix.message,
        "applicability": fix.applicability.value,
        "purpose": fix.purpose,
        "path": fix.path,
        "edits": [{"start": e.start, "end": e.end, "content": e.content} for e in fix.edits],
    }


def fix_from_dict(d: dict[str, Any]) -> Fix:
    return Fix(
        message=d["message"],
        edits=tuple(Edit(e["start"], e["end"], e["content"]) for e in d["edits"]),
        applicability=Applicability(d["applicability"]),
        purpose=d.get("purpose", ""),
        path=d.get("path", ""),
    )


def impact_to_dict(impact: Impact) -> dict[str, Any]:
    return {
        "tokens_lost": impact.tokens_lost,
        "prefix_tokens": impact.prefix_tokens,
        "reaches_minimum": impact.reaches_minimum,
        "minimum": impact.minimum,
        "exact": impact.exact,
        "encoding": impact.encoding,
        "history_priced": impact.history_priced,
    }


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def finding_to_dict(f: Finding) -> dict[str, Any]:
    return {
        "code": f.code,
        "message": f.message,
        "location": location_to_dict(f.location),
        "severity": f.severity.value,
        "impact": impact_to_dict(f.impact) if f.impact else None,
        "fix": fix_to_dict(f.fix) if f.fix else None,
        "chain": [location_to_dict(c) for c in f.chain],
        "confidence": f.confidence,
        "snippet": f.snippet,
        "rule_name": f.rule_name,
        "extra": {k: _jsonable(v) for k, v in f.extra.items()},
    }


def finding_from_dict(d: dict[str, Any]) -> Finding:
    return Finding(
        code=d["code"],
        message=d["message"],
        location=location_from_dict(d["location"]),
        severity=Severity(d.get("severity", "medium")),
        impact=Impact(**d["impact"]) if d.get("impact") else None,
        fix=fix_from_dict(d["fix"]) if d.get("fix") else None,
        chain=tuple(location_from_dict(c) for c in d.get("chain", [])),
        confidence=d.get("confidence", 1.0),
        snippet=d.get("snippet", ""),
        rule_name=d.get("rule_name", ""),
        extra=d.get("extra", {}),
    )


# --- the cache ----------------------------------------------------------------------------------


def file_key(path: str) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of ``path``, or None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


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

    @classmethod
    def open(cls, cache_dir: Path, fingerprint: str) -> LintCache:
        directory = cache_dir / __version__ / fingerprint
        cache = cls(directory)
        try:
            with open(directory / "results.json", encoding="utf-8") as fh:
                data = json.load(fh)
            if (
                isinstance(data, dict)
                and data.get("version") == __version__
                and data.get("code") == code_fingerprint()
            ):
                cache.entries = data.get("files", {})
        except (OSError, ValueError):
            pass
        return cache

    def get(self, path: str) -> dict[str, Any] | None:
        """The cached result for ``path`` when the file and its dependencies are unchanged."""
        entry = self.entries.get(path)
        if entry is None:
            return None
        key = file_key(path)
        if key is None:
            return None
        if [key[0], key[1]] != entry["key"]:
            if key[1] != entry["key"][1] or content_hash(path) != entry.get("hash"):
                return None
            entry["key"] = [key[0], key[1]]  # touched but identical: refresh the mtime
            self.dirty = True
        for dep, dep_key in entry.get("deps", {}).items():
            now = file_key(dep)
            if (list(now) if now else None) != dep_key:
                return None
        if time.time() - entry.get("seen", 0) > 24 * 3600:
            entry["seen"] = int(time.time())
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
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".results.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(
                    {"version": __version__, "code": code_fingerprint(), "files": self.entries},
                    fh,
                    separators=(",", ":"),
                )
            os.replace(tmp, self.directory / "results.json")
        except OSError:
            # A read-only checkout must still lint; the cache is only an optimisation.
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)
        self.dirty = False
