"""OpenAI- and Anthropic-compatible HTTP server over :class:`LLMEngine`.

* The tenant comes from the API key (``Authorization: Bearer KEY`` or ``x-api-key: KEY``),
  mapped server-side; it is the cache namespace, so tenants never share KV blocks.
* A ``cache_salt`` in the body is honoured only with ``allow_client_salt``; otherwise it is
  rejected (400), because a client-chosen salt can simply be set to a victim's value.
* ``usage.prompt_tokens_details.cached_tokens`` is always present, 0 included (vLLM omits it at 0).
* Errors before the first token get a real HTTP status (400 admission, 500 integrity); a request
  whose KV integrity check fails returns no tokens.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from prefixlint.engine.llm_engine import AdmissionError, LLMEngine
from prefixlint.engine.metrics import CONTENT_TYPE, EngineMetrics
from prefixlint.engine.sampling import SamplingParams

MAX_BREAKPOINTS = 4  # Anthropic's limit on cache_control blocks


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


@dataclass
class Piece:
    """Text since the last piece; ``reason`` is set on the last piece of a request."""

    text: str
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    reason: str | None = None  # stop | length | stop_sequence
    stop_sequence: str | None = None


def _sse(data: object, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def _text_of(content: object, where: str) -> list[dict]:
    """Normalise message content (a string or a list of text blocks) to text blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list) and all(isinstance(b, dict) for b in content):
        blocks = [b for b in content if b.get("type") == "text"]
        if len(blocks) != len(content):
            raise ApiError(400, f"{where}: only text content is supported")
        return blocks
    raise ApiError(400, f"{where}: content must be a string or a list of text blocks")


class Server:
    """Request handling shared by the OpenAI and Anthropic routes."""

    def __init__(self, engine: LLMEngine, api_keys: dict[str, str] | None, model_name: str) -> None:
        self.engine, self.api_keys, self.model_name = engine, api_keys, model_name

    def tenant(self, request: Request) -> str | None:
        if self.api_keys is None:
            return None
        auth = request.headers.get("authorization", "")
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else request.headers.get("x-api-key")
        if not key or key not in self.api_keys:
            raise ApiError(401, "invalid or missing API key", "authentication_error")
        return self.api_keys[key]

    def namespace(self, request: Request, body: dict) -> str:
        tenant = self.tenant(request)
        salt = body.get("cache_salt")
        if salt is not None:
            if not self.engine.config.allow_client_salt:
                raise ApiError(
                    400,
                    "cache_salt is not accepted by this server: the cache namespace "
                    "comes from your API key (start it with --allow-client-salt to "
                    "honour client salts)",
                )
            if not isinstance(salt, str) or not 1 <= len(salt) <= 1024:
                raise ApiError(400, "cache_salt must be a string of 1 to 1024 characters")
        return self.engine.namespace(tenant, salt)

    def params(self, body: dict, max_tokens: object) -> SamplingParams:
        if body.get("n", 1) != 1 or body.get("best_of", 1) != 1:
            raise ApiError(400, "only n=1 is supported")
        if body.get("logprobs") or body.get("top_logprobs") or body.get("echo"):
            raise ApiError(400, "logprobs and echo are not supported")

        def num(key: str, default: float) -> float:
            value = body.get(key)
            return default if value is None else float(value)

        try:
            return SamplingParams(
                max_tokens=int(max_tokens) if max_tokens is not None else self.engine.config.max_model_len,
                temperature=num("temperature", 1.0),
                top_p=num("top_p", 1.0),
                seed=None if body.get("seed") is None else int(body["seed"]),
                ignore_eos=bool(body.get("ignore_eos", False)),
            )
        except (TypeError, ValueError) as exc:
            raise ApiError(400, f"invalid sampling parameters: {exc}") from exc

    @staticmethod
    def stops(value: object) -> list[str]:
        if value is None:
            return []
        stops = [value] if isinstance(value, str) else value
        if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
            raise ApiError(400, "stop sequences must be non-empty strings")
        return stops

    async def pieces(
        self, ids: list[int], params: SamplingParams, ns: str, stops: list[str], cacheable: int | None = None
    ) -> AsyncIterator[Piece]:
        """Text pieces with stop strings applied. Raises ApiError: 400 before admission, 500 when
        the engine failed the request (then no text is produced)."""
        try:
            self.engine.check_prompt(ids)
        except AdmissionError as exc:
            self.engine.counters.rejected += 1
            raise ApiError(400, str(exc)) from exc
        tok = self.engine.tokenizer
        out_ids: list[int] = []
        sent = ""
        stream = self.engine.generate_stream(ids, params, ns, cacheable)
        try:
            async for delta in stream:
                out = delta.output
                if out is not None and out.finish_reason == "error":
                    raise ApiError(500, out.error or "request failed", "server_error")
                out_ids.extend(delta.token_ids)
                text = tok.decode(out_ids)
                counts = (len(ids), delta.num_cached_tokens, len(out_ids))
                hits = [(text.find(s), s) for s in stops if s in text]
                if hits:
                    at, stop = min(hits)
                    yield Piece(text[len(sent) : at], *counts, "stop_sequence", stop)
                    return
                if out is None and text.endswith("\ufffd"):
                    continue  # the rest of a multi-byte character is still to come
                yield Piece(text[len(sent) :], *counts, out.finish_reason if out else None)
                sent = text
        finally:
            await stream.aclose()  # aborts the request (frees its blocks) if it is still running


