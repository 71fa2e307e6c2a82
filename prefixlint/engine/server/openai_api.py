"""``POST /v1/completions`` and ``POST /v1/chat/completions``, plain and streamed."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from prefixlint.engine.server.errors import ApiError, read_json, text_blocks
from prefixlint.engine.server.frontend import Piece, Server, collect, started
from prefixlint.engine.server.sse import DONE, sse

ChunkMaker = Callable[[Piece], dict]


def usage_of(p: Piece) -> dict:
    """OpenAI ``usage``; ``cached_tokens`` is always present, 0 included."""
    return {
        "prompt_tokens": p.prompt_tokens,
        "completion_tokens": p.completion_tokens,
        "total_tokens": p.prompt_tokens + p.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": p.cached_tokens},
    }


def finish_reason(p: Piece) -> str | None:
    """OpenAI reports a stop string as ``stop``."""
    return "stop" if p.reason == "stop_sequence" else p.reason


def include_usage(body: dict) -> bool:
    return bool((body.get("stream_options") or {}).get("include_usage"))


def completion_prompt(srv: Server, body: dict) -> list[int]:
    """Token ids of ``prompt``: a string or a list of ids, one prompt per request."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    if isinstance(prompt, str):
        return srv.engine.tokenizer.encode(prompt)
    if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
        return list(prompt)
    raise ApiError(400, "prompt must be a string or a list of token ids (one prompt per request)")


def chat_prompt(srv: Server, body: dict) -> list[int]:
    """Token ids of ``messages`` rendered with the tokenizer's chat template."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages must be a non-empty list")
    flat = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ApiError(400, f"messages[{i}] needs a role")
        text = "".join(b.get("text", "") for b in text_blocks(m.get("content", ""), f"messages[{i}]"))
        flat.append({"role": m["role"], "content": text})
    tok = srv.engine.tokenizer
    return tok.encode(tok.render_chat(flat))


def stream_response(
    first: Piece, gen: AsyncIterator[Piece], chunk: ChunkMaker, head: dict | None, usage: bool
) -> StreamingResponse:
    """SSE chunks, an optional usage-only chunk, then ``[DONE]``; a failure mid-stream is sent as
    an error event. A disconnected client aborts the request."""

    async def events() -> AsyncIterator[str]:
        extra = {"usage": None} if usage else {}
        if head is not None:
            yield sse({**head, **extra})
        last = first
        yield sse({**chunk(first), **extra})
        try:
            async for piece in gen:
                last = piece
                yield sse({**chunk(piece), **extra})
        except ApiError as exc:
            yield sse({"error": {"message": exc.message, "type": exc.kind}})
            return
        finally:
            await gen.aclose()  # a disconnected client aborts the request here
        if usage:
            yield sse({**chunk(last), "choices": [], "usage": usage_of(last)})
        yield DONE

    return StreamingResponse(events(), media_type="text/event-stream")


async def completions(srv: Server, request: Request) -> Response:
    body = await read_json(request)
    ns = srv.namespace(request, body)
    ids = completion_prompt(srv, body)
    params = srv.params(body, body.get("max_tokens", 16))
    first, gen = await started(srv.pieces(ids, params, ns, srv.stops(body.get("stop"))))
    rid, created = f"cmpl-{uuid.uuid4().hex}", int(time.time())

    def chunk(p: Piece) -> dict:
        choice = {"index": 0, "text": p.text, "logprobs": None, "finish_reason": finish_reason(p)}
        head = {"id": rid, "object": "text_completion", "created": created, "model": srv.model_name}
        return {**head, "choices": [choice]}

    if body.get("stream"):
        return stream_response(first, gen, chunk, None, include_usage(body))
    text, last = await collect(first, gen)
    out = chunk(last)
    out["choices"][0]["text"] = text
    return JSONResponse({**out, "usage": usage_of(last)})


async def chat_completions(srv: Server, request: Request) -> Response:
    body = await read_json(request)
    ns = srv.namespace(request, body)
    ids = chat_prompt(srv, body)
    params = srv.params(body, body.get("max_completion_tokens", body.get("max_tokens")))
    first, gen = await started(srv.pieces(ids, params, ns, srv.stops(body.get("stop"))))
    rid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    base = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": srv.model_name}

    def chunk(p: Piece) -> dict:
        delta = {"content": p.text} if p.text else {}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason(p)}
        return {**base, "choices": [choice]}

    if body.get("stream"):
        delta = {"role": "assistant", "content": ""}
        role = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
        return stream_response(first, gen, chunk, {**base, "choices": [role]}, include_usage(body))
    text, last = await collect(first, gen)
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(last)}
    return JSONResponse({**base, "object": "chat.completion", "choices": [choice], "usage": usage_of(last)})


def add_openai_routes(app: FastAPI, srv: Server) -> None:
    """Mount the two OpenAI generation routes."""

    @app.post("/v1/completions")
    async def _completions(request: Request) -> Response:
        return await completions(srv, request)

    @app.post("/v1/chat/completions")
    async def _chat(request: Request) -> Response:
        return await chat_completions(srv, request)
