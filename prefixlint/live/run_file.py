"""What every live tool's JSON result shares: strict models and writing one run to a file."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class StrictModel(BaseModel):
    """A result model that refuses unknown keys, so that a misspelt field is an error."""

    model_config = ConfigDict(extra="forbid")


def utc_now() -> str:
    """The creation time of a run, to the second, in UTC (ISO 8601)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class RunFile(StrictModel):
    """A run written as one JSON object; subclasses say how to drop their per-request lists."""

    def to_json(self, **_: bool) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2)

    def write(self, path: str | Path) -> Path:
        """Write the run as JSON to ``path`` (its folder is made)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(self.to_json() + "\n", encoding="utf-8")
        return out


class ServerRun(RunFile):
    """A run against one server and tenants: the header that canary and probe share."""

    schema_id: str
    created_at: str = Field(default_factory=utc_now)
    base_url: str
    model: str | None = None
    endpoint: Literal["chat", "completions"] = "chat"
    tenants: list[dict[str, Any]] = Field(default_factory=list)
    server: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
