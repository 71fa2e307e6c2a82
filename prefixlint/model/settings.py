"""The settings every stage reads: what ``[tool.prefixlint]`` may contain, as a plain object.

A warm run never imports pydantic: values of the expected types are taken as they are, anything else
goes to the pydantic schema in :mod:`prefixlint.model.settings_schema`, whose errors are the usual
ones. Reading config files is the ``check`` command's job (:mod:`prefixlint.lint.config`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal


@dataclass
class Thresholds:
    """Severity follows the number of tokens a finding costs (``low`` is no longer read: a finding
    below ``min-impact-tokens`` is informational, any other one is at least low)."""

    high: int = 1024
    medium: int = 256
    low: int = 32


# Tokens at stake below which a finding is informational: shown, but not failing the run. About a
# paragraph of instructions; the minimum cacheable length itself is judged separately (a prompt that
# can never reach it has nothing at stake).
DEFAULT_MIN_IMPACT_TOKENS = 100


@dataclass
class DynamicSource:
    """A project-specific call or name that yields a per-request value."""

    pattern: str
    kind: str = "unknown"
    match: Literal["call", "name"] = "call"


@dataclass
class ExtraSink:
    """A project-specific call that sends a prompt to a model."""

    call: str
    provider: str = "openai"
    system: str | None = None
    messages: str | None = None
    prompt: str | None = None
    tools: str | None = None


# (field, alias, default factory) in declaration order; the schema itself, with its validation
# messages, is the pydantic model in :mod:`prefixlint.model.settings_schema`.
_FIELDS: tuple[tuple[str, str, Callable[[], Any]], ...] = (
    ("select", "select", lambda: ["PFX"]),
    ("extend_select", "extend-select", list),
    ("ignore", "ignore", list),
    ("per_file_ignores", "per-file-ignores", dict),
    ("exclude", "exclude", list),
    ("extend_exclude", "extend-exclude", list),
    ("respect_gitignore", "respect-gitignore", lambda: True),
    ("provider", "provider", lambda: "openai"),
    ("model", "model", lambda: "gpt-4.1"),
    ("thresholds", "thresholds", Thresholds),
    ("min_impact_tokens", "min-impact-tokens", lambda: DEFAULT_MIN_IMPACT_TOKENS),
    ("template_globs", "template-globs", lambda: ["*.j2", "*.jinja", "*.jinja2", "*.prompty", "*.prompt"]),
    ("plain_prompt_globs", "plain-prompt-globs", list),
    ("payload_globs", "payload-globs", list),
    ("payload_shape", "payload-shape", lambda: "auto"),
    ("dynamic_sources", "dynamic-sources", list),
    ("sinks", "sinks", list),
    ("unsafe_fixes", "unsafe-fixes", lambda: False),
    ("fixable", "fixable", lambda: ["ALL"]),
    ("unfixable", "unfixable", list),
    ("cache_dir", "cache-dir", lambda: ".prefixlint_cache"),
)
_ALIAS_TO_FIELD = {alias: name for name, alias, _ in _FIELDS} | {name: name for name, _, _ in _FIELDS}
_CODE_FIELDS = frozenset({"select", "extend_select", "ignore", "fixable", "unfixable"})
_STR_LIST_FIELDS = _CODE_FIELDS | {
    "exclude",
    "extend_exclude",
    "template_globs",
    "plain_prompt_globs",
    "payload_globs",
}
# Request shapes a payload file may be forced to (``auto`` detects it per payload).
PAYLOAD_SHAPES = ("auto", "chat", "responses", "messages")


class Settings:
    """Everything ``[tool.prefixlint]`` may contain.

    A plain object, so a warm run never imports pydantic: values of the expected types are taken as
    they are, anything else (or an unknown key) is validated by the pydantic schema in
    :mod:`prefixlint.model.settings_schema`, which raises its ``ValidationError`` with the usual messages.
    ``root`` is the directory the config was found in (not part of the dump or the fingerprint).
    """

    select: list[str]
    extend_select: list[str]
    ignore: list[str]
    per_file_ignores: dict[str, list[str]]
    exclude: list[str]
    extend_exclude: list[str]
    respect_gitignore: bool
    provider: str
    model: str | None
    thresholds: Thresholds
    min_impact_tokens: int
    template_globs: list[str]
    plain_prompt_globs: list[str]
    payload_globs: list[str]
    payload_shape: str
    dynamic_sources: list[DynamicSource]
    sinks: list[ExtraSink]
    unsafe_fixes: bool
    fixable: list[str]
    unfixable: list[str]
    cache_dir: str
    root: str | None

    __hash__ = None  # type: ignore[assignment]  # mutable, like the pydantic model it replaces

    def __init__(self, **data: Any) -> None:
        values = _fast_values(data)
        if values is None:
            values = _schema_values(data)
        self.__dict__.update(values)

    @classmethod
    def model_validate(cls, obj: Any) -> Settings:
        """Validate a mapping (keys by name or alias), like pydantic's ``model_validate``."""
        if isinstance(obj, Settings):
            return obj
        if not isinstance(obj, dict):
            values = _schema_values(obj)
            out = cls.__new__(cls)
            out.__dict__.update(values)
            return out
        return cls(**obj)

    def model_copy(self, update: dict[str, Any] | None = None) -> Settings:
        """A shallow copy with ``update`` applied unvalidated (like pydantic's ``model_copy``)."""
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        if update:
            out.__dict__.update(update)
        return out

    def model_dump(self, by_alias: bool = False) -> dict[str, Any]:
        """Plain data of every field but ``root``, keyed by name (or by alias)."""
        out: dict[str, Any] = {}
        for name, alias, _ in _FIELDS:
            value = self.__dict__[name]
            if name == "thresholds" or name in ("dynamic_sources", "sinks"):
                value = _plain(value)
            else:
                value = copy.deepcopy(value)
            out[alias if by_alias else name] = value
        return out

    def model_dump_json(self, by_alias: bool = False) -> str:
        return json.dumps(self.model_dump(by_alias=by_alias), separators=(",", ":"))

    def fingerprint(self) -> str:
        """A stable hash of these settings, part of the lint cache key."""
        import hashlib

        return hashlib.sha256(self.model_dump_json(by_alias=True).encode()).hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Settings):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"Settings({body})"


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return copy.deepcopy(value)


