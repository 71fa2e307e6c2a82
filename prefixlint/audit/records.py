"""Log records: where the request, time, tenant, model and usage sit in one line of a log.

Three shapes are recognised without flags (documented in ``docs/audit.md``):

* a bare request body (OpenAI chat or responses, Anthropic messages): the record *is* the payload;
* a wrapper that holds the body under ``request``, ``body``, ``payload`` or ``request_body`` (the
  OpenAI batch file shape too), with the response under ``response`` (or its ``body``);
* the generic shape: ``{"timestamp", "provider", "model", "organization", "tenant", "session",
  "template", "request": {...}, "usage": {...}, "duration_ms"}``.

Every field can be pointed elsewhere with a dotted path (``FieldMap``, ``--tenant-field user.id``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from prefixlint.analysis.payloads.to_layout import detect_api
from prefixlint.model.providers import UnknownProviderError, get_provider, guess_provider

_MISSING = object()
REQUEST_KEYS = ("request", "body", "payload", "request_body")
_SHAPE_KEYS = ("messages", "input", "instructions", "prompt")


@dataclass(frozen=True)
class FieldMap:
    """Dotted paths of each field; None means "look in the usual places"."""

    request: str | None = None
    timestamp: str | None = None
    end: str | None = None
    duration: str | None = None
    provider: str | None = None
    model: str | None = None
    organization: str | None = None
    tenant: str | None = None
    session: str | None = None
    template: str | None = None
    usage: str | None = None
    default_provider: str | None = None

    def paths(self, name: str, defaults: tuple[str, ...]) -> tuple[str, ...]:
        given = getattr(self, name)
        return (given,) if given else defaults


_DEFAULTS: dict[str, tuple[str, ...]] = {
    "timestamp": (
        "timestamp",
        "time",
        "ts",
        "start_time",
        "started_at",
        "request_time",
        "created_at",
        "created",
    ),
    "end": ("end_time", "ended_at", "completed_at", "response_time", "first_token_time"),
    "duration": ("duration_ms", "latency_ms", "elapsed_ms", "ttft_ms"),
    "provider": ("provider", "metadata.provider"),
    "organization": (
        "organization",
        "organization_id",
        "org",
        "org_id",
        "workspace",
        "workspace_id",
        "project",
        "project_id",
        "api_key_id",
    ),
    "tenant": ("tenant", "tenant_id", "metadata.tenant", "metadata.tenant_id"),
    "session": (
        "session",
        "session_id",
        "conversation",
        "conversation_id",
        "thread_id",
        "metadata.session_id",
        "metadata.conversation_id",
    ),
    "template": ("template", "template_id", "prompt_template", "metadata.template"),
    "usage": ("usage", "response.usage", "response.body.usage", "response_body.usage"),
}


class RecordError(ValueError):
    """A record that cannot be used: ``kind`` is one of ``unknown-shape``, ``missing-field``,
    ``bad-field``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(slots=True)
class LogRecord:
    """One request of a log, normalised. ``time`` and ``end`` are seconds since the epoch."""

    source: str
    line: int
    body: dict[str, Any]
    api: str
    provider: str
    model: str | None
    time: float | None
    end: float | None
    organization: str
    tenant: str
    session: str | None
    usage: Any
    template: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cache_key(self) -> str:
        """What narrows the cache inside an organisation: ``cache_salt`` or ``prompt_cache_key``."""
        salt = self.body.get("cache_salt")
        if isinstance(salt, str) and salt:
            return f"salt:{salt}"
        key = self.body.get("prompt_cache_key")
        return f"key:{key}" if isinstance(key, str) and key else ""

    @property
    def partition(self) -> tuple[str, str, str]:
        """The replay partition: provider, organisation, tenant (caches never cross it)."""
        return (self.provider, self.organization, self.tenant)


def dig(obj: Any, path: str) -> Any:
    """The value at a dotted path (``user.id``, ``messages.0.role``), or ``_MISSING``."""
    cur = obj
    for part in path.split("."):
        if isinstance(cur, dict):
            cur = cur.get(part, _MISSING)
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return _MISSING
        if cur is _MISSING:
            return _MISSING
    return cur


def _first(obj: Any, paths: tuple[str, ...]) -> Any:
    get = obj.get
    for p in paths:
        v = get(p, _MISSING) if "." not in p else dig(obj, p)
        if v is not _MISSING and v is not None:
            return v
    return _MISSING


def parse_time(value: Any, name: str) -> float:
    """Seconds since the epoch from a number (seconds, or milliseconds above 1e11) or an ISO 8601
    string (``Z`` and offsets accepted; a naive time is UTC)."""
    if isinstance(value, bool):
        raise RecordError("bad-field", f"{name}: expected a time, got {value!r}")
    if isinstance(value, (int, float)):
        v = float(value)
        return v / 1000.0 if v > 1e11 else v
    if isinstance(value, str):
        text = value.strip()
        try:
            return parse_time(float(text), name)
        except (ValueError, RecordError):
            pass
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError as exc:
            raise RecordError("bad-field", f"{name}: not a time: {value!r}") from exc
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    raise RecordError("bad-field", f"{name}: expected a time, got {type(value).__name__}")


