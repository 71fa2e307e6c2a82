"""A local provider-shaped HTTP server for SDK tests and the overhead bench.

It serves ``/v1/chat/completions``, ``/v1/responses`` and ``/v1/messages`` (with streaming) on
127.0.0.1 from a background thread, and computes cached tokens with a prefix cache of its own:

* OpenAI routes: 16-token block hashes, 1024-token minimum, 128-token increments, one cache per API
  key (and per ``cache_salt`` when ``salt_mode`` is on, as vLLM does; then the field is omitted at 0);
* ``/v1/messages``: Anthropic breakpoints (explicit ``cache_control`` or top-level), 20-block
  lookback, 5m/1h writes, ``input_tokens`` excluding cached and written tokens.

It tokenizes with its own framing (cl100k by default, ``tokenizer="chars"`` for a cheap one), so the
client's counts never match it by construction; an image part counts as providers count it, by its
size in pixels (prefixlint's rule for the provider, as they publish it), not as its base64 text.
``mode = "over"`` claims 97% cached on everything; ``mode = "under"`` reports no cache hits (as an
eviction would).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from prefixlint.live.serving import BackgroundServer
from prefixlint.model.images import image_text

BLOCK = 16


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


@dataclass
class ProviderServer:
    """The server state; ``url`` is set once it runs."""

    tokenizer: str = "cl100k"
    mode: str = "normal"  # "normal", "over", "under"
    salt_mode: bool = False
    anthropic_min: int = 1024
    openai_min: int = 1024
    chunks: int = 3
    delay: float = 0.0  # seconds between computing the usage and answering (requests stay in flight)
    tool_use: bool = False  # /v1/messages answers with a text block and a tool_use block
    fail_next: int = 0  # answer this many requests with HTTP 500 after their prompt was cached
    usage_in_delta: bool = False  # Anthropic streams: cache counts only in message_delta (some gateways)
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    _blocks: dict[str, set[bytes]] = field(default_factory=dict)
    _bp: dict[str, dict[bytes, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: Any = None

    # -- tokenization and caches ---------------------------------------------------------------
    def _encode(self, text: str) -> list[int]:
        if self.tokenizer == "chars":
            return [hash(text[i : i + 4]) & 0xFFFF for i in range(0, len(text), 4)]
        from prefixlint.model.tokens import get_tokenizer

        return get_tokenizer("cl100k_base").encode(text)

    def reset(self) -> None:
        with self._lock:
            self._blocks.clear()
            self._bp.clear()
            self.requests.clear()
            self.mode = "normal"
            self.salt_mode = False
            self.chunks = 3
            self.delay = 0.0
            self.tool_use = False
            self.fail_next = 0
            self.usage_in_delta = False

    def _units(self, body: dict[str, Any], api: str) -> list[tuple[list[int], str | None]]:
        """(token ids, cache_control ttl) per unit, with this server's framing."""
        units: list[tuple[list[int], str | None]] = []

        def add(text: str, part: Any = None) -> None:
            ttl = None
            if isinstance(part, dict) and isinstance(part.get("cache_control"), dict):
                ttl = part["cache_control"].get("ttl", "5m")
            units.append((self._encode(text), ttl))

        for tool in body.get("tools") or []:
            add("<tool>" + _dumps({k: v for k, v in tool.items() if k != "cache_control"}), tool)
        for key in ("response_format",):
            if body.get(key):
                add("<format>" + _dumps(body[key]))
        system = body.get("system") if api == "messages" else body.get("instructions")
        if isinstance(system, str):
            add("<|system|>" + system)
        elif isinstance(system, list):
            for b in system:
                add("<|system|>" + b.get("text", ""), b)
        msgs = body.get("input" if api == "responses" else "messages") or []
        if isinstance(msgs, str):
            msgs = [{"role": "user", "content": msgs}]
        for m in msgs:
            role = m.get("role", "user")
            content = m.get("content")
            if isinstance(content, str):
                add(f"<|{role}|>" + content)
            elif isinstance(content, list):
                for j, part in enumerate(content):
                    text = part.get("text") if isinstance(part, dict) else str(part)
                    head = f"<|{role}|>" if j == 0 else ""
                    image = image_text(part)
                    if image is not None:  # as providers count an image: by its size, not its base64
                        add(head, part)
                        seed = int.from_bytes(hashlib.blake2b(image.encode(), digest_size=4).digest(), "big")
                        units[-1] = (units[-1][0] + [seed + i for i in range(image.tokens)], units[-1][1])
                        continue
                    add(head + (text if text is not None else _dumps(part)), part)
        if api == "messages" and isinstance(body.get("cache_control"), dict) and units:
            units[-1] = (units[-1][0], body["cache_control"].get("ttl", "5m"))
        return units

    def _openai_cached(self, ns: str, ids: list[int]) -> int:
        blocks = self._blocks.setdefault(ns, set())
        h = b""
        hashes = []
        for i in range(0, len(ids) - BLOCK + 1, BLOCK):
            h = hashlib.blake2b(h + repr(ids[i : i + BLOCK]).encode(), digest_size=16).digest()
            hashes.append(h)
        n = 0
        for hh in hashes:
            if hh not in blocks:
                break
            n += BLOCK
        blocks.update(hashes)
        n = min(n, len(ids) - 1)
        if self.salt_mode:
            return n // BLOCK * BLOCK
        if n < self.openai_min:
            return 0
        return self.openai_min + (n - self.openai_min) // 128 * 128

    def _anthropic(self, ns: str, units: list[tuple[list[int], str | None]]) -> dict[str, int]:
        store = self._bp.setdefault(ns, {})
        now = time.monotonic()
        ends, keys = [], []
        h = b""
        pos = 0
        for ids, _ in units:
            h = hashlib.blake2b(h + repr(ids).encode(), digest_size=16).digest()
            pos += len(ids)
            ends.append(pos)
            keys.append(h)
        bps = [i for i, (_, ttl) in enumerate(units) if ttl]
        read = 0
        for b in reversed(bps):
            for j in range(b, max(-1, b - 20), -1):
                exp = store.get(keys[j])
                if exp is not None and exp >= now:
                    read = ends[j]
                    break
            if read:
                break
        w1 = w5 = 0
        last_1h = max((ends[b] for b in bps if units[b][1] == "1h"), default=0)
        for b in bps:
            if ends[b] >= self.anthropic_min:
                ttl = 3600 if units[b][1] == "1h" else 300
                store[keys[b]] = max(store.get(keys[b], 0), now + ttl)
        last = max((ends[b] for b in bps if ends[b] >= self.anthropic_min), default=0)
        if last > read:
            w1 = max(0, min(last_1h, last) - read) if last_1h >= self.anthropic_min else 0
            w5 = last - read - w1
        total = pos
        return {"read": read, "w5": w5, "w1": w1, "total": total}

    def _namespace(self, request: Request, body: dict[str, Any]) -> str:
        key = request.headers.get("authorization") or request.headers.get("x-api-key") or ""
        if self.salt_mode and body.get("cache_salt"):
            key += "|" + str(body["cache_salt"])
        return key

    # -- usage in each provider's shape --------------------------------------------------------
    def openai_usage(self, request: Request, body: dict[str, Any], api: str) -> dict[str, Any]:
        ids = [t for u, _ in self._units(body, api) for t in u]
        with self._lock:
            cached = self._openai_cached(self._namespace(request, body), ids)
        prompt = len(ids)
        if self.mode == "over":
            cached = int(prompt * 0.97)
        elif self.mode == "under":
            cached = 0
        if api == "responses":
            return {
                "input_tokens": prompt,
                "output_tokens": 5,
                "total_tokens": prompt + 5,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}
        if not self.salt_mode or cached:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return usage

    def anthropic_usage(self, request: Request, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            r = self._anthropic(self._namespace(request, body), self._units(body, "messages"))
        if self.mode == "over":
            r["read"], r["w5"], r["w1"] = int(r["total"] * 0.97), 0, 0
        elif self.mode == "under":
            r["read"] = 0
        inp = r["total"] - r["read"] - r["w5"] - r["w1"]
        return {
            "input_tokens": max(0, inp),
            "output_tokens": 5,
            "cache_read_input_tokens": r["read"],
            "cache_creation_input_tokens": r["w5"] + r["w1"],
            "cache_creation": {"ephemeral_5m_input_tokens": r["w5"], "ephemeral_1h_input_tokens": r["w1"]},
        }

    # -- routes --------------------------------------------------------------------------------
    async def chat(self, request: Request) -> Any:
        body = await request.json()
        self.requests.append(body)
        usage = self.openai_usage(request, body, "chat")
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_next > 0:
            self.fail_next -= 1
            return JSONResponse({"error": {"message": "overloaded", "type": "server_error"}}, status_code=500)
        cid, model, created = f"chatcmpl-{uuid.uuid4().hex[:8]}", body.get("model"), int(time.time())
        if not body.get("stream"):
            return JSONResponse(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": _answer(body)},
                        }
                    ],
                    "usage": usage,
                }
            )
        include = (body.get("stream_options") or {}).get("include_usage")

        async def gen() -> Any:
            for i in range(self.chunks):
                chunk = {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}],
                }
                yield f"data: {_dumps(chunk)}\n\n"
                await asyncio.sleep(0)
            if include:
                chunk = {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
                yield f"data: {_dumps(chunk)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(gen(), media_type="text/event-stream")

    async def responses(self, request: Request) -> Any:
        body = await request.json()
        self.requests.append(body)
        usage = self.openai_usage(request, body, "responses")
        rid = f"resp_{uuid.uuid4().hex[:8]}"
        resp = {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model"),
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "ok", "annotations": []}],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage,
        }
        if not body.get("stream"):
            return JSONResponse(resp)

        async def gen() -> Any:
            n = 0
            yield f"event: response.created\ndata: {_dumps({'type': 'response.created', 'sequence_number': n, 'response': {**resp, 'status': 'in_progress', 'usage': None}})}\n\n"  # noqa: E501
            for i in range(self.chunks):
                n += 1
                ev = {
                    "type": "response.output_text.delta",
                    "sequence_number": n,
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": f"w{i} ",
                    "logprobs": [],
                }
                yield f"event: response.output_text.delta\ndata: {_dumps(ev)}\n\n"
                await asyncio.sleep(0)
            ev = {"type": "response.completed", "sequence_number": n + 1, "response": resp}
            yield f"event: response.completed\ndata: {_dumps(ev)}\n\n"

        return StreamingResponse(gen(), media_type="text/event-stream")

    async def vertex(self, request: Request) -> Any:
        """Anthropic on Vertex: ``.../models/{model}:rawPredict`` or ``:streamRawPredict``."""
        model, _, verb = request.path_params["rest"].rsplit("/", 1)[-1].partition(":")
        return await self.messages(request, {"model": model, "stream": verb == "streamRawPredict"})

    async def messages(self, request: Request, extra: dict[str, Any] | None = None) -> Any:
        body = {**(await request.json()), **(extra or {})}
        self.requests.append(body)
        usage = self.anthropic_usage(request, body)
        if self.delay:
            await asyncio.sleep(self.delay)
        mid, model = f"msg_{uuid.uuid4().hex[:8]}", body.get("model")
        content: list[dict[str, Any]] = [{"type": "text", "text": "ok"}]
        if self.tool_use:
            content.append({"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"q": "x"}})
        message = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if self.tool_use else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return JSONResponse(message)

        async def gen() -> Any:
            first = {**usage, "output_tokens": 1}
            final = {"output_tokens": 5}
            if self.usage_in_delta:
                cache_keys = ("cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation")
                first = {k: v for k, v in first.items() if k not in cache_keys}
                final = {**final, **{k: usage[k] for k in cache_keys}}
            start = {**message, "content": [], "stop_reason": None, "usage": first}
            events = [
                ("message_start", {"type": "message_start", "message": start}),
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
            ]
            events += [
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": f"w{i} "},
                    },
                )
                for i in range(self.chunks)
            ]
            events += [
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": final,
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
            for name, ev in events:
                yield f"event: {name}\ndata: {_dumps(ev)}\n\n"
                await asyncio.sleep(0)

        return StreamingResponse(gen(), media_type="text/event-stream")

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ProviderServer:
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/responses", self.responses, methods=["POST"]),
                Route("/v1/messages", self.messages, methods=["POST"]),
                Route("/v1/projects/{rest:path}", self.vertex, methods=["POST"]),
            ]
        )
        self._server = BackgroundServer(app, timeout=20)
        self.url = self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()


def _answer(body: dict) -> str:
    """``ok``, or a JSON object when the request asks for structured output (``.parse``)."""
    fmt = body.get("response_format") or {}
    return '{"answer": "ok"}' if fmt.get("type") == "json_schema" else "ok"


if __name__ == "__main__":  # run in its own process: prints the URL, serves until stdin closes
    import sys

    srv = ProviderServer(tokenizer=sys.argv[1] if len(sys.argv) > 1 else "cl100k").start()
    print(srv.url, flush=True)
    sys.stdin.read()
    srv.stop()
