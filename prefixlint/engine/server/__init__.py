"""OpenAI- and Anthropic-compatible HTTP server over :class:`~prefixlint.engine.LLMEngine`.

* The tenant comes from the API key (``Authorization: Bearer KEY`` or ``x-api-key: KEY``),
  server-side; it is the cache namespace, so tenants never share KV blocks. Each key is its own
  tenant by default; ``--api-key KEY=TENANT`` maps keys to tenants; ``--shared-cache`` shares.
* A ``cache_salt`` in the body is honoured only with ``allow_client_salt``; otherwise it is
  rejected (400), because a client-chosen salt can simply be set to a victim's value.
* ``usage.prompt_tokens_details.cached_tokens`` is always present, 0 included (vLLM omits it at 0).
* Errors before the first token get a real HTTP status (400 admission, 500 integrity); a request
  whose KV integrity check fails returns no tokens.

Modules: ``app`` assembles the routes; ``tenancy`` decides who shares a cache; ``frontend`` turns
a request into engine calls and text pieces; ``openai_api``, ``anthropic_api``, ``info`` and
``faults`` are the routes; ``errors`` and ``sse`` are the wire formats they share.
"""

from __future__ import annotations

from prefixlint.engine.server.app import create_app

__all__ = ["create_app"]
