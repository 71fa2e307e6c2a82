"""Tenancy: who a request belongs to, and the keys and salts derived from it.

* ``prompt_cache_key`` (OpenAI-style APIs) = ``"pfx-"`` + 24 hex digits of HMAC-SHA256 over the
  tenant and the static-prefix fingerprint, keyed by the installation secret when one is configured.
  Without a secret it is a plain SHA-256 of the same: it holds no name, but anyone who knows the
  prompt (so its fingerprint) can test guessed tenant names against it.
* ``cache_salt`` (vLLM, SGLang, the reference engine) = base64url(HMAC-SHA256(secret, tenant)), 43
  characters, 256 bits. The secret (32 random bytes, base64) comes from the ``salt_secret`` option
  or ``$PREFIXLINT_CACHE_SALT_SECRET``; it never leaves the process.
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import hmac
from collections.abc import Iterator
from contextlib import contextmanager

_TENANT: contextvars.ContextVar[str | None] = contextvars.ContextVar("prefixlint_tenant", default=None)


class TenancyError(RuntimeError):
    """``require_tenant=True`` and the request could not be isolated; nothing was sent.

    The one error the wrapper raises into a call (configuration errors raise at ``wrap`` time).
    """


class TenantRequiredError(TenancyError):
    """``require_tenant=True`` and no tenant was set; nothing was sent."""


class PrepareError(TenancyError):
    """``require_tenant=True`` and preparing the request failed inside prefixlint; nothing was sent."""


@contextmanager
def tenant(name: str) -> Iterator[str]:
    """Set the tenant for requests made inside the block (a contextvar: safe under asyncio)."""
    if not isinstance(name, str):
        raise TypeError(f"tenant name must be a str, got {type(name).__name__}")
    if not name:
        raise ValueError("tenant name must not be empty")
    token = _TENANT.set(name)
    try:
        yield name
    finally:
        _TENANT.reset(token)


def current_tenant() -> str | None:
    """The tenant set by the innermost :func:`tenant` block, if any."""
    return _TENANT.get()


def resolve_tenant(per_call: object, default: str | None) -> str | None:
    """Per-call argument, then the context manager, then the ``wrap`` option.

    A per-call tenant that is not a string raises ``TypeError``.
    """
    if per_call is not None and not isinstance(per_call, str):
        raise TypeError(f"prefixlint_tenant must be a str, got {type(per_call).__name__}")
    return per_call or _TENANT.get() or default


def tenant_hash(name: str, secret: bytes | None = None) -> str:
    """A short, non-reversible tenant id for reports and logs."""
    return hmac.new(secret or b"prefixlint-tenant-v1", name.encode(), hashlib.sha256).hexdigest()[:16]


def derive_prompt_cache_key(name: str, prefix_fingerprint: str, secret: bytes | None = None) -> str:
    """The ``prompt_cache_key`` for ``name`` and a static prefix (no secret, no raw name inside)."""
    msg = b"prefixlint-pck-v1\x00" + name.encode() + b"\x00" + prefix_fingerprint.encode()
    digest = hmac.new(secret, msg, hashlib.sha256).hexdigest() if secret else hashlib.sha256(msg).hexdigest()
    return "pfx-" + digest[:24]


def derive_cache_salt(name: str, secret: bytes) -> str:
    """The ``cache_salt`` of ``name``: base64url HMAC-SHA256 under the server-side secret (43 chars)."""
    mac = hmac.new(secret, b"prefixlint-salt-v1\x00" + name.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