def _looks_like_body(obj: Any) -> bool:
    return isinstance(obj, dict) and any(k in obj for k in _SHAPE_KEYS)


def _find_body(raw: dict[str, Any], fields: FieldMap) -> dict[str, Any]:
    if fields.request:
        body = dig(raw, fields.request)
        if body is _MISSING:
            raise RecordError("missing-field", f"no request at `{fields.request}`")
        if not _looks_like_body(body):
            raise RecordError("unknown-shape", f"`{fields.request}` holds no messages, input or prompt")
        return body  # type: ignore[no-any-return]
    for key in REQUEST_KEYS:
        body = raw.get(key)
        if _looks_like_body(body):
            return body  # type: ignore[return-value]
    if _looks_like_body(raw):
        return raw
    keys = ", ".join(sorted(raw)[:8]) or "none"
    raise RecordError(
        "unknown-shape",
        f"no request payload found (keys: {keys}); expected messages/input/instructions/prompt, "
        f"or a payload under {'/'.join(REQUEST_KEYS)} (map it with --request-field)",
    )


def _provider(
    raw: dict[str, Any], body: dict[str, Any], api: str, fields: FieldMap, model: str | None
) -> str:
    given = _first(raw, fields.paths("provider", _DEFAULTS["provider"]))
    if given is _MISSING:
        url = raw.get("url") or raw.get("endpoint")
        if isinstance(url, str) and ("anthropic" in url or url.rstrip("/").endswith("/messages")):
            given = "anthropic"
        elif fields.default_provider:
            given = fields.default_provider
        elif api == "messages":
            given = "anthropic"
        else:
            given = guess_provider(model)
    name = str(given).lower()
    try:
        get_provider(name)
    except UnknownProviderError as exc:
        raise RecordError("bad-field", str(exc)) from exc
    return name


def _label(raw: dict[str, Any], paths: tuple[str, ...]) -> str:
    v = _first(raw, paths)
    return "" if v is _MISSING else str(v)


def to_record(raw: Any, source: str, line: int, fields: FieldMap) -> LogRecord:
    """Normalise one parsed log entry; raises :class:`RecordError` when it cannot be used."""
    if not isinstance(raw, dict):
        raise RecordError("unknown-shape", f"expected a JSON object, got {type(raw).__name__}")
    body = _find_body(raw, fields)
    if "prompt" in body and not any(k in body for k in _SHAPE_KEYS[:3]):
        prompt = body["prompt"]
        if not isinstance(prompt, str):
            raise RecordError("bad-field", "prompt: expected a string")
        body = {**body, "messages": [{"role": "user", "content": prompt}]}
    messages = body.get("messages", body.get("input"))
    if messages is not None and not isinstance(messages, (list, str)):
        raise RecordError("bad-field", "messages/input: expected a list or a string")
    api = detect_api(body)
    model_v = _first(raw, fields.paths("model", ("model",))) if fields.model else body.get("model")
    if model_v is _MISSING or model_v is None:
        model_v = raw.get("model")
    model = str(model_v) if model_v not in (None, _MISSING) else None
    provider = _provider(raw, body, api, fields, model)
    t = _first(raw, fields.paths("timestamp", _DEFAULTS["timestamp"]))
    time = None if t is _MISSING else parse_time(t, "timestamp")
    end = None
    e = _first(raw, fields.paths("end", _DEFAULTS["end"]))
    if e is not _MISSING:
        end = parse_time(e, "end time")
    else:
        d = _first(raw, fields.paths("duration", _DEFAULTS["duration"]))
        if d is not _MISSING and time is not None:
            if isinstance(d, bool) or not isinstance(d, (int, float)) or d < 0:
                raise RecordError("bad-field", f"duration: expected milliseconds, got {d!r}")
            end = time + float(d) / 1000.0
    if end is not None and time is not None and end < time:
        raise RecordError("bad-field", "the end time is before the start time")
    usage = _first(raw, fields.paths("usage", _DEFAULTS["usage"]))
    session = _first(raw, fields.paths("session", _DEFAULTS["session"]))
    template = _first(raw, fields.paths("template", _DEFAULTS["template"]))
    return LogRecord(
        source=source,
        line=line,
        body=body,
        api=api,
        provider=provider,
        model=model,
        time=time,
        end=end,
        organization=_label(raw, fields.paths("organization", _DEFAULTS["organization"])),
        tenant=_label(raw, fields.paths("tenant", _DEFAULTS["tenant"])),
        session=None if session is _MISSING else str(session),
        usage=None if usage is _MISSING else usage,
        template=None if template is _MISSING else str(template),
    )
