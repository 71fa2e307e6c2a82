"""Request handling shared by every route: who is asking (tenant and cache namespace), how to
sample, and the engine's token stream turned into text pieces with stop strings applied."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from fastapi import Request

from prefixlint.engine.llm_engine import AdmissionError, LLMEngine
from prefixlint.engine.sampling import MAX_LOGPROBS, SamplingParams, TokenLogprob
from prefixlint.engine.server.errors import ApiError
from prefixlint.engine.server.tenancy import Tenancy


@dataclass
class Piece:
    """Text since the last piece; ``reason`` is set on the last piece of a request."""

    text: str
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    reason: str | None = None  # stop | length | stop_sequence
    stop_sequence: str | None = None
    # The tokens behind this piece, with where each starts in the completion text (when requested).
    logprobs: list[tuple[TokenLogprob, int]] = field(default_factory=list)


class Server:
    """The engine plus what the routes share: tenancy and the served model name."""

    def __init__(self, engine: LLMEngine, tenancy: Tenancy, model_name: str) -> None:
        self.engine, self.tenancy, self.model_name = engine, tenancy, model_name

    @property
    def default_max_tokens(self) -> int:
        """Output tokens for a chat request without ``max_tokens``."""
        return self.engine.default_max_tokens or self.engine.config.max_model_len

    def tenant(self, request: Request) -> str | None:
        """The request's tenant (see :class:`Tenancy`); 401 for a key the mapping does not list."""
        return self.tenancy.tenant(request)

    def namespace(self, request: Request, body: dict) -> str:
        """The cache namespace: the tenant, refined by a client ``cache_salt`` where allowed."""
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

    def params(self, body: dict, max_tokens: object, logprobs: int | None = None) -> SamplingParams:
        """Sampling parameters from the body (400 on anything unsupported or invalid).
        ``max_tokens`` None means the server's default; ``logprobs``: alternatives per token
        (0 = the sampled token only), None for none."""
        if body.get("n", 1) != 1 or body.get("best_of", 1) != 1:
            raise ApiError(400, "only n=1 is supported")
        if body.get("echo") or body.get("prompt_logprobs") is not None:
            raise ApiError(400, "echo and prompt_logprobs are not supported")

        def num(key: str, default: float) -> float:
            value = body.get(key)
            return default if value is None else float(value)

        try:
            return SamplingParams(
                max_tokens=int(max_tokens) if max_tokens is not None else self.default_max_tokens,
                temperature=num("temperature", 1.0),
                top_p=num("top_p", 1.0),
                seed=None if body.get("seed") is None else int(body["seed"]),
                ignore_eos=bool(body.get("ignore_eos", False)),
                logprobs=logprobs,
            )
        except (TypeError, ValueError) as exc:
            raise ApiError(400, f"invalid sampling parameters: {exc}") from exc

    @staticmethod
    def stops(value: object) -> list[str]:
        """Stop strings from ``stop`` / ``stop_sequences``."""
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
        sent = text = ""
        pending: list[tuple[TokenLogprob, int]] = []
        stream = self.engine.generate_stream(ids, params, ns, cacheable)
        try:
            async for delta in stream:
                out = delta.output
                if out is not None and out.finish_reason == "error":
                    raise ApiError(500, out.error or "request failed", "server_error")
                pending.extend((lp, len(text)) for lp in delta.logprobs)
                out_ids.extend(delta.token_ids)
                text = tok.decode(out_ids)
                counts = (len(ids), delta.num_cached_tokens, len(out_ids))
                hits = [(text.find(s), s) for s in stops if s in text]
                if hits:
                    at, stop = min(hits)
                    yield Piece(text[len(sent) : at], *counts, "stop_sequence", stop, pending)
                    return
                if out is None and text.endswith("\ufffd"):
                    continue  # the rest of a multi-byte character is still to come
                yield Piece(text[len(sent) :], *counts, out.finish_reason if out else None, None, pending)
                sent, pending = text, []
        finally:
            await stream.aclose()  # aborts the request (frees its blocks) if it is still running


async def started(gen: AsyncIterator[Piece]) -> tuple[Piece, AsyncIterator[Piece]]:
    """Run to the first piece, so failures before any output become real HTTP errors."""
    return await gen.__anext__(), gen


async def chain(first: Piece, rest: AsyncIterator[Piece]) -> AsyncIterator[Piece]:
    """``first``, then the rest."""
    yield first
    async for piece in rest:
        yield piece


async def collect(first: Piece, rest: AsyncIterator[Piece]) -> Piece:
    """All pieces as one: the whole text and logprobs, the last piece's counts and reason."""
    text, logprobs, last = "", [], first
    async for piece in chain(first, rest):
        text, last = text + piece.text, piece
        logprobs.extend(piece.logprobs)
    return Piece(
        text,
        last.prompt_tokens,
        last.cached_tokens,
        last.completion_tokens,
        last.reason,
        last.stop_sequence,
        logprobs,
    )


def logprobs_option(value: object, name: str) -> int | None:
    """An integer 0..MAX_LOGPROBS (or None), else a 400 naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LOGPROBS:
        raise ApiError(400, f"{name} must be an integer from 0 to {MAX_LOGPROBS}")
    return value
