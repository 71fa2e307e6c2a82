"""API errors and their JSON shapes (OpenAI's, or Anthropic's on ``/v1/messages``)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse


class ApiError(Exception):
    """An error with the HTTP status and error type a client should see."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


async def api_error_response(request: Request, exc: ApiError) -> JSONResponse:
    """The error body in the shape of the API that was called."""
    if request.url.path.startswith("/v1/messages"):
        body: dict = {"type": "error", "error": {"type": exc.kind, "message": exc.message}}
    else:
        body = {"error": {"message": exc.message, "type": exc.kind, "param": None, "code": exc.status}}
    return JSONResponse(body, status_code=exc.status)


async def read_json(request: Request) -> dict:
    """The request body as a JSON object, or a 400."""
    try:
        body = await request.json()
    except ValueError as exc:
        raise ApiError(400, "the request body is not valid JSON") from exc
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def text_blocks(content: object, where: str) -> list[dict]:
    """Normalise message content (a string or a list of text blocks) to text blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list) and all(isinstance(b, dict) for b in content):
        blocks = [b for b in content if b.get("type") == "text"]
        if len(blocks) != len(content):
            raise ApiError(400, f"{where}: only text content is supported")
        return blocks
    raise ApiError(400, f"{where}: content must be a string or a list of text blocks")
