"""The package's data files: provider facts (``providers.toml``) and the catalog of dynamic values
(``catalog.toml``)."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def data_text(name: str) -> str:
    """The text of data file ``name``.

    Read from the package folder when it is one (``importlib.resources`` imports about ten modules
    and a zip reader, a few milliseconds of every one-file check), through ``importlib.resources``
    when the package is not a folder on disk (a zipped install).
    """
    try:
        return Path(__file__).with_name(name).read_text("utf-8")
    except OSError:
        from importlib import resources

        return resources.files(__name__).joinpath(name).read_text("utf-8")


@cache
def data_toml(name: str) -> dict[str, Any]:
    """Data file ``name`` parsed, once per process (the caller must not change it)."""
    return tomllib.loads(data_text(name))
