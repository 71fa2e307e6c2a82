"""Tenants of an isolation audit: API keys, cache salts, or two random bearer tokens.

A tenant is what a server keys its cache namespace on. The canary and the probe take them as API
keys (``--api-key``, repeated), as salts on one key (``--cache-salt``, repeated; vLLM and SGLang
accept ``cache_salt`` in the body, this engine with ``--allow-client-salt``), or, with neither,
as two fresh random bearer tokens: enough for a server that isolates per key, as this engine does.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass


class TenantError(ValueError):
    """The tenants given cannot make the audit (too few, or a mix that means nothing)."""


@dataclass(frozen=True)
class Tenant:
    """One cache namespace as the client selects it."""

    name: str
    api_key: str | None = None
    cache_salt: str | None = None
    org: str | None = None

    @property
    def kind(self) -> str:
        """What separates this tenant from the others: ``salt`` or ``key``."""
        return "salt" if self.cache_salt else "key"

    def public(self) -> dict[str, str | None]:
        """What a report may show: never the key itself."""
        return {"name": self.name, "kind": self.kind, "org": self.org}


def random_key() -> str:
    """A bearer token no one else uses (``sk-prefixlint-`` plus 128 random bits)."""
    return "sk-prefixlint-" + secrets.token_hex(16)


def make_tenants(
    api_keys: Sequence[str] = (),
    salts: Sequence[str] = (),
    orgs: Sequence[str] = (),
    *,
    minimum: int = 2,
) -> list[Tenant]:
    """Tenants from the options, in the order given.

    * two or more salts: one tenant per salt, all on the first key (or none);
    * else two or more keys: one tenant per key, ``orgs`` naming each key's organisation;
    * else (no key, or one): two random bearer tokens, or the one key alone when ``minimum`` is 1.
    """
    if orgs and len(orgs) != len(api_keys):
        raise TenantError(f"--org was given {len(orgs)} times for {len(api_keys)} --api-key values")
    if len(salts) == 1:
        raise TenantError("one --cache-salt is one tenant; give two or more, one per tenant")
    if len(set(salts)) != len(salts) or len(set(api_keys)) != len(api_keys):
        raise TenantError("the same key or salt was given twice: each tenant needs its own")
    if salts:
        if len(api_keys) > 1:
            raise TenantError("give tenants as several --api-key or as several --cache-salt, not both")
        key = api_keys[0] if api_keys else None
        return [Tenant(f"salt-{i + 1}", key, salt, None) for i, salt in enumerate(salts)]
    if len(api_keys) >= 2:
        return [
            Tenant(f"key-{i + 1}", key, None, orgs[i] if orgs else None) for i, key in enumerate(api_keys)
        ]
    if len(api_keys) == 1:
        if minimum <= 1:
            return [Tenant("key-1", api_keys[0])]
        raise TenantError(
            "one --api-key is one tenant; give a second --api-key, or two --cache-salt values for "
            "a server that takes salts"
        )
    return [Tenant(f"random-{i + 1}", random_key()) for i in range(max(minimum, 2))]
