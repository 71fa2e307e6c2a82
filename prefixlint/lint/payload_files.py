"""Which files a lint run reads as request payloads.

A JSON or JSON Lines file is read as a payload when a ``payload-globs`` glob names it, or when a cheap
look at its first keys shows a request shape (:mod:`prefixlint.analysis.payloads.sniff`). Other JSON
files cost one short read and are skipped silently. A file named on the command line is also read
when ``payload-shape`` forces a shape.
"""

from __future__ import annotations

from prefixlint.model.globs import glob_match
from prefixlint.model.settings import Settings

PAYLOAD = "payload"


def payload_glob_matches(path: str, settings: Settings) -> bool:
    """True when a ``payload-globs`` entry names ``path``: the config's one glob dialect
    (gitignore patterns relative to the config's folder, :mod:`prefixlint.model.globs`)."""
    return glob_match(settings.payload_globs, path, settings.root)


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
