"""Which files a lint run reads as request payloads.

A JSON or JSON Lines file is read as a payload when a ``payload-globs`` glob names it, or when a cheap
look at its first keys shows a request shape (:mod:`prefixlint.analysis.payloads.sniff`). Other JSON
files cost one short read and are skipped silently. A file named on the command line is also read
when ``payload-shape`` forces a shape.
"""

from __future__ import annotations

import fnmatch

from prefixlint.model.settings import Settings

PAYLOAD = "payload"


def payload_glob_matches(path: str, settings: Settings) -> bool:
    """True when a ``payload-globs`` entry names ``path`` (by its last component, as template globs)."""
    if not settings.payload_globs:
        return False
    name = path.rsplit("/", 1)[-1]
    rel = _relative(path, settings)
    for glob in settings.payload_globs:
        if fnmatch.fnmatchcase(name, glob.rsplit("/", 1)[-1]) and (
            "/" not in glob or rel is None or fnmatch.fnmatchcase(rel, glob.lstrip("/"))
        ):
            return True
    return False


def _relative(path: str, settings: Settings) -> str | None:
    if not settings.root:
        return None
    root = settings.root.rstrip("/") + "/"
    return path[len(root) :] if path.startswith(root) else None


def payload_kind(path: str, settings: Settings, named: bool = False) -> str | None:
    """``payload`` when ``path`` is read as a request payload file, else None.

    ``named``: the file was given on the command line (a forced ``payload-shape`` then reads any
    JSON file as a payload).
    """
    from prefixlint.analysis.payloads.sniff import JSON_SUFFIXES, looks_like_request_file

    if payload_glob_matches(path, settings):
        return PAYLOAD
    if not path.endswith(JSON_SUFFIXES):
        return None
    if named and settings.payload_shape != "auto":
        return PAYLOAD
    return PAYLOAD if looks_like_request_file(path) else None
