"""``POST /v1/completions`` and ``POST /v1/chat/completions``, plain and streamed."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from prefixlint.engine.sampling import TokenLogprob
from prefixlint.engine.server.errors import ApiError, read_json, text_blocks
from prefixlint.engine.server.frontend import Piece, Server, collect, logprobs_option, started
from prefixlint.engine.server.sse import DONE, sse
from prefixlint.engine.tokenizer import ChatTemplateError

ChunkMaker = Callable[[Piece], dict]
_INT_TYPES = {int, bool}  # what isinstance(t, int) accepts from JSON
LOWEST_LOGPROB = -9999.0  # what OpenAI and vLLM report for impossible tokens (JSON has no -inf)


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


def _logprob(value: float) -> float:
    return max(value, LOWEST_LOGPROB)


def chat_logprobs_request(body: dict) -> int | None:
    """Chat's ``logprobs`` (a bool) and ``top_logprobs`` (0-20, needs ``logprobs``)."""
    want, top = body.get("logprobs"), logprobs_option(body.get("top_logprobs"), "top_logprobs")
    if want is not None and not isinstance(want, bool):
        raise ApiError(400, "logprobs must be true or false on chat completions")
    if top is not None and not want:
        raise ApiError(400, "top_logprobs requires logprobs to be true")
    return (top or 0) if want else None


def chat_logprobs(srv: Server, entries: list[tuple[TokenLogprob, int]]) -> dict:
    """``choices[].logprobs`` of a chat completion: one ``content`` entry per token."""
    tok = srv.engine.tokenizer

    def item(token_id: int, logprob: float) -> dict:
        raw = tok.token_bytes(token_id)
        return {"token": tok.decode([token_id]), "logprob": _logprob(logprob), "bytes": list(raw)}

    content = [
        {**item(lp.token_id, lp.logprob), "top_logprobs": [item(t, v) for t, v in lp.top]}
        for lp, _ in entries
    ]
    return {"content": content, "refusal": None}


def completion_logprobs(srv: Server, entries: list[tuple[TokenLogprob, int]]) -> dict:
    """``choices[].logprobs`` of a completion: parallel lists, as the legacy API and vLLM. Each
    ``top_logprobs`` entry holds the requested alternatives plus the sampled token."""
    tok = srv.engine.tokenizer
    tops = []
    for lp, _ in entries:
        top = {tok.decode([t]): _logprob(v) for t, v in lp.top}
        top.setdefault(tok.decode([lp.token_id]), _logprob(lp.logprob))
        tops.append(top)
    return {
        "tokens": [tok.decode([lp.token_id]) for lp, _ in entries],
        "token_logprobs": [_logprob(lp.logprob) for lp, _ in entries],
        "top_logprobs": tops,
        "text_offset": [offset for _, offset in entries],
    }


def completion_prompt(srv: Server, body: dict) -> list[int]:
    """Token ids of ``prompt``: a string or a list of ids, one prompt per request."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    if isinstance(prompt, str):
        return srv.engine.tokenizer.encode(prompt)
    if isinstance(prompt, list) and set(map(type, prompt)) <= _INT_TYPES:  # one C-speed pass
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
    try:
        return tok.encode(tok.render_chat(flat))
    except ChatTemplateError as exc:
        raise ApiError(400, str(exc)) if exc.client else ApiError(500, str(exc), "server_error") from exc


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
    logprobs = logprobs_option(body.get("logprobs"), "logprobs")
    params = srv.params(body, body.get("max_tokens", 16), logprobs)
    first, gen = await started(srv.pieces(ids, params, ns, srv.stops(body.get("stop"))))
    rid, created = f"cmpl-{uuid.uuid4().hex}", int(time.time())
    head = {"id": rid, "object": "text_completion", "created": created, "model": srv.model_name}

    def chunk(p: Piece) -> dict:
        lps = None if logprobs is None else completion_logprobs(srv, p.logprobs)
        choice = {"index": 0, "text": p.text, "logprobs": lps, "finish_reason": finish_reason(p)}
        return {**head, "choices": [choice]}

    if body.get("stream"):
        return stream_response(first, gen, chunk, None, include_usage(body))
    whole = await collect(first, gen)
    return JSONResponse({**chunk(whole), "usage": usage_of(whole)})


async def chat_completions(srv: Server, request: Request) -> Response:
    body = await read_json(request)
    ns = srv.namespace(request, body)
    ids = chat_prompt(srv, body)
    logprobs = chat_logprobs_request(body)
    params = srv.params(body, body.get("max_completion_tokens", body.get("max_tokens")), logprobs)
    first, gen = await started(srv.pieces(ids, params, ns, srv.stops(body.get("stop"))))
    rid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    base = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": srv.model_name}

    def lps(p: Piece) -> dict | None:
        return None if logprobs is None else chat_logprobs(srv, p.logprobs)

    def chunk(p: Piece) -> dict:
        delta = {"content": p.text} if p.text else {}
        choice = {"index": 0, "delta": delta, "logprobs": lps(p), "finish_reason": finish_reason(p)}
        return {**base, "choices": [choice]}

    if body.get("stream"):
        delta = {"role": "assistant", "content": ""}
        role = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
        return stream_response(first, gen, chunk, {**base, "choices": [role]}, include_usage(body))
    whole = await collect(first, gen)
    message = {"role": "assistant", "content": whole.text}
    choice = {"index": 0, "message": message, "logprobs": lps(whole), "finish_reason": finish_reason(whole)}
    return JSONResponse({**base, "object": "chat.completion", "choices": [choice], "usage": usage_of(whole)})


def add_openai_routes(app: FastAPI, srv: Server) -> None:
    """Mount the two OpenAI generation routes."""

    @app.post("/v1/completions")
    async def _completions(request: Request) -> Response:
        return await completions(srv, request)

    @app.post("/v1/chat/completions")
    async def _chat(request: Request) -> Response:
        return await chat_completions(srv, request)