async def _started(gen: AsyncIterator[Piece]) -> tuple[Piece, AsyncIterator[Piece]]:
    """Run to the first piece, so failures before any output become real HTTP errors."""
    return await gen.__anext__(), gen


async def _collect(gen: AsyncIterator[Piece]) -> tuple[str, Piece]:
    text, last = "", None
    async for piece in gen:
        text, last = text + piece.text, piece
    assert last is not None
    return text, last


def _openai_usage(p: Piece) -> dict:
    return {
        "prompt_tokens": p.prompt_tokens,
        "completion_tokens": p.completion_tokens,
        "total_tokens": p.prompt_tokens + p.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": p.cached_tokens},
    }


def _openai_reason(p: Piece) -> str | None:
    return "stop" if p.reason == "stop_sequence" else p.reason


def create_app(
    engine: LLMEngine, api_keys: dict[str, str] | None = None, model_name: str | None = None
) -> FastAPI:
    """The ASGI app. ``api_keys`` maps API key -> tenant; None serves one anonymous tenant."""
    srv = Server(engine, api_keys, model_name or engine.model_name)
    metrics = EngineMetrics(engine)
    app = FastAPI(title="prefixlint engine")
    app.state.engine, app.state.metrics = engine, metrics
    engine.start()

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        if request.url.path.startswith("/v1/messages"):
            body: dict = {"type": "error", "error": {"type": exc.kind, "message": exc.message}}
        else:
            body = {"error": {"message": exc.message, "type": exc.kind, "param": None, "code": exc.status}}
        return JSONResponse(body, status_code=exc.status)

    async def read_json(request: Request) -> dict:
        try:
            body = await request.json()
        except ValueError as exc:
            raise ApiError(400, "the request body is not valid JSON") from exc
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        return body

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/metrics")
    async def get_metrics() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/v1/models")
    async def models(request: Request) -> dict:
        srv.tenant(request)
        return {
            "object": "list",
            "data": [
                {
                    "id": srv.model_name,
                    "object": "model",
                    "created": 0,
                    "owned_by": "prefixlint",
                    "max_model_len": srv.engine.config.max_model_len,  # as vLLM lists it
                }
            ],
        }

    def openai_stream(
        first: Piece,
        gen: AsyncIterator[Piece],
        make_chunk: Callable[[Piece], dict],
        head: dict | None,
        usage: bool,
    ) -> StreamingResponse:
        async def events() -> AsyncIterator[str]:
            extra = {"usage": None} if usage else {}
            if head is not None:
                yield _sse({**head, **extra})
            last = first
            yield _sse({**make_chunk(first), **extra})
            try:
                async for piece in gen:
                    last = piece
                    yield _sse({**make_chunk(piece), **extra})
            except ApiError as exc:
                yield _sse({"error": {"message": exc.message, "type": exc.kind}})
                return
            finally:
                await gen.aclose()  # a disconnected client aborts the request here
            if usage:
                yield _sse({**make_chunk(last), "choices": [], "usage": _openai_usage(last)})
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        body = await read_json(request)
        ns = srv.namespace(request, body)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
            prompt = prompt[0]
        if isinstance(prompt, str):
            ids = engine.tokenizer.encode(prompt)
        elif isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
            ids = list(prompt)
        else:
            raise ApiError(400, "prompt must be a string or a list of token ids (one prompt per request)")
        params = srv.params(body, body.get("max_tokens", 16))
        first, gen = await _started(srv.pieces(ids, params, ns, srv.stops(body.get("stop"))))
        rid, created = f"cmpl-{uuid.uuid4().hex}", int(time.time())

        def chunk(p: Piece) -> dict:
            return {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": srv.model_name,
                "choices": [
                    {"index": 0, "text": p.text, "logprobs": None, "finish_reason": _openai_reason(p)}
                ],
            }

        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return openai_stream(first, gen, chunk, None, usage)
        text, last = await _collect(_chain(first, gen))
        out = chunk(last)
        out["choices"][0]["text"] = text
        return JSONResponse({**out, "usage": _openai_usage(last)})

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = await read_json(request)
        ns = srv.namespace(request, body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ApiError(400, "messages must be a non-empty list")
        flat = []
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise ApiError(400, f"messages[{i}] needs a role")
            text = "".join(b.get("text", "") for b in _text_of(m.get("content", ""), f"messages[{i}]"))
            flat.append({"role": m["role"], "content": text})
        ids = engine.tokenizer.encode(engine.tokenizer.render_chat(flat))
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        params = srv.params(body, max_tokens)
        first, gen = await _started(srv.pieces(ids, params, ns, srv.stops(body.get("stop"))))
        rid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        base = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": srv.model_name}

        def chunk(p: Piece) -> dict:
            return {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": p.text} if p.text else {},
                        "logprobs": None,
                        "finish_reason": _openai_reason(p),
                    }
                ],
            }

        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            head = {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
            }
            return openai_stream(first, gen, chunk, head, usage)
        text, last = await _collect(_chain(first, gen))
        return JSONResponse(
            {
                "id": rid,
                "object": "chat.completion",
                "created": created,
                "model": srv.model_name,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "logprobs": None,
                        "finish_reason": _openai_reason(last),
                    }
                ],
                "usage": _openai_usage(last),
            }
        )

    @app.post("/v1/messages")
    async def messages(request: Request) -> Response:
        body = await read_json(request)
        ns = srv.namespace(request, body)
        ids, breakpoints = _anthropic_prompt(engine, body)
        if len(breakpoints) > MAX_BREAKPOINTS:
            raise ApiError(400, f"a maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided")
        if not isinstance(body.get("max_tokens"), int):
            raise ApiError(400, "max_tokens: field required (an integer)")
        cacheable = max(breakpoints, default=0)
        params = srv.params(body, body["max_tokens"])
        stops = srv.stops(body.get("stop_sequences"))
        first, gen = await _started(srv.pieces(ids, params, ns, stops, cacheable))
        bs = engine.config.block_size

        def usage(p: Piece) -> dict:
            written = min(cacheable, p.prompt_tokens) // bs * bs
            creation = max(0, written - p.cached_tokens)
            return {
                "input_tokens": p.prompt_tokens - p.cached_tokens - creation,
                "output_tokens": p.completion_tokens,
                "cache_creation_input_tokens": creation,
                "cache_read_input_tokens": p.cached_tokens,
            }

        def stop_reason(p: Piece) -> str | None:
            return {"length": "max_tokens", "stop": "end_turn"}.get(p.reason or "", p.reason)

        message = {
            "id": f"msg_{uuid.uuid4().hex}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or srv.model_name,
        }
        if not body.get("stream"):
            text, last = await _collect(_chain(first, gen))
            return JSONResponse(
                {
                    **message,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": stop_reason(last),
                    "stop_sequence": last.stop_sequence,
                    "usage": usage(last),
                }
            )

        async def events() -> AsyncIterator[str]:
            yield _sse(
                {
                    "type": "message_start",
                    "message": {
                        **message,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**usage(first), "output_tokens": 0},
                    },
                },
                "message_start",
            )
            yield _sse(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                "content_block_start",
            )
            last = first
            try:
                async for piece in _chain(first, gen):
                    last = piece
                    if piece.text:
                        yield _sse(
                            {
                                "type": "content_block_delta",
                                "index": 0,
                                "delta": {"type": "text_delta", "text": piece.text},
                            },
                            "content_block_delta",
                        )
            except ApiError as exc:
                yield _sse({"type": "error", "error": {"type": exc.kind, "message": exc.message}}, "error")
                return
            finally:
                await gen.aclose()  # a disconnected client aborts the request here
            yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            yield _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason(last), "stop_sequence": last.stop_sequence},
                    "usage": usage(last),
                },
                "message_delta",
            )
            yield _sse({"type": "message_stop"}, "message_stop")

        return StreamingResponse(events(), media_type="text/event-stream")

    return app


async def _chain(first: Piece, rest: AsyncIterator[Piece]) -> AsyncIterator[Piece]:
    yield first
    async for piece in rest:
        yield piece


def _anthropic_prompt(engine: LLMEngine, body: dict) -> tuple[list[int], list[int]]:
    """Token ids of system + messages (ChatML framing, each text block encoded on its own so
    breakpoint offsets are exact) and the token offset after each ``cache_control`` block."""
    enc = engine.tokenizer.encode
    ids: list[int] = []
    breakpoints: list[int] = []

    def turn(role: str, blocks: list[dict]) -> None:
        ids.extend(enc(f"<|im_start|>{role}\n"))
        for block in blocks:
            ids.extend(enc(block.get("text", "")))
            if block.get("cache_control"):
                breakpoints.append(len(ids))
        ids.extend(enc("<|im_end|>\n"))

    system = body.get("system")
    if system:
        turn("system", _text_of(system, "system"))
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise ApiError(400, "messages must be a non-empty list")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise ApiError(400, f"messages[{i}].role must be 'user' or 'assistant'")
        turn(m["role"], _text_of(m.get("content", ""), f"messages[{i}].content"))
    ids.extend(enc("<|im_start|>assistant\n"))
    return ids, breakpoints