def _defaults() -> dict[str, Any]:
    values = {name: factory() for name, _, factory in _FIELDS}
    values["root"] = None
    return values


def _is_str_list(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def _fast_values(data: dict[str, Any]) -> dict[str, Any] | None:
    """Field values when ``data`` has only known keys with values of exactly the expected types.

    Anything else returns None, and the pydantic schema decides (and words the error).
    """
    values = _defaults()
    seen: set[str] = set()
    for key, value in data.items():
        if key == "root":
            if value is not None and type(value) is not str:
                return None
            values["root"] = value
            continue
        name = _ALIAS_TO_FIELD.get(key)
        if name is None or name in seen:
            return None
        seen.add(name)
        if name in _STR_LIST_FIELDS:
            if not _is_str_list(value):
                return None
            value = [v.strip().upper() for v in value] if name in _CODE_FIELDS else list(value)
        elif name in ("respect_gitignore", "unsafe_fixes"):
            if type(value) is not bool:
                return None
        elif name == "min_impact_tokens":
            if type(value) is not int or value < 0:
                return None
        elif name in ("cache_dir",):
            if type(value) is not str:
                return None
        elif name == "payload_shape":
            if type(value) is not str or value not in PAYLOAD_SHAPES:
                return None
        elif name == "model":
            if value is not None and type(value) is not str:
                return None
        elif name == "provider":
            from prefixlint.model.providers import provider_names

            if type(value) is not str or value.lower() not in provider_names():
                return None
            value = value.lower()
        elif name == "per_file_ignores":
            if type(value) is not dict or not all(
                type(k) is str and _is_str_list(v) for k, v in value.items()
            ):
                return None
            value = {k: list(v) for k, v in value.items()}
        elif name == "thresholds":
            if type(value) is not dict or not all(
                k in ("high", "medium", "low") and type(v) is int and v >= 0 for k, v in value.items()
            ):
                return None
            value = Thresholds(**value)
        elif name == "dynamic_sources":
            value = _fast_items(value, DynamicSource, _DYNAMIC_SOURCE_KEYS, _dynamic_source_ok)
            if value is None:
                return None
        elif name == "sinks":
            value = _fast_items(value, ExtraSink, _SINK_KEYS, _sink_ok)
            if value is None:
                return None
        values[name] = value
    return values


_DYNAMIC_SOURCE_KEYS = frozenset({"pattern", "kind", "match"})
_SINK_KEYS = frozenset({"call", "provider", "system", "messages", "prompt", "tools"})


def _dynamic_source_ok(item: dict[str, Any]) -> bool:
    from prefixlint.model.layout import DynamicKind

    return (
        type(item.get("pattern")) is str
        and item.get("match", "call") in ("call", "name")
        and type(item.get("kind", "unknown")) is str
        and item.get("kind", "unknown") in DynamicKind._value2member_map_
    )


def _sink_ok(item: dict[str, Any]) -> bool:
    return (
        type(item.get("call")) is str
        and type(item.get("provider", "")) is str
        and all(type(item.get(k)) in (str, type(None)) for k in ("system", "messages", "prompt", "tools"))
    )


def _fast_items(value: Any, cls: type, keys: frozenset[str], ok: Callable[[dict[str, Any]], bool]) -> Any:
    """``[cls(**item)]`` when every item is a table of known keys with plain values, else None."""
    if type(value) is not list:
        return None
    out = []
    for item in value:
        if type(item) is not dict or not item.keys() <= keys or not ok(item):
            return None
        out.append(cls(**item))
    return out


def _schema_values(data: Any) -> dict[str, Any]:
    """Field values validated by the pydantic schema (raises its ``ValidationError``)."""
    from prefixlint.model.settings_schema import SettingsModel

    model = SettingsModel.model_validate(data)
    values = {name: getattr(model, name) for name, _, _ in _FIELDS}
    values["thresholds"] = Thresholds(**model.thresholds.model_dump())
    values["dynamic_sources"] = [DynamicSource(**d.model_dump()) for d in model.dynamic_sources]
    values["sinks"] = [ExtraSink(**s.model_dump()) for s in model.sinks]
    values["root"] = model.root
    return values
