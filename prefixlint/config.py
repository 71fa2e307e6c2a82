"""``[tool.prefixlint]`` settings: schema, discovery and validation.

Settings are found by walking up from a file to the nearest ``pyproject.toml`` that has a
``[tool.prefixlint]`` table (or a ``prefixlint.toml`` / ``.prefixlint.toml``, which take the same keys
at top level). They are validated with pydantic; a bad config raises :class:`ConfigError`, which the
CLI turns into a clear message and exit code 2.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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


class Thresholds(BaseModel):
    """Severity follows the number of tokens a finding costs."""

    model_config = ConfigDict(extra="forbid")

    high: int = Field(1024, ge=0, description="tokens lost at or above which a finding is high")
    medium: int = Field(256, ge=0, description="tokens lost at or above which a finding is medium")
    low: int = Field(32, ge=0, description="tokens lost at or above which a finding is low (else info)")


class DynamicSource(BaseModel):
    """A project-specific call or name that yields a per-request value."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(description="dotted call name (glob allowed) or variable name regex")
    kind: str = Field("unknown", description="a DynamicKind value, e.g. timestamp or user_identity")
    match: Literal["call", "name"] = "call"


class ExtraSink(BaseModel):
    """A project-specific call that sends a prompt to a model."""

    model_config = ConfigDict(extra="forbid")

    call: str = Field(description="dotted call name or suffix, e.g. 'myllm.chat' or '*.ask_model'")
    provider: str = "openai"
    system: str | None = Field(None, description="keyword holding the system prompt")
    messages: str | None = Field(None, description="keyword holding the message list")
    prompt: str | None = Field(None, description="keyword holding a single prompt string")
    tools: str | None = None


class Settings(BaseModel):
    """Everything ``[tool.prefixlint]`` may contain."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    select: list[str] = Field(default_factory=lambda: ["PFX"])
    extend_select: list[str] = Field(default_factory=list, alias="extend-select")
    ignore: list[str] = Field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = Field(default_factory=dict, alias="per-file-ignores")
    exclude: list[str] = Field(default_factory=list)
    extend_exclude: list[str] = Field(default_factory=list, alias="extend-exclude")
    respect_gitignore: bool = Field(True, alias="respect-gitignore")
    provider: str = "openai"
    model: str | None = "gpt-4.1"
    thresholds: Thresholds = Field(default_factory=Thresholds)
    template_globs: list[str] = Field(
        default_factory=lambda: ["*.j2", "*.jinja", "*.jinja2", "*.prompty", "*.prompt"],
        alias="template-globs",
    )
    plain_prompt_globs: list[str] = Field(
        default_factory=list,
        alias="plain-prompt-globs",
        description="extra globs of plain-text prompt files, e.g. ['prompts/*.txt', 'prompts/*.md']",
    )
    dynamic_sources: list[DynamicSource] = Field(default_factory=list, alias="dynamic-sources")
    sinks: list[ExtraSink] = Field(default_factory=list)
    unsafe_fixes: bool = Field(False, alias="unsafe-fixes")
    fixable: list[str] = Field(default_factory=lambda: ["ALL"])
    unfixable: list[str] = Field(default_factory=list)
    cache_dir: str = Field(".prefixlint_cache", alias="cache-dir")
    root: str | None = Field(None, exclude=True, description="directory the config was found in")

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        from prefixlint.providers import provider_names

        if value.lower() not in provider_names():
            raise ValueError(f"unknown provider {value!r}; expected one of {', '.join(provider_names())}")
        return value.lower()

    @field_validator("select", "extend_select", "ignore", "fixable", "unfixable")
    @classmethod
    def _codes_upper(cls, value: list[str]) -> list[str]:
        return [v.strip().upper() for v in value]

    def fingerprint(self) -> str:
        """A stable hash of these settings, part of the lint cache key."""
        import hashlib

        return hashlib.sha256(self.model_dump_json(by_alias=True).encode()).hexdigest()[:16]


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, f"invalid TOML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot read: {exc}") from exc


def _format_validation(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def load_settings_file(path: Path) -> Settings:
    """Read and validate one config file (``pyproject.toml`` or ``prefixlint.toml``)."""
    data = _read_toml(path)
    table = data.get("tool", {}).get("prefixlint", {}) if path.name == "pyproject.toml" else data
    try:
        settings = Settings.model_validate(table)
    except ValidationError as exc:
        section = "[tool.prefixlint]" if path.name == "pyproject.toml" else ""
        raise ConfigError(path, f"{section} {_format_validation(exc)}".strip()) from exc
    settings.root = str(path.parent.resolve())
    return settings


def find_config_file(start: Path) -> Path | None:
    """The nearest config file at or above ``start`` (a file or directory)."""
    here = start.resolve()
    if here.is_file() or not here.exists():
        here = here.parent
    for directory in (here, *here.parents):
        for name in CONFIG_FILES:
            candidate = directory / name
            if candidate.is_file():
                return candidate
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            data = _read_toml(pyproject)
            if "prefixlint" in data.get("tool", {}):
                return pyproject
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


def load_settings_cached(path: Path) -> Settings:
    """:func:`load_settings_file`, memoised on the file's path and mtime (used by the runner)."""
    return _settings_for_config(str(path.resolve()), path.stat().st_mtime)


def config_file_in(directory: Path) -> Path | None:
    """The config file that sits directly in ``directory``, if any (no walking up)."""
    for name in CONFIG_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    pyproject = directory / "pyproject.toml"
    if pyproject.is_file() and "prefixlint" in _read_toml(pyproject).get("tool", {}):
        return pyproject
    return None
