"""The codes of every rule, without importing the rules on a warm run.

Selecting rules, validating ``--select``/``[tool.prefixlint]`` selectors and finding unused
suppressions need only the codes. Importing every rule module (and the plugins) to learn them costs
about 0.1 s, a fifth of a warm run, so the codes are kept in ``<user cache>/prefixlint/rules.json``,
keyed by :func:`prefixlint.lint.result_cache.code_fingerprint` (any edit to prefixlint rebuilds it).
The file is used only when no third-party plugin is installed and no rule is registered in this process yet;
otherwise the real registry answers.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

from prefixlint.lint.config import ConfigError
from prefixlint.lint.result_cache import code_fingerprint, third_party_plugins
from prefixlint.model.files import user_cache_dir, write_atomic
from prefixlint.model.settings import Settings
from prefixlint.rules.selection import is_selected

_CODES: list[str] = []


def _user_cache_file() -> Path:
    return user_cache_dir() / "rules.json"


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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"key": key, "codes": codes}))
    except OSError:
        pass  # a read-only cache home: the codes are computed again next time
    return codes


def selected_codes(settings: Settings, path_ignores: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Codes enabled by select/extend-select minus ignore and per-file ignores."""
    return [code for code in rule_codes() if is_selected(code, settings, path_ignores)]


def check_selectors(selectors: Iterable[str], where: str) -> None:
    """Raise :class:`ConfigError` naming ``where`` for a selector that matches no rule code."""
    codes = rule_codes()
    for s in selectors:
        if s != "ALL" and not any(c.startswith(s) for c in codes):
            raise ConfigError(where, f"unknown rule selector {s!r} (see `prefixlint rules`)")


def validate_settings(all_settings: Iterable[Settings]) -> None:
    """Check the selectors of each distinct settings object (thousands of files share one)."""
    seen: set[int] = set()
    for settings in all_settings:
        if id(settings) in seen:
            continue
        seen.add(id(settings))
        where = f"{settings.root}: [tool.prefixlint]" if settings.root else "settings"
        check_selectors([*settings.select, *settings.extend_select, *settings.ignore], where)
