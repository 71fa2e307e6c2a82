"""Wrapper options, validated when ``wrap`` is called (configuration errors raise there, never later)."""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from prefixlint.model.providers import UnknownProviderError, get_provider

SALT_SECRET_ENV = "PREFIXLINT_CACHE_SALT_SECRET"
_PLACEMENTS = ("last_user", "trailing_message")
_TTLS = ("5m", "1h")


class SdkConfigError(ValueError):
    """A wrapper option is invalid (raised by ``wrap``)."""


@dataclass(frozen=True)
class RequestInfo:
    """What a ``cache_key_fn`` sees: nothing secret, no prompt text."""

    provider: str
    model: str | None
    api: str
    tenant: str | None
    template: str
    conversation: str | None
    prefix_hash: str


@dataclass(frozen=True)
class SdkOptions:
    """Everything ``prefixlint.sdk.wrap`` can be told. See the SDK section of README.md for each option.

    Defaults change nothing the model sees: canonicalization is opt-in, volatile values move only
    when the caller marks them, and keys, salts and breakpoints do not alter the prompt text.
    """

    provider: str | None = None  # auto-detected from the client when None
    tenant: str | None = None
    require_tenant: bool = False
    # canonicalization (opt-in)
    sort_keys: bool = False  # stable key order in tools / response_format JSON
    sort_tools: bool = False  # tools ordered by name
    normalize_newlines: bool = False  # CRLF -> LF
    strip_trailing_whitespace: bool = False
    unicode_nfc: bool = False
    # volatile values
    volatile_placement: str = "last_user"  # or "trailing_message"
    volatile_header: str = "Request context:"
    # tenancy and keys
    prompt_cache_key: bool = True  # OpenAI-style providers: derive one when a tenant is known
    cache_key_fn: Callable[[RequestInfo], str | None] | None = None
    salt_secret: str | None = None  # base64 of 32 random bytes; or the env var
    send_cache_salt: bool | None = None  # None: when the provider takes cache_salt and a secret is set
    # Anthropic breakpoints
    breakpoints: bool = True  # only when the request has no cache_control of its own
    static_ttl: str = "5m"  # TTL for breakpoints on tools/system ("1h" allowed)
    # streams
    include_usage: bool = False  # inject stream_options.include_usage into OpenAI streams
    # verification and reporting
    verify: bool = True
    background: bool = False  # build reports on a worker thread, off the request's critical path
    dry_run: bool = False
    on_report: Callable[[Any], None] | None = None
    log_level: int | None = 10  # logging.DEBUG; None turns report logging off
    keep_excerpts: bool = False
    excerpt_chars: int = 60
    hit_rate_threshold: float | None = None
    hit_rate_window: int = 20
    on_low_hit_rate: Callable[[str, str, float], None] | None = None
    otel: bool = True
    clock: Callable[[], float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def validated(self) -> SdkOptions:
        """A checked copy; raises :class:`SdkConfigError`."""
        if self.provider is not None:
            try:
                get_provider(self.provider)
            except UnknownProviderError as exc:
                raise SdkConfigError(str(exc)) from exc
        if self.volatile_placement not in _PLACEMENTS:
            raise SdkConfigError(f"volatile_placement must be one of {_PLACEMENTS}")
        if self.static_ttl not in _TTLS:
            raise SdkConfigError(f"static_ttl must be one of {_TTLS}")
        if self.hit_rate_threshold is not None and not 0 <= self.hit_rate_threshold <= 1:
            raise SdkConfigError("hit_rate_threshold must be between 0 and 1")
        if self.hit_rate_window < 1:
            raise SdkConfigError("hit_rate_window must be at least 1")
        for name in ("cache_key_fn", "on_report", "on_low_hit_rate", "clock"):
            val = getattr(self, name)
            if val is not None and not callable(val):
                raise SdkConfigError(f"{name} must be callable")
        if self.tenant is not None and not isinstance(self.tenant, str):
            raise SdkConfigError(f"tenant must be a str, got {type(self.tenant).__name__}")
        if self.require_tenant and self.tenant is not None and not self.tenant:
            raise SdkConfigError("tenant must not be empty")
        secret = self.salt_secret if self.salt_secret is not None else os.environ.get(SALT_SECRET_ENV)
        if secret is not None:
            decode_secret(secret)
        elif self.send_cache_salt:
            raise SdkConfigError(f"send_cache_salt needs salt_secret or ${SALT_SECRET_ENV}")
        return replace(self, salt_secret=secret)


def check_isolation(opts: SdkOptions, provider: str) -> None:
    """With ``require_tenant``, the provider must have a way to keep tenants apart; raises otherwise.

    A salt-based backend (vLLM, SGLang, the reference engine) isolates tenants only by ``cache_salt``,
    which needs the secret; without it every tenant would share one cache.
    """
    if not opts.require_tenant:
        return
    knobs = get_provider(provider).request_knobs
    if "cache_salt" in knobs and "prompt_cache_key" not in knobs:
        if not opts.salt_secret:
            raise SdkConfigError(
                f"require_tenant=True with provider {provider!r} needs salt_secret or ${SALT_SECRET_ENV}: "
                "its tenants are kept apart only by cache_salt"
            )
        if opts.send_cache_salt is False:
            raise SdkConfigError(
                f"require_tenant=True with provider {provider!r} needs send_cache_salt (it is False)"
            )


def decode_secret(secret: str) -> bytes:
    """The 32 bytes of a base64 (standard or url-safe) secret; raises :class:`SdkConfigError`."""
    s = secret.strip()
    try:
        raw = base64.b64decode(
            s + "=" * (-len(s) % 4), altchars=b"-_" if ("-" in s or "_" in s) else None, validate=True
        )
    except (binascii.Error, ValueError) as exc:
        raise SdkConfigError("salt secret is not valid base64") from exc
    if len(raw) < 32:
        raise SdkConfigError(f"salt secret must hold 256 bits (32 bytes), got {len(raw)} bytes")
    return raw


def options_from(kwargs: dict[str, Any], base: SdkOptions | None = None) -> SdkOptions:
    """Options from keyword arguments; unknown names raise :class:`SdkConfigError`."""
    base = base or SdkOptions()
    known = set(SdkOptions.__dataclass_fields__)
    unknown = set(kwargs) - known
    if unknown:
        raise SdkConfigError(f"unknown wrap option(s): {', '.join(sorted(unknown))}")
    return replace(base, **kwargs).validated()
