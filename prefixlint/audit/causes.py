"""The named causes of lost cache reads, and the request parameters whose change resets the cache.

Each cause has a slug (used in JSON and on the command line), a one-line meaning and, where one
exists, the code that promptcachelint gives the same finding (``CL001`` ... ``CL014``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cause:
    slug: str
    meaning: str
    equivalent: str | None = None
    loses_tokens: bool = True  # False: a diagnostic flag counted per request, not a loss


CAUSES: dict[str, Cause] = {
    c.slug: c
    for c in (
        Cause(
            "prefix-changed",
            "content inside the previously cached prefix changed (confirmed by diff)",
            "CL001",
        ),
        Cause("tools-changed", "tool definitions changed between requests (tools come first)", "CL002"),
        Cause(
            "parameter-changed",
            "a top-level parameter changed: model, thinking or effort, tool_choice, cache key",
            "CL003",
        ),
        Cause(
            "breakpoint-moved-earlier",
            "the last cache breakpoint moved earlier than in the previous request",
            "CL004",
        ),
        Cause(
            "intact-prefix-no-read",
            "the prefix was intact and within the TTL, but the provider reported no read",
            "CL005",
        ),
        Cause("ttl-expired", "the gap since the previous request exceeds the cache TTL", "CL006"),
        Cause(
            "lookback-exceeded",
            "more than 20 blocks appended past the last breakpoint (Anthropic lookback)",
            "CL007",
        ),
        Cause("no-breakpoint", "no cache_control anywhere on a prompt long enough to cache", "CL010"),
        Cause(
            "below-minimum", "the shared prefix is below the model's minimum cacheable length", "CL011", False
        ),
        Cause(
            "volatile-in-prefix",
            "a timestamp or id inside the cacheable head (a suspicion; prefix-changed confirms)",
            "CL012",
            False,
        ),
        Cause(
            "too-many-breakpoints",
            "more than 4 cache_control markers (the provider rejects or ignores them)",
            "CL013",
            False,
        ),
        Cause(
            "write-never-read", "cache writes that no later request read (their premium is wasted)", "CL014"
        ),
        Cause("history-window-slid", "the oldest turns were dropped (a sliding history window)", "CL001"),
        Cause("history-edited", "earlier turns were edited (truncated tool results, a summary)", "CL001"),
        Cause(
            "routing-overflow",
            "over about 15 requests a minute for one prefix and key: sent to a cold machine",
        ),
        Cause("evicted", "the prefix was evicted from a full KV cache (LRU capacity)"),
        Cause(
            "unexplained", "less than the previous request's prefix was served, for no reason the log shows"
        ),
    )
}

# Request fields whose change starts a new cache even when the text is the same.
PARAMETERS = (
    "model",
    "tool_choice",
    "thinking",
    "reasoning_effort",
    "reasoning.effort",
    "output_config.effort",
    "prompt_cache_key",
    "cache_salt",
    "speed",
    "service_tier",
)


def parameters(body: dict[str, Any]) -> dict[str, Any]:
    """The values of :data:`PARAMETERS` in a request body (dotted names read nested dicts)."""
    out: dict[str, Any] = {}
    for name in PARAMETERS:
        cur: Any = body
        for part in name.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if cur is not None:
            out[name] = cur
    return out


def changed_parameters(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [k for k in PARAMETERS if old.get(k) != new.get(k)]
