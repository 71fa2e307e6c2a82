"""A small OpenAI-compatible server with a real prefix cache and controllable honesty.

It exists to test the bench (and to demo it without a GPU). Latency is simulated: the first chunk
is sent after ``base_s + per_token_s * uncached_tokens``. The prefix cache is real: chained hashes
of full ``block_size``-token blocks (one token per whitespace-separated word, plus one template
token for chat), an LRU pool of ``capacity_tokens``, hits capped at ``len - 1`` tokens.

It can lie on purpose:

* ``lie="report-without-speed"``: reports the cached tokens but takes as long as a miss;
* ``lie="speed-without-report"``: is as fast as a hit but reports 0 cached tokens;
* ``cached_field``: ``"openai"`` (always ``prompt_tokens_details.cached_tokens``), ``"vllm"``
  (omitted when 0, as vLLM does), ``"none"`` (never reported), ``"deepseek"``
  (``prompt_cache_hit_tokens``);
* ``metrics_scale``: the Prometheus counter of cached tokens grows by this multiple of the truth;
* ``advertised_tokens``: the ``max_model_len`` listed under ``/v1/models``, which may exceed
  ``capacity_tokens``.

For the isolation audits (``prefixlint canary`` and ``probe``):

* ``isolation``: ``"shared"`` (one cache for everyone, vLLM's default) or ``"per-key"`` (the
  bearer token, like ``cache_salt``, namespaces the cache, as this project's engine does);
* ``enforce_limits``: refuse (400) prompts over ``advertised_tokens`` or ``capacity_tokens``;
  off, it answers them (the failure the boundary probes exist to catch);
* ``fault`` with ``integrity_checks``: a request that decodes reads stale state left by the last
  request of another namespace. With the checks on it fails closed (HTTP 500, no tokens); off, its
  output depends on that request (``leak_style="drift"``) or repeats its words (``"echo"``);
* ``logprobs``: answer ``logprobs`` / ``top_logprobs`` (off: refuse them with a 400, as this
  engine once did); ``expose_pool``: ``/health`` carries ``kv_pool_tokens`` and ``block_size``;
  ``path_noise``: logprobs of an answer computed over a cached prefix are this much lower (as a
  bfloat16 GPU server's can differ between its cached and uncached paths).

Outputs are a deterministic function of the prompt (and, under a fault, of the stale state).

Needs starlette and uvicorn (installed with the ``engine`` and ``dev`` extras).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass
class FakeServerConfig:
    """Behaviour of the fake server."""

    model: str = "fake-model"
    block_size: int = 16
    base_s: float = 0.002
    per_token_s: float = 0.00002
    capacity_tokens: int = 1 << 20
    advertised_tokens: int = 1 << 20
    lie: Literal["none", "report-without-speed", "speed-without-report"] = "none"
    cached_field: Literal["openai", "vllm", "none", "deepseek"] = "openai"
    metrics: bool = True
    metrics_scale: float = 1.0
    api_key: str | None = None
    isolation: Literal["shared", "per-key"] = "shared"
    enforce_limits: bool = True
    fault: bool = False
    integrity_checks: bool = True
    leak_style: Literal["drift", "echo"] = "drift"
    logprobs: bool = True
    expose_pool: bool = True
    path_noise: float = 0.0


@dataclass
class FakeState:
    """The server's cache and counters (inspectable by tests)."""

    blocks: OrderedDict[bytes, int] = field(default_factory=OrderedDict)
    prompt_tokens_total: int = 0
    cached_tokens_total: float = 0.0
    requests: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    last_prompt: dict[str, list[str]] = field(default_factory=dict)
    failed_closed: int = 0


