"""Config files for ``prefixlint check``: discovery, reading and validation, and per-path settings.

Settings are found by walking up from a file to the nearest ``pyproject.toml`` that has a
``[tool.prefixlint]`` table (or a ``prefixlint.toml`` / ``.prefixlint.toml``, which take the same keys
at top level). They are validated with pydantic; a bad config raises :class:`ConfigError`, which the
command turns into a clear message and exit code 2.
"""

from __future__ import annotations

import re
import sys
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from prefixlint.model.settings import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_FILES = ("prefixlint.toml", ".prefixlint.toml")


class ConfigError(Exception):
    """A configuration file that cannot be read or does not validate."""

    def __init__(self, path: Path | str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = str(path)
        self.message = message


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, f"invalid TOML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot read: {exc}") from exc


def format_validation(exc: Any, option_names: bool = False) -> str:
    """A pydantic ``ValidationError`` as ``key: message`` pairs (``--key`` for command-line options)."""
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if option_names and err["loc"]:
            where = "--" + str(err["loc"][0]).replace("_", "-")
        lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def load_settings_file(path: Path) -> Settings:
    """Read and validate one config file (``pyproject.toml`` or ``prefixlint.toml``)."""
    data = _read_toml(path)
    table = data.get("tool", {}).get("prefixlint", {}) if path.name == "pyproject.toml" else data
    try:
        settings = Settings.model_validate(table)
    except ValueError as exc:  # pydantic's ValidationError
        if not hasattr(exc, "errors"):
            raise
        section = "[tool.prefixlint]" if path.name == "pyproject.toml" else ""
        raise ConfigError(path, f"{section} {format_validation(exc)}".strip()) from exc
    settings.root = str(path.parent.resolve())
    return settings


_TABLE_HEADER = re.compile(r"^[ \t]*\[\[?[ \t]*tool[ \t]*\.[ \t]*[\"']?prefixlint\b", re.MULTILINE)
_PASSED_OVER = "not used as a config (no [tool.prefixlint] table); files under it use the nearest valid one"
_DOTTED_KEY = re.compile(r"^[ \t]*tool[ \t]*\.[ \t]*prefixlint\b", re.MULTILINE)


def _pyproject_is_config(path: Path, warn: Callable[[str], None] | None = None) -> bool:
    """True when ``pyproject.toml`` at ``path`` holds a ``[tool.prefixlint]`` table.

    A file that is not valid TOML is the run's config (a :class:`ConfigError`) only when its text
    has a ``[tool.prefixlint...]`` header or a ``tool.prefixlint`` key; otherwise it is some other
    project's file (a cookiecutter template, a test fixture): ``warn`` is told, and it is passed over
    so that the files under it use the nearest valid config.
    """
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        if warn is not None:
            warn(f"{path}: cannot read ({exc}); {_PASSED_OVER}")
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        if _TABLE_HEADER.search(text) or _DOTTED_KEY.search(text):
            raise ConfigError(path, f"invalid TOML: {exc}") from exc
        if warn is not None:
            warn(f"{path}: invalid TOML ({exc}); {_PASSED_OVER}")
        return False
    tool = data.get("tool", {})
    return isinstance(tool, dict) and "prefixlint" in tool


def find_config_file(start: Path, warn: Callable[[str], None] | None = None) -> Path | None:
    """The nearest config file at or above ``start`` (a file or directory)."""
    here = start.resolve()
    if here.is_file() or not here.exists():
        here = here.parent
    for directory in (here, *here.parents):
        found = config_file_in(directory, warn)
        if found is not None:
            return found
    return None


@lru_cache(maxsize=256)
def _settings_for_config(path: str, mtime: float) -> Settings:
    return load_settings_file(Path(path))


def settings_for(start: Path) -> Settings:
    """Settings that apply to ``start``: the nearest config file's, or the defaults."""
    found = find_config_file(start)
    if found is None:
        settings = Settings()
        settings.root = str((start if start.is_dir() else start.parent).resolve())
        return settings
    return _settings_for_config(str(found), found.stat().st_mtime)


