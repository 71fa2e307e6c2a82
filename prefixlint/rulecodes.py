"""The codes of every rule, without importing the rules on a warm run.

Selecting rules, validating ``--select``/``[tool.prefixlint]`` selectors and finding unused
suppressions need only the codes. Importing every rule module (and the plugins) to learn them costs
about 0.1 s, a fifth of a warm run, so the codes are kept in ``<user cache>/prefixlint/rules.json``,
keyed by :func:`prefixlint.cache.code_fingerprint` (any edit to prefixlint rebuilds it). The file is
used only when no third-party plugin is installed and no rule is registered in this process yet;
otherwise the real registry answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

from prefixlint.cache import code_fingerprint, third_party_plugins

_CODES: list[str] = []


def _user_cache_file() -> Path:
    root = os.environ.get("PREFIXLINT_CACHE_HOME") or os.environ.get("XDG_CACHE_HOME")
    base = Path(root) if root else Path.home() / ".cache"
    return base / "prefixlint" / "rules.json"


def _registry_codes() -> list[str]:
    from prefixlint.rules.base import all_rules

    return [r.code for r in all_rules()]


def rule_codes() -> list[str]:
    """Every registered rule code, sorted (built-ins and plugin rules)."""
    base = sys.modules.get("prefixlint.rules.base")
    if base is not None and getattr(base, "_REGISTRY", None):
        return _registry_codes()  # rules may have been registered in this process: ask the registry
    if _CODES:
        return list(_CODES)
    if third_party_plugins():
        return _registry_codes()
    path = _user_cache_file()
    key = code_fingerprint()
    try:
        data = json.loads(path.read_text("utf-8"))
        if data.get("key") == key and isinstance(data.get("codes"), list) and data["codes"]:
            _CODES[:] = [str(c) for c in data["codes"]]
            return list(_CODES)
    except (OSError, ValueError, AttributeError):
        pass
    codes = _registry_codes()
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rules.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"key": key, "codes": codes}, fh)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return codes


def selector_matches(selector: str, code: str) -> bool:
    """Ruff-style selection: ``ALL``, a full code, or any prefix of it (as in ``rules.base``)."""
    selector = selector.upper()
    return selector == "ALL" or code.startswith(selector)


def selected_codes(settings: object, path_ignores: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Codes enabled by select/extend-select minus ignore and per-file ignores (``iter_selected``)."""
    ignores = [*settings.ignore, *path_ignores]  # type: ignore[attr-defined]
    selects = [*settings.select, *settings.extend_select]  # type: ignore[attr-defined]
    return [
        code
        for code in rule_codes()
        if any(selector_matches(s, code) for s in selects)
        and not any(selector_matches(i, code) for i in ignores)
    ]
