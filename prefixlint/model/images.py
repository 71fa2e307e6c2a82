"""What an image in a request costs in tokens, and what identifies it for the prefix cache.

A request carries an image as a content part: OpenAI's ``image_url`` (Chat Completions) and
``input_image`` (Responses), Anthropic's ``image`` block with a ``source``. The provider turns it into
a number of tokens that depends on its size in pixels, not on the length of its base64 text (which a
tokenizer would count at about one token per two or three characters: tens of thousands for a
photo). The size is read from the file's header (PNG, JPEG, GIF, WebP) in a ``data:`` URL or base64
source; the provider's rule in ``providers.toml`` (``[<provider>.images]``) gives the tokens. An image
given by URL or file id has no bytes to read: the rule's ``unknown_size_px`` stands in. Every count
here is an estimate (providers apply model-specific rules on top), and says so.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass
from functools import cache
from hashlib import blake2b
from typing import Any

from prefixlint.model.providers import get_provider

# base64 characters decoded first for a header, then more (a JPEG's size can follow a large EXIF block)
_FIRST_CHARS = 4096
_MAX_CHARS = 4 * 1024 * 1024


class ImageText(str):
    """The text that stands for an image in a request's pieces: it identifies the image (a digest of
    its bytes or its URL, its detail), and ``tokens`` is what the provider is estimated to count."""

    __slots__ = ("size", "tokens")
    tokens: int
    size: tuple[int, int] | None  # pixels, when read from the image itself

    def __new__(cls, text: str, tokens: int, size: tuple[int, int] | None) -> ImageText:
        out = super().__new__(cls, text)
        out.tokens = tokens
        out.size = size
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (ImageText, (str(self), self.tokens, self.size))


@dataclass(frozen=True)
class ImageRule:
    """A provider's rule for image tokens (``[<provider>.images]`` in ``providers.toml``)."""

    provider: str
    rule: str  # "tiles" (OpenAI) or "pixels" (Anthropic)
    values: dict[str, Any]
    unknown_size: tuple[int, int]

    def tokens(self, size: tuple[int, int] | None, detail: str | None = None) -> int:
        """Estimated tokens of an image of ``size`` pixels (None: not known) at ``detail``."""
        width, height = size or self.unknown_size
        width, height = max(1, width), max(1, height)
        v = self.values
        if self.rule == "tiles":
            if detail == "low":
                return int(v["low_detail_tokens"])
            scale = min(1.0, v["fit_px"] / max(width, height))
            width, height = width * scale, height * scale
            scale = min(1.0, v["short_side_px"] / min(width, height))
            width, height = width * scale, height * scale
            tiles = math.ceil(width / v["tile_px"]) * math.ceil(height / v["tile_px"])
            return int(v["base_tokens"] + v["tile_tokens"] * tiles)
        # "pixels": scaled down to the long-edge limit and the token cap, then pixels / pixels_per_token
        per = v["pixels_per_token"]
        capped = math.sqrt(v["max_tokens"] * per / (width * height))
        scale = min(1.0, v["max_long_edge_px"] / max(width, height), capped)
        return max(1, min(int(v["max_tokens"]), math.ceil((width * scale) * (height * scale) / per)))


@cache
def image_rule(provider: str) -> ImageRule:
    """The image rule of ``provider`` (``openai`` or ``anthropic``, or a provider that inherits one)."""
    raw = dict(get_provider(provider).raw["images"])
    rule = str(raw.pop("rule"))
    w, h = raw.pop("unknown_size_px")
    raw.pop("source", None)
    return ImageRule(provider, rule, raw, (int(w), int(h)))


def image_size(head: bytes) -> tuple[int, int] | None:
    """Width and height in pixels from the start of a PNG, GIF, WebP or JPEG file (None: not read)."""
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24 and head[12:16] == b"IHDR":
        return struct.unpack(">II", head[16:24])
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        return struct.unpack("<HH", head[6:10])
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp_size(head)
    if head[:2] == b"\xff\xd8":
        return _jpeg_size(head)
    return None


def _webp_size(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and len(head) >= 30:
        w, h = struct.unpack("<HH", head[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L" and len(head) >= 25:
        b = head[21:25]
        return 1 + (b[0] | (b[1] & 0x3F) << 8), 1 + (b[1] >> 6 | b[2] << 2 | (b[3] & 0x0F) << 10)
    if chunk == b"VP8X" and len(head) >= 30:
        return 1 + int.from_bytes(head[24:27], "little"), 1 + int.from_bytes(head[27:30], "little")
    return None


# Start-of-frame markers: baseline, progressive, lossless and arithmetic-coded frames
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 4 <= len(head):
        if head[i] != 0xFF:
            return None  # not at a marker: not a JPEG this reader understands
        marker = head[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD9)):  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", head[i + 2 : i + 4])
        if marker in _SOF:
            if i + 9 > len(head):
                return None
            height, width = struct.unpack(">HH", head[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None


def base64_size(data: str) -> tuple[int, int] | None:
    """The pixel size of the image in base64 ``data``, decoding only as much of it as needed."""
    chars = _FIRST_CHARS
    while True:
        part = data[: chars - chars % 4]
        try:
            head = base64.b64decode(part)
        except (binascii.Error, ValueError):
            return None
        size = image_size(head)
        if size is not None or len(part) >= len(data) or chars >= _MAX_CHARS:
            return size
        chars *= 8


def _data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a ``data:...;base64,`` URL."""
    if not url.startswith("data:"):
        return None
    meta, sep, data = url.partition(",")
    if not sep or not meta.endswith(";base64"):
        return None
    return meta[5:].split(";", 1)[0], data


def _digest(data: str) -> str:
    return blake2b(data.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def image_text(part: Any) -> ImageText | None:
    """The :class:`ImageText` of a content part that is an image; None for any other part."""
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "image_url":  # Chat Completions: {"image_url": {"url": ..., "detail": ...}}
        inner = part.get("image_url")
        if isinstance(inner, str):
            inner = {"url": inner}
        if not isinstance(inner, dict) or not isinstance(inner.get("url"), str):
            return None
        return _openai_image(inner["url"], inner.get("detail"))
    if kind == "input_image":  # Responses: {"image_url": ..., "file_id": ..., "detail": ...}
        url = part.get("image_url")
        if isinstance(url, str):
            return _openai_image(url, part.get("detail"))
        if isinstance(part.get("file_id"), str):
            return _described("openai", f"file {part['file_id']}", None, part.get("detail"))
        return None
    if kind == "image" and isinstance(part.get("source"), dict):  # Anthropic Messages
        source = part["source"]
        if source.get("type") == "base64" and isinstance(source.get("data"), str):
            data = source["data"]
            media = str(source.get("media_type") or "image")
            return _described("anthropic", f"{media} {_digest(data)}", base64_size(data), None)
        for key in ("url", "file_id"):
            if isinstance(source.get(key), str):
                return _described("anthropic", f"{key} {source[key]}", None, None)
    return None


def _openai_image(url: str, detail: Any) -> ImageText:
    inline = _data_url(url)
    if inline is None:
        return _described("openai", f"url {url}", None, detail)
    media, data = inline
    return _described("openai", f"{media} {_digest(data)}", base64_size(data), detail)


def _described(provider: str, what: str, size: tuple[int, int] | None, detail: Any) -> ImageText:
    detail = detail if isinstance(detail, str) else None
    tokens = image_rule(provider).tokens(size, detail)
    shown = f"{size[0]}x{size[1]}" if size else "size not read"
    text = f"[image: {what}, {shown}{f', detail {detail}' if detail else ''}, ~{tokens} tokens]"
    return ImageText(text, tokens, size)
