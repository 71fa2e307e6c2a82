"""Who shares a prefix-cache namespace.

Three modes, chosen at startup:

* **per key** (the default): each distinct bearer token (``Authorization: Bearer KEY`` or
  ``x-api-key: KEY``) is its own namespace, derived as ``HMAC-SHA256(server secret, KEY)``, so the
  namespace reveals nothing about the key and cannot be precomputed. Requests without a token
  share one anonymous namespace. Hosted providers isolate caches per organisation in the same way.
* **mapped keys** (``api_keys``, ``--api-key KEY=TENANT``): only the listed keys are accepted
  (401 otherwise); keys mapped to the same tenant share its namespace.
* **shared** (``--shared-cache``): every client shares one namespace, as vLLM does by default.
  With mapped keys, the keys are still checked but no longer separate caches.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import Request

from prefixlint.engine.server.errors import ApiError

TOKEN_NAMESPACE_PREFIX = "key:"


def bearer_token(request: Request) -> str | None:
    """The API key of a request, from ``Authorization: Bearer`` or ``x-api-key``; None if absent."""
    auth = request.headers.get("authorization", "")
    key = auth[7:] if auth.lower().startswith("bearer ") else request.headers.get("x-api-key", "")
    return key.strip() or None


class Tenancy:
    """Maps a request to its tenant: the first half of its cache namespace."""

    def __init__(
        self, api_keys: dict[str, str] | None = None, shared_cache: bool = False, secret: bytes | None = None
    ) -> None:
        self.api_keys = api_keys
        self.shared_cache = shared_cache
        self._secret = secret if secret is not None else secrets.token_bytes(32)

    @property
    def mode(self) -> str:
        """``shared``, ``per-tenant`` (mapped keys) or ``per-key``."""
        if self.shared_cache:
            return "shared"
        return "per-tenant" if self.api_keys is not None else "per-key"

    def describe(self) -> str:
        """One line for the startup summary."""
        if self.shared_cache:
            return "shared by every client (--shared-cache, as vLLM by default)"
        if self.api_keys is not None:
            return "one per tenant of --api-key; other keys get 401"
        return "one per API key (derived with a server secret); requests without a key share an anonymous one"

    def tenant(self, request: Request) -> str | None:
        """The request's tenant (None: the shared or anonymous namespace). 401 for a key that the
        mapping does not list."""
        key = bearer_token(request)
        if self.api_keys is not None:
            if key is None or key not in self.api_keys:
                raise ApiError(401, "invalid or missing API key", "authentication_error")
            tenant: str | None = self.api_keys[key]
        else:
            tenant = None if key is None else self.key_namespace(key)
        return None if self.shared_cache else tenant

    def key_namespace(self, key: str) -> str:
        """The namespace of an unmapped key: a keyed hash, never the key itself."""
        digest = hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()
        return TOKEN_NAMESPACE_PREFIX + digest[:32]
