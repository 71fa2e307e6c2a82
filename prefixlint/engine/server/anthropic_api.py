"""``POST /v1/messages`` (Anthropic Messages), with ``cache_control`` breakpoints."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from prefixlint.engine.llm_engine import LLMEngine
from prefixlint.engine.server.errors import ApiError, read_json, text_blocks
from prefixlint.engine.server.frontend import Piece, Server, chain, collect, started
from prefixlint.engine.server.sse import sse

MAX_BREAKPOINTS = 4  # Anthropic's limit on cache_control blocks


def anthropic_prompt(engine: LLMEngine, body: dict) -> tuple[list[int], list[int]]:
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
        turn("system", text_blocks(system, "system"))
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise ApiError(400, "messages must be a non-empty list")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise ApiError(400, f"messages[{i}].role must be 'user' or 'assistant'")
        turn(m["role"], text_blocks(m.get("content", ""), f"messages[{i}].content"))
    ids.extend(enc("<|im_start|>assistant\n"))
    return ids, breakpoints


def usage_of(p: Piece, cacheable: int, block_size: int) -> dict:
    """Anthropic usage: what was read from the cache, what was newly written (whole blocks up to
    the last breakpoint), and the rest."""
    written = min(cacheable, p.prompt_tokens) // block_size * block_size
    creation = max(0, written - p.cached_tokens)
    return {
        "input_tokens": p.prompt_tokens - p.cached_tokens - creation,
        "output_tokens": p.completion_tokens,
        "cache_creation_input_tokens": creation,
        "cache_read_input_tokens": p.cached_tokens,
    }


def stop_reason(p: Piece) -> str | None:
    return {"length": "max_tokens", "stop": "end_turn"}.get(p.reason or "", p.reason)


def message_events(
    message: dict, first: Piece, gen: AsyncIterator[Piece], usage: dict, final_usage: Callable[[Piece], dict]
) -> AsyncIterator[str]:
    """The Messages streaming events, from ``message_start`` to ``message_stop``."""

    async def events() -> AsyncIterator[str]:
        start = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
        yield sse({"type": "message_start", "message": start}, "message_start")
        block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        yield sse(block, "content_block_start")
        last = first
        try:
            async for piece in chain(first, gen):
                last = piece
                if piece.text:
                    delta = {"type": "text_delta", "text": piece.text}
                    yield sse(
                        {"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"
                    )
        except ApiError as exc:
            yield sse({"type": "error", "error": {"type": exc.kind, "message": exc.message}}, "error")
            return
        finally:
            await gen.aclose()  # a disconnected client aborts the request here
        yield sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        delta = {"stop_reason": stop_reason(last), "stop_sequence": last.stop_sequence}
        yield sse({"type": "message_delta", "delta": delta, "usage": final_usage(last)}, "message_delta")
        yield sse({"type": "message_stop"}, "message_stop")

    return events()


async def messages(srv: Server, request: Request) -> Response:
    body = await read_json(request)
    ns = srv.namespace(request, body)
    ids, breakpoints = anthropic_prompt(srv.engine, body)
    if len(breakpoints) > MAX_BREAKPOINTS:
        raise ApiError(400, f"a maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided")
    if not isinstance(body.get("max_tokens"), int):
        raise ApiError(400, "max_tokens: field required (an integer)")
    cacheable = max(breakpoints, default=0)
    params = srv.params(body, body["max_tokens"])
    stops = srv.stops(body.get("stop_sequences"))
    first, gen = await started(srv.pieces(ids, params, ns, stops, cacheable))
    bs = srv.engine.config.block_size

    def usage(p: Piece) -> dict:
        return usage_of(p, cacheable, bs)

    message = {
        "id": f"msg_{uuid.uuid4().hex}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or srv.model_name,
    }
    if body.get("stream"):
        events = message_events(message, first, gen, {**usage(first), "output_tokens": 0}, usage)
        return StreamingResponse(events, media_type="text/event-stream")
    last = await collect(first, gen)
    return JSONResponse(
        {
            **message,
            "content": [{"type": "text", "text": last.text}],
            "stop_reason": stop_reason(last),
            "stop_sequence": last.stop_sequence,
            "usage": usage(last),
        }
    )


def add_anthropic_routes(app: FastAPI, srv: Server) -> None:
    """Mount the Anthropic Messages route."""

    @app.post("/v1/messages")
    async def _messages(request: Request) -> Response:
        return await messages(srv, request)