def deprecated_keys(path: Path) -> list[str]:
    """One warning per key of ``path``'s prefixlint table that is accepted but no longer read."""
    data = _read_toml(path)
    table = data.get("tool", {}).get("prefixlint", {}) if path.name == "pyproject.toml" else data
    thresholds = table.get("thresholds")
    if isinstance(thresholds, dict) and "low" in thresholds:
        return [f"{path}: `thresholds.low` is deprecated and no longer read; use `min-impact-tokens`"]
    return []


def load_settings_cached(path: Path) -> Settings:
    """:func:`load_settings_file`, memoised on the file's path and mtime (used by the runner)."""
    return _settings_for_config(str(path.resolve()), path.stat().st_mtime)


def config_file_in(directory: Path, warn: Callable[[str], None] | None = None) -> Path | None:
    """The config file that sits directly in ``directory``, if any (no walking up)."""
    for name in CONFIG_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    pyproject = directory / "pyproject.toml"
    if pyproject.is_file() and _pyproject_is_config(pyproject, warn):
        return pyproject
    return None


def apply_overrides(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """Settings with command-line overrides: ``extend_select`` and ``ignore`` add, the rest replaces."""
    if not overrides:
        return settings
    update: dict[str, Any] = {}
    for key, value in overrides.items():
        if value is None:
            continue
        if key in ("extend_select", "ignore", "extend_exclude"):
            update[key] = [*getattr(settings, key), *value]
        else:
            update[key] = value
    merged = settings.model_copy(update=update)
    # Validate the merged values (e.g. an unknown provider given on the command line).
    try:
        validated = Settings.model_validate(merged.model_dump(by_alias=False))
    except ValueError as exc:  # pydantic's ValidationError
        if not hasattr(exc, "errors"):
            raise
        raise ConfigError("command line", format_validation(exc, option_names=True)) from exc
    validated.root = settings.root
    return validated


class SettingsResolver:
    """Settings for any path: ``--config`` when given, else the nearest config file, plus overrides."""

    def __init__(self, config_file: Path | None = None, overrides: dict[str, Any] | None = None) -> None:
        self.config_file = config_file
        self.overrides = overrides or {}
        # config files passed over (see ``_pyproject_is_config``) and deprecated keys in those used
        self.warnings: list[str] = []
        self._by_dir: dict[Path, Settings] = {}
        self._fixed: Settings | None = None
        if config_file is not None:
            if not config_file.is_file():
                raise ConfigError(config_file, "config file not found")
            self._fixed = apply_overrides(load_settings_file(config_file), self.overrides)
            self.warnings += deprecated_keys(config_file)

    def for_path(self, path: Path) -> Settings:
        if self._fixed is not None:
            return self._fixed
        directory = path if path.is_dir() else path.parent
        return self._for_dir(directory.resolve())

    def _for_dir(self, directory: Path) -> Settings:
        hit = self._by_dir.get(directory)
        if hit is not None:
            return hit
        found = config_file_in(directory, self.warnings.append)
        if found is not None:
            settings = apply_overrides(load_settings_cached(found), self.overrides)
            self.warnings += deprecated_keys(found)
        elif directory.parent == directory:
            settings = Settings()
            settings.root = str(Path.cwd().resolve())
            settings = apply_overrides(settings, self.overrides)
        else:
            settings = self._for_dir(directory.parent)
        self._by_dir[directory] = settings
        return settings


# Settings are not hashable (pydantic models), so this memo is keyed by id() and holds the object
# (an id is only unique while its object lives); least recently used entries go first.
_FINGERPRINTS: OrderedDict[int, tuple[Settings, str]] = OrderedDict()
_MAX_FINGERPRINTS = 64


def fingerprint(settings: Settings) -> str:
    """``settings.fingerprint()``, computed once per settings object (thousands of files share one)."""
    hit = _FINGERPRINTS.get(id(settings))
    if hit is None or hit[0] is not settings:
        hit = _FINGERPRINTS[id(settings)] = (settings, settings.fingerprint())
        while len(_FINGERPRINTS) > _MAX_FINGERPRINTS:
            _FINGERPRINTS.popitem(last=False)
    else:
        _FINGERPRINTS.move_to_end(id(settings))
    return hit[1]
