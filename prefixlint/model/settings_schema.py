"""The pydantic schema of ``[tool.prefixlint]``, imported only to validate non-trivial input.

:class:`prefixlint.lint.config.Settings` takes well-typed values directly and hands everything else
here, so the validation rules and messages ("Extra inputs are not permitted", ...) are pydantic's.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Thresholds(BaseModel):
    """Severity follows the number of tokens a finding costs."""

    model_config = ConfigDict(extra="forbid")

    high: int = Field(1024, ge=0, description="tokens lost at or above which a finding is high")
    medium: int = Field(256, ge=0, description="tokens lost at or above which a finding is medium")
    low: int = Field(32, ge=0, description="no longer read: see min-impact-tokens")


class DynamicSource(BaseModel):
    """A project-specific call or name that yields a per-request value."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(description="dotted call name (glob allowed) or variable name regex")
    kind: str = Field("unknown", description="a DynamicKind value, e.g. timestamp or user_identity")
    match: Literal["call", "name"] = "call"

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        from prefixlint.model.layout import DynamicKind

        kinds = [k.value for k in DynamicKind]
        if value not in kinds:
            raise ValueError(f"unknown kind {value!r}; expected one of {', '.join(kinds)}")
        return value


class ExtraSink(BaseModel):
    """A project-specific call that sends a prompt to a model."""

    model_config = ConfigDict(extra="forbid")

    call: str = Field(description="dotted call name or suffix, e.g. 'myllm.chat' or '*.ask_model'")
    provider: str = "openai"
    system: str | None = Field(None, description="keyword holding the system prompt")
    messages: str | None = Field(None, description="keyword holding the message list")
    prompt: str | None = Field(None, description="keyword holding a single prompt string")
    tools: str | None = None


class SettingsModel(BaseModel):
    """Everything ``[tool.prefixlint]`` may contain: the schema that validates it."""

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
    min_impact_tokens: int = Field(
        100,  # settings.DEFAULT_MIN_IMPACT_TOKENS (tests keep the two defaults equal)
        ge=0,
        alias="min-impact-tokens",
        description="tokens at stake below which a finding is informational: shown, exit code unaffected",
    )
    template_globs: list[str] = Field(
        default_factory=lambda: ["*.j2", "*.jinja", "*.jinja2", "*.prompty", "*.prompt"],
        alias="template-globs",
    )
    plain_prompt_globs: list[str] = Field(
        default_factory=list,
        alias="plain-prompt-globs",
        description="extra globs of plain-text prompt files, e.g. ['prompts/*.txt', 'prompts/*.md']",
    )
    payload_globs: list[str] = Field(
        default_factory=list,
        alias="payload-globs",
        description="globs of JSON/JSONL files always read as request payloads, e.g. ['requests/*.json']",
    )
    payload_shape: Literal["auto", "chat", "responses", "messages"] = Field(
        "auto", alias="payload-shape", description="request shape of payload files (auto: detect each)"
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
        from prefixlint.model.providers import provider_names

        if value.lower() not in provider_names():
            raise ValueError(f"unknown provider {value!r}; expected one of {', '.join(provider_names())}")
        return value.lower()

    @field_validator("select", "extend_select", "ignore", "fixable", "unfixable")
    @classmethod
    def _codes_upper(cls, value: list[str]) -> list[str]:
        return [v.strip().upper() for v in value]
