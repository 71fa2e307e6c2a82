"""A streaming OpenAI-compatible client that measures time to first token.

TTFT is the time from just before the request is sent to the first server-sent event whose
``choices`` list is non-empty, as ``vllm bench serve`` measures it: a role-only or empty-text chunk
counts (the server has finished prefill when it sends it); the usage-only chunk (``choices: []``)
does not.

Cached tokens come from ``usage.prompt_tokens_details.cached_tokens`` (OpenAI, vLLM, SGLang),
``usage.prompt_cache_hit_tokens`` (DeepSeek) or ``usage.input_tokens_details.cached_tokens``
(Responses-style). A usage without any of these means "not reported", never zero: vLLM omits the
field when nothing was cached, and omits it always without ``--enable-prompt-tokens-details``.

:meth:`BenchClient.complete` sends one non-streamed request (with ``logprobs`` when asked) and
returns the HTTP status instead of raising on a 4xx or 5xx, for checks that need to see refusals.
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


@dataclass
class Completion:
    """One non-streamed request: its status, and on success its text, tokens and logprobs."""

    status: int
    text: str = ""
    tokens: list[str] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[dict[str, float]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True for a 200 that carried a choice."""
        return self.status == 200 and self.error is None


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

    def complete(self, prompt: str, *, max_tokens: int | None = None, logprobs: int = 0) -> Completion:
        """Send ``prompt`` without streaming; ``logprobs`` > 0 asks for that many top logprobs.

        A 4xx/5xx answer comes back as a :class:`Completion` with its status and message; only a
        transport failure (no answer) raises ``httpx.HTTPError``.
        """
        body = self.payload(prompt)
        body["stream"] = False
        body.pop("stream_options", None)
        if max_tokens is not None:
            body["max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"] = max_tokens
        if logprobs:
            if self.endpoint == "chat":
                body["logprobs"], body["top_logprobs"] = True, logprobs
            else:
                body["logprobs"] = logprobs
        resp = self._client().post(
            self.url, content=json.dumps(body), headers={"Content-Type": "application/json"}
        )
        if resp.status_code != 200:
            return Completion(status=resp.status_code, error=_error_text(resp))
        try:
            data = resp.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            return Completion(status=resp.status_code, error=f"no choice in the answer: {resp.text[:200]}")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        cached, _ = cached_tokens_from_usage(usage)
        prompt_tokens = usage.get("prompt_tokens") if usage else None
        out = Completion(
            status=200,
            text=_choice_text(choice),
            finish_reason=choice.get("finish_reason"),
            usage=usage,
            prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else None,
            cached_tokens=cached,
        )
        _read_logprobs(choice.get("logprobs"), out)
        return out

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


def _choice_text(choice: Mapping[str, Any]) -> str:
    message = choice.get("message")
    if isinstance(message, Mapping):
        return str(message.get("content") or "")
    return str(choice.get("text") or "")


def _error_text(resp: httpx.Response) -> str:
    """``HTTP 400: message`` from an OpenAI-style (or any) error body."""
    try:
        data = resp.json()
    except ValueError:
        return f"HTTP {resp.status_code}: {resp.text[:300]}"
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, Mapping):
        return f"HTTP {resp.status_code}: {err.get('message') or err}"
    message = data.get("message") or data.get("detail") if isinstance(data, dict) else None
    return f"HTTP {resp.status_code}: {message or str(data)[:300]}"


def _read_logprobs(lp: Any, out: Completion) -> None:
    """Fill tokens and logprobs from chat (``content`` list) or completions (parallel lists) form."""
    if not isinstance(lp, Mapping):
        return
    content = lp.get("content")
    if isinstance(content, list):
        for item in content:
            if not isinstance(item, Mapping):
                continue
            out.tokens.append(str(item.get("token", "")))
            out.logprobs.append(float(item.get("logprob", 0.0)))
            tops = item.get("top_logprobs") or []
            out.top_logprobs.append(
                {
                    str(t.get("token", "")): float(t.get("logprob", 0.0))
                    for t in tops
                    if isinstance(t, Mapping)
                }
            )
        return
    tokens, values, tops = lp.get("tokens"), lp.get("token_logprobs"), lp.get("top_logprobs")
    if isinstance(tokens, list) and isinstance(values, list):
        out.tokens = [str(t) for t in tokens]
        out.logprobs = [float(v) if v is not None else 0.0 for v in values]
        if isinstance(tops, list):
            out.top_logprobs = [
                {str(k): float(v) for k, v in t.items()} if isinstance(t, Mapping) else {} for t in tops
            ]
