"""Steps of preparing a request that need no client state: one job each.

The wrapper's :meth:`~prefixlint.sdk.state.ClientState.prepare` runs them in order: split the
caller's keywords, rewrite the body (plain dicts, canonical form, volatile values moved), add the
tenant's key or salt, Anthropic breakpoints and stream usage, then assemble what is sent.
"""

from __future__ import annotations

from typing import Any

from prefixlint.sdk.canonical import canonicalize
from prefixlint.sdk.options import SdkOptions
from prefixlint.sdk.plain import plain_request
from prefixlint.sdk.volatile import has_volatile, move_volatile

TRANSPORT = ("extra_headers", "extra_query", "extra_body", "timeout")
CALL_KW = ("prefixlint_tenant", "prefixlint_volatile", "prefixlint_template", "prefixlint_conversation")
_OMITTED = ("NotGiven", "Omit")  # the SDKs' sentinels for "not given"


def pop_call_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Remove the wrapper's own ``prefixlint_*`` keywords from ``kwargs`` and return them."""
    call_kw = {}
    for k in CALL_KW:
        if k in kwargs:
            call_kw[k] = kwargs.pop(k)
    return call_kw


def request_body(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The request body: every keyword but transport options and the SDKs' "not given" sentinels."""
    body = {}
    for k, v in kwargs.items():  # a loop, not a comprehension: one frame less on every request
        if k not in TRANSPORT and type(v).__name__ not in _OMITTED:
            body[k] = v
    return body


def rewrite(
    body: dict[str, Any], api: str, opts: SdkOptions, canonical: bool, per_call: Any
) -> tuple[dict[str, Any], list[str]]:
    """SDK objects as dicts, the opted-in canonical form, marked volatile values moved to the end."""
    changes: list[str] = []
    new = plain_request(body)
    if canonical:
        new, ch = canonicalize(new, api, opts)
        changes += ch
    if per_call or has_volatile(new, api):
        new, ch = move_volatile(new, api, per_call, opts.volatile_placement, opts.volatile_header)
        changes += ch
    return new, changes


def with_stream_usage(body: dict[str, Any], api: str, stream: bool, opts: SdkOptions) -> dict[str, Any]:
    """``stream_options.include_usage`` on an OpenAI chat stream, when asked and not set."""
    if api == "chat" and stream and opts.include_usage and "stream_options" not in body:
        return {**body, "stream_options": {"include_usage": True}}
    return body


def outgoing(kwargs: dict[str, Any], new: dict[str, Any], extra_body: Any, dry_run: bool) -> dict[str, Any]:
    """The keywords the client is called with: transport options plus the rewritten body."""
    if dry_run:
        return kwargs
    out = {}
    for k, v in kwargs.items():
        if k in TRANSPORT:
            out[k] = v
    out.update(new)
    if extra_body is not None:
        out["extra_body"] = extra_body
    return out
