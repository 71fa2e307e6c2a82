"""Which rule codes a run enables: ruff's selection model (``select``, ``extend-select``, ``ignore``)."""

from __future__ import annotations

from collections.abc import Iterable

from prefixlint.model.settings import Settings


def selector_matches(selector: str, code: str) -> bool:
    """Ruff-style selection: ``ALL``, a full code, or any prefix of it."""
    selector = selector.upper()
    return selector == "ALL" or code.startswith(selector)


def is_selected(code: str, settings: Settings, path_ignores: Iterable[str] = ()) -> bool:
    """True when select/extend-select enable ``code`` and neither ignore nor per-file ignores drop it."""
    if not any(selector_matches(s, code) for s in (*settings.select, *settings.extend_select)):
        return False
    return not any(selector_matches(i, code) for i in (*settings.ignore, *path_ignores))
