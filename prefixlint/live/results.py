"""The versioned JSON schema of a bench run (``prefixlint bench ttft`` / ``retention``).

Every run is one :class:`BenchRun`. ``schema_version`` changes whenever a field changes meaning or
disappears; new optional fields keep the version. :func:`load_run` refuses files from a newer
schema than it knows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from prefixlint.live.run_file import RunFile, StrictModel, utc_now

SCHEMA_VERSION = 1
SCHEMA_ID = "prefixlint.bench/v1"

Arm = Literal["warmup", "prime", "hit", "miss", "fill", "probe"]


class Sample(StrictModel):
    """One streamed request as the client saw it."""

    arm: Arm
    prompt_tokens_target: int = Field(description="tokens the prompt was built to have (cl100k)")
    expected_cached_tokens: int = Field(0, description="tokens the arm expects the server to reuse")
    ttft_s: float | None = Field(None, description="request start to first chunk with choices")
    total_s: float | None = None
    prompt_tokens: int | None = Field(None, description="usage.prompt_tokens as reported")
    cached_tokens: int | None = Field(None, description="reported cached tokens; None = not reported")
    cached_field: str | None = Field(None, description="which usage field carried cached_tokens")
    context: int | None = Field(None, description="retention: index of the context, 0 = oldest")
    error: str | None = None


class ArmStats(StrictModel):
    """Latency percentiles and cache reporting of one arm."""

    n: int
    errors: int = 0
    p50_s: float | None = None
    p90_s: float | None = None
    p99_s: float | None = None
    mean_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    cached_tokens_mean: float | None = Field(None, description="mean over requests that reported it")
    cached_reported: int = Field(0, description="requests whose usage carried a cached-token field")


class Calibration(StrictModel):
    """Hit/miss TTFT threshold and how well the server's reports agree with timing."""

    method: str
    threshold_s: float | None = None
    separable: bool = False
    accuracy: float | None = Field(None, description="fraction of hit/miss samples on the right side")
    ks_statistic: float | None = None
    ks_pvalue: float | None = None
    ks_source: str | None = None
    reporting: Literal["reported", "omitted-when-zero", "none"] = "none"
    reported_hit_slow: int = Field(0, description="reported a cache hit but the TTFT looks like a miss")
    reported_miss_fast: int = Field(0, description="reported no hit but the TTFT looks like a hit")
    unreported: int = Field(0, description="requests whose usage had no cached-token field")
    undecidable: int = Field(
        0, description="reported hits timing cannot judge: faster than every miss, arms not separable"
    )
    disagreements: int = 0
    notes: list[str] = Field(default_factory=list)


class LengthResult(StrictModel):
    """Hit vs miss at one prompt length."""

    prompt_tokens: int
    shared_prefix_tokens: int
    new_suffix_tokens: int
    hit: ArmStats
    miss: ArmStats
    speedup_p50: float | None = Field(None, description="miss p50 / hit p50")
    speedup_p90: float | None = None
    calibration: Calibration
    samples: list[Sample] = Field(default_factory=list)


class CounterCheck(StrictModel):
    """One server counter compared with what the requests reported."""

    name: str
    delta: float
    reported: float
    agrees: bool
    what: str


class MetricsCheck(StrictModel):
    """Prometheus counters scraped before and after the run."""

    url: str
    available: bool
    flavor: str | None = Field(None, description="'prefixlint-engine', 'vllm' or None")
    checks: list[CounterCheck] = Field(default_factory=list)
    mismatch: bool = False
    notes: list[str] = Field(default_factory=list)


class RetentionResult(StrictModel):
    """How many tokens of distinct prefixes the server really keeps."""

    contexts: int
    context_tokens: int
    filled_tokens: int
    advertised_tokens: int | None = None
    detection: str = Field(description="'reported' (cached_tokens) or 'timing'")
    threshold_s: float | None = None
    retained_contexts: int = Field(description="contexts still hit, counted from the newest")
    retained_tokens: int
    verdict: Literal["ok", "fewer-than-advertised", "inconclusive", "no-claim", "error"] = Field(
        description="'error': requests failed, so nothing about retention is known"
    )
    message: str
    probes: list[Sample] = Field(default_factory=list)
    fills: list[Sample] = Field(default_factory=list)


class BenchRun(RunFile):
    """One run of the bench; the top-level JSON object."""

    schema_id: str = SCHEMA_ID
    schema_version: int = SCHEMA_VERSION
    kind: Literal["ttft", "retention"]
    created_at: str = Field(default_factory=utc_now)
    label: str | None = None
    base_url: str
    model: str
    endpoint: Literal["chat", "completions"] = "chat"
    settings: dict[str, Any] = Field(default_factory=dict)
    tokenizer: str = "cl100k_base"
    lengths: list[LengthResult] = Field(default_factory=list)
    retention: RetentionResult | None = None
    metrics: MetricsCheck | None = None
    warnings: list[str] = Field(default_factory=list)

    @classmethod
    def against(
        cls,
        kind: Literal["ttft", "retention"],
        client: Any,
        *,
        label: str | None,
        settings: dict[str, Any],
        tokenizer: str,
    ) -> BenchRun:
        """A run of ``kind`` against the server and model a ``BenchClient`` talks to."""
        return cls(
            kind=kind,
            label=label,
            base_url=client.base_url,
            model=client.model,
            endpoint=client.endpoint,
            settings=settings,
            tokenizer=tokenizer,
        )

    def to_json(self, *, samples: bool = True) -> str:
        """Pretty JSON; ``samples=False`` drops the per-request lists."""
        data = self.model_dump(mode="json")
        if not samples:
            for length in data["lengths"]:
                length["samples"] = []
            if data["retention"]:
                data["retention"]["probes"] = []
                data["retention"]["fills"] = []
        return json.dumps(data, indent=2)


class SchemaError(ValueError):
    """A results file this version cannot read."""


def load_run(path: str | Path) -> BenchRun:
    """Read a run written by :meth:`BenchRun.write`, checking the schema version."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SchemaError(f"{path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema_id", "").split("/")[0] != "prefixlint.bench":
        raise SchemaError(f"{path}: not a prefixlint bench result")
    version = data.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SchemaError(f"{path}: schema_version {version!r} is newer than {SCHEMA_VERSION}")
    return BenchRun.model_validate(data)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`BenchRun` (for docs and external validators)."""
    return BenchRun.model_json_schema()
