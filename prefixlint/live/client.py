"""A streaming OpenAI-compatible client that measures time to first token.

TTFT is the time from just before the request is sent to the first server-sent event whose
``choices`` list is non-empty, as ``vllm bench serve`` measures it: a role-only or empty-text chunk
counts (the server has finished prefill when it sends it); the usage-only chunk (``choices: []``)
does not.

Cached tokens come from ``usage.prompt_tokens_details.cached_tokens`` (OpenAI, vLLM, SGLang),
``usage.prompt_cache_hit_tokens`` (DeepSeek) or ``usage.input_tokens_details.cached_tokens``
(Responses-style). A usage without any of these means "not reported", never zero: vLLM omits the
field when nothing was cached, and omits it always without ``--enable-prompt-tokens-details``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

Endpoint = Literal["chat", "completions"]


class BenchClientError(RuntimeError):
    """The server refused a request or never sent a usable chunk."""


@dataclass
class StreamResult:
    """What one streamed request measured."""

    ttft_s: float
    total_s: float
    text: str
    usage: dict[str, Any] | None
    prompt_tokens: int | None
    cached_tokens: int | None
    cached_field: str | None


def cached_tokens_from_usage(usage: Mapping[str, Any] | None) -> tuple[int | None, str | None]:
    """``(cached_tokens, field)`` from a usage object; ``(None, None)`` when not reported."""
    if not usage:
        return None, None
    for details_key in ("prompt_tokens_details", "input_tokens_details"):
        details = usage.get(details_key)
        if isinstance(details, Mapping) and isinstance(details.get("cached_tokens"), int):
            return int(details["cached_tokens"]), f"{details_key}.cached_tokens"
    for key in ("prompt_cache_hit_tokens", "cache_read_input_tokens"):
        if isinstance(usage.get(key), int):
            return int(usage[key]), key
    return None, None


@dataclass
class BenchClient:
    """Sends one prompt at a time over a kept-alive connection and times the stream."""

    base_url: str
    model: str
    api_key: str | None = None
    endpoint: Endpoint = "chat"
    max_tokens: int = 1
    timeout_s: float = 120.0
    cache_salt: str | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    _http: httpx.Client | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        """The full URL requests go to."""
        base = self.base_url.rstrip("/")
        path = "/chat/completions" if self.endpoint == "chat" else "/completions"
        return base + path

    def _client(self) -> httpx.Client:
        if self._http is None:
            headers = {"Accept": "text/event-stream", **self.headers}
            if self.api_key:
                headers["Authorization"] = f"Bearer {self.api_key}"
            self._http = httpx.Client(timeout=httpx.Timeout(self.timeout_s), headers=headers)
        return self._http

    def close(self) -> None:
        """Close the connection pool."""
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> BenchClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def payload(self, prompt: str) -> dict[str, Any]:
        """The JSON body for ``prompt``."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        if self.cache_salt:
            body["cache_salt"] = self.cache_salt
        body.update(self.extra_body)
        # A null in extra_body removes the field (e.g. ``"temperature": null`` for models that
        # refuse it, ``"max_tokens": null`` next to ``"max_completion_tokens": 1``).
        return {k: v for k, v in body.items() if v is not None}

    def send(self, prompt: str) -> StreamResult:
        """Stream one request and return its timing and usage."""
        body = json.dumps(self.payload(prompt))
        client = self._client()
        ttft: float | None = None
        usage: dict[str, Any] | None = None
        parts: list[str] = []
        start = time.perf_counter()
        with client.stream(
            "POST", self.url, content=body, headers={"Content-Type": "application/json"}
        ) as resp:
            if resp.status_code != 200:
                detail = resp.read().decode("utf-8", "replace")[:500]
                raise BenchClientError(f"HTTP {resp.status_code} from {self.url}: {detail}")
            for line in resp.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    chunk = json.loads(data)
                except json.JSONDecodeError:
                    continue
                if not isinstance(chunk, dict):
                    continue
                if "error" in chunk and not chunk.get("choices"):
                    raise BenchClientError(f"server error in stream: {chunk['error']}")
                choices = chunk.get("choices")
                if choices:
                    if ttft is None:
                        ttft = time.perf_counter() - start
                    parts.append(_chunk_text(choices[0]))
                if isinstance(chunk.get("usage"), dict):
                    usage = chunk["usage"]
        total = time.perf_counter() - start
        if ttft is None:
            raise BenchClientError("never received a chunk with choices to calculate TTFT")
        cached, cached_field = cached_tokens_from_usage(usage)
        prompt_tokens = usage.get("prompt_tokens") if usage else None
        return StreamResult(
            ttft_s=ttft,
            total_s=total,
            text="".join(parts),
            usage=usage,
            prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else None,
            cached_tokens=cached,
            cached_field=cached_field,
        )


def _chunk_text(choice: Mapping[str, Any]) -> str:
    delta = choice.get("delta")
    if isinstance(delta, Mapping):
        return str(delta.get("content") or "")
    return str(choice.get("text") or "")