class PrefixCache:
    """Chained block hashes in an LRU pool of a fixed number of tokens."""

    def __init__(self, state: FakeState, block_size: int, capacity_tokens: int) -> None:
        self.state, self.block_size = state, block_size
        self.capacity_blocks = max(1, capacity_tokens // block_size)

    def _hashes(self, tokens: list[str], salt: str) -> list[bytes]:
        out, parent = [], hashlib.sha256(salt.encode()).digest()
        for i in range(0, len(tokens) - len(tokens) % self.block_size, self.block_size):
            parent = hashlib.sha256(parent + "\x00".join(tokens[i : i + self.block_size]).encode()).digest()
            out.append(parent)
        return out

    def lookup_and_insert(self, tokens: list[str], salt: str = "") -> int:
        """Cached tokens for ``tokens`` (capped at ``len - 1``); then cache all its full blocks."""
        hashes = self._hashes(tokens, salt)
        hit = 0
        for h in hashes:
            if h not in self.state.blocks:
                break
            hit += 1
        cached = min(hit * self.block_size, max(0, len(tokens) - 1))
        cached -= cached % self.block_size
        for h in hashes:
            self.state.blocks[h] = 1
            self.state.blocks.move_to_end(h)
        while len(self.state.blocks) > self.capacity_blocks:
            self.state.blocks.popitem(last=False)
        return cached


def _tokens(body: dict[str, Any]) -> list[str]:
    if "messages" in body:
        words = ["<|user|>"]
        for msg in body["messages"]:
            content = msg.get("content", "")
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            words += str(content).split()
        return words
    return str(body.get("prompt", "")).split()


def _usage(cfg: FakeServerConfig, prompt: int, cached: int, completion: int) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cfg.cached_field == "openai" or (cfg.cached_field == "vllm" and cached):
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    elif cfg.cached_field == "deepseek":
        usage["prompt_cache_hit_tokens"] = cached
        usage["prompt_cache_miss_tokens"] = prompt - cached
    return usage


def _namespace(cfg: FakeServerConfig, auth: str | None, body: dict[str, Any]) -> str:
    salt = str(body.get("cache_salt") or "")
    if cfg.isolation == "per-key":
        return json.dumps([auth or "", salt])
    return salt


def _stale(state: FakeState, namespace: str) -> list[str]:
    """The last prompt another namespace sent (what a faulty read would see)."""
    others = [words for ns, words in state.last_prompt.items() if ns != namespace]
    return others[-1] if others else []


def _generate(
    tokens: list[str], stale: list[str], n: int, style: str, shift: float = 0.0
) -> list[tuple[str, float, dict[str, float]]]:
    """``n`` output tokens with logprobs and 3 top alternatives, a function of the prompt (and of the
    stale words under a fault: ``echo`` repeats them, ``drift`` only shifts the numbers)."""
    seed = hashlib.sha256("\x00".join(tokens).encode())
    if stale and style == "drift":
        seed.update(b"stale" + "\x00".join(stale).encode())
    out = []
    for i in range(n):
        h = hashlib.sha256(seed.digest() + i.to_bytes(4, "big")).digest()
        word = stale[i % len(stale)] if stale and style == "echo" else f"w{h[0]}"
        lp = -(h[1] + 1) / 256.0 - shift
        tops = {f" {word}": lp, f" x{h[2]}": lp - 0.5 - h[3] / 256.0, f" y{h[4]}": lp - 1.0 - h[5] / 256.0}
        out.append((f" {word}", lp, tops))
    return out


def _chat_logprobs(gen: list[tuple[str, float, dict[str, float]]]) -> dict[str, Any]:
    return {
        "content": [
            {
                "token": tok,
                "logprob": lp,
                "bytes": list(tok.encode()),
                "top_logprobs": [
                    {"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in tops.items()
                ],
            }
            for tok, lp, tops in gen
        ]
    }


def _completion_logprobs(gen: list[tuple[str, float, dict[str, float]]]) -> dict[str, Any]:
    return {
        "tokens": [tok for tok, _, _ in gen],
        "token_logprobs": [lp for _, lp, _ in gen],
        "top_logprobs": [tops for _, _, tops in gen],
        "text_offset": [],
    }


def create_fake_app(cfg: FakeServerConfig, state: FakeState | None = None):  # type: ignore[no-untyped-def]
    """The starlette app; ``state`` is shared so tests can inspect it."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
    from starlette.routing import Route

    st = state or FakeState()
    cache = PrefixCache(st, cfg.block_size, cfg.capacity_tokens)

    def unauthorized(request: Request) -> Response | None:
        if cfg.api_key and request.headers.get("authorization") != f"Bearer {cfg.api_key}":
            return JSONResponse({"error": {"message": "bad api key"}}, status_code=401)
        return None

    async def completions(request: Request) -> Response:
        if (resp := unauthorized(request)) is not None:
            return resp
        body = await request.json()
        st.bodies.append(body)
        st.requests += 1
        chat = request.url.path.endswith("/chat/completions")
        tokens = _tokens(body)
        n_out = int(body.get("max_tokens") or body.get("max_completion_tokens") or 1)
        wants_logprobs = bool(body.get("logprobs") or body.get("top_logprobs"))
        if wants_logprobs and not cfg.logprobs:
            return JSONResponse({"error": {"message": "logprobs are not supported"}}, status_code=400)
        limit = min(cfg.advertised_tokens, cfg.capacity_tokens)
        if cfg.enforce_limits and len(tokens) > limit:
            msg = f"the prompt has {len(tokens)} tokens, more than this server's limit of {limit}"
            return JSONResponse({"error": {"message": msg}}, status_code=400)
        ns = _namespace(cfg, request.headers.get("authorization"), body)
        stale = _stale(st, ns) if cfg.fault and n_out > 1 else []
        st.last_prompt.pop(ns, None)
        st.last_prompt[ns] = tokens
        if cfg.fault and n_out > 1 and cfg.integrity_checks:
            st.failed_closed += 1
            return JSONResponse(
                {"error": {"message": "KV integrity violation", "type": "server_error"}}, status_code=500
            )
        cached = cache.lookup_and_insert(tokens, ns)
        gen = _generate(tokens, stale, n_out, cfg.leak_style, cfg.path_noise if cached else 0.0)
        st.prompt_tokens_total += len(tokens)
        st.cached_tokens_total += cached * cfg.metrics_scale
        timed = 0 if cfg.lie == "report-without-speed" else cached
        reported = 0 if cfg.lie == "speed-without-report" else cached
        delay = cfg.base_s + cfg.per_token_s * (len(tokens) - timed)
        created, rid = int(time.time()), f"fake-{st.requests}"
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> str:
            data = {
                "id": rid,
                "object": obj,
                "created": created,
                "model": cfg.model,
                "choices": choices,
                "usage": usage,
            }
            return f"data: {json.dumps(data)}\n\n"

        def choice(text: str, finish: str | None = None, role: bool = False) -> dict[str, Any]:
            if chat:
                delta = {"role": "assistant", "content": ""} if role else {"content": text}
                return {"index": 0, "delta": delta, "finish_reason": finish}
            return {"index": 0, "text": text, "finish_reason": finish}

        if not body.get("stream"):
            await asyncio.sleep(delay)
            text = "".join(tok for tok, _, _ in gen)
            logprobs = None
            if wants_logprobs:
                logprobs = _chat_logprobs(gen) if chat else _completion_logprobs(gen)
            message = {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
            return JSONResponse(
                {
                    "id": rid,
                    "object": "chat.completion" if chat else "text_completion",
                    "created": created,
                    "model": cfg.model,
                    "choices": [{"index": 0, **message, "logprobs": logprobs, "finish_reason": "length"}],
                    "usage": _usage(cfg, len(tokens), reported, n_out),
                }
            )

        async def stream() -> AsyncIterator[str]:
            await asyncio.sleep(delay)
            if chat:
                yield chunk([choice("", role=True)])
            for i, (tok, _, _) in enumerate(gen):
                yield chunk([choice(tok, "length" if i == n_out - 1 else None)])
            if (body.get("stream_options") or {}).get("include_usage"):
                yield chunk([], _usage(cfg, len(tokens), reported, n_out))
            yield "data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def models(request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": cfg.model, "object": "model", "max_model_len": cfg.advertised_tokens}],
            }
        )

    async def health(request: Request) -> Response:
        if not cfg.expose_pool:
            return JSONResponse({"status": "ok"})
        return JSONResponse(
            {"status": "ok", "kv_pool_tokens": cfg.capacity_tokens, "block_size": cfg.block_size}
        )

    async def metrics(request: Request) -> Response:
        if not cfg.metrics:
            return PlainTextResponse("not found", status_code=404)
        text = (
            "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of tokens.\n"
            "# TYPE vllm:prefix_cache_queries_total counter\n"
            f'vllm:prefix_cache_queries_total{{model_name="{cfg.model}"}} {float(st.prompt_tokens_total)}\n'
            "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of tokens.\n"
            "# TYPE vllm:prefix_cache_hits_total counter\n"
            f'vllm:prefix_cache_hits_total{{model_name="{cfg.model}"}} {float(st.cached_tokens_total)}\n'
        )
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    return Starlette(
        routes=[
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
        ]
    )


@contextmanager
def fake_server(cfg: FakeServerConfig | None = None) -> Iterator[tuple[str, FakeState]]:
    """Start the fake server; yield its API base URL (``.../v1``) and its state."""
    state = FakeState()
    from prefixlint.live.serving import serve_in_thread

    with serve_in_thread(create_fake_app(cfg or FakeServerConfig(), state), lifespan="auto") as root:
        yield root + "/v1", state
