"""Images in requests: their size read from the file's header, their tokens by the provider's rule.

A base64 image was counted as text before: tens of thousands of tokens for one photo, in the payload
linter's "tokens lost", the SDK's prediction and the audit's money at stake.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from prefixlint.analysis.payloads.divergence import first_divergence
from prefixlint.analysis.payloads.pieces import MESSAGE_OVERHEAD, PieceCache, pieces_from_request
from prefixlint.analysis.payloads.to_layout import layout_from_request
from prefixlint.model.images import ImageText, base64_size, image_rule, image_size, image_text
from prefixlint.model.tokens import tokenizer_for
from tests.cli_support import run_cli


def encoded(fmt: str, size: tuple[int, int], *, mode: str = "RGB", noise: int = 0, **save: Any) -> bytes:
    """A real image file made by Pillow, with ``noise`` random bytes of pixels (so it does not shrink)."""
    img = Image.new(mode, size, "white")
    if noise:
        side = int(noise**0.5)
        patch = Image.frombytes("L", (side, side), os.urandom(side * side)).convert(mode)
        img.paste(patch, (0, 0))
    buf = io.BytesIO()
    img.save(buf, fmt, **save)
    return buf.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize(
    ("fmt", "size", "mode", "save"),
    [
        ("PNG", (1024, 768), "RGB", {}),
        ("GIF", (321, 123), "RGB", {}),
        ("JPEG", (1600, 900), "RGB", {"quality": 80}),
        ("JPEG", (640, 480), "RGB", {"progressive": True}),
        ("WEBP", (500, 300), "RGB", {"quality": 80}),  # VP8 (lossy)
        ("WEBP", (77, 99), "RGB", {"lossless": True}),  # VP8L
        ("WEBP", (640, 360), "RGBA", {"quality": 80}),  # VP8X (alpha)
    ],
)
def test_the_size_is_read_from_the_header_of_real_files(
    fmt: str, size: tuple[int, int], mode: str, save: dict[str, Any]
) -> None:
    data = encoded(fmt, size, mode=mode, **save)
    assert image_size(data) == size
    assert base64_size(b64(data)) == size


def test_a_jpeg_size_after_a_large_exif_block_is_found_by_decoding_further() -> None:
    """The frame header follows the metadata: 60 KB of it is past the first decoded part."""
    data = encoded("JPEG", (800, 600), exif=b"Exif\x00\x00" + os.urandom(60_000))
    assert image_size(data[:3072]) is None and image_size(data) == (800, 600)  # past the first part
    assert base64_size(b64(data)) == (800, 600)


@pytest.mark.parametrize("data", [b"", b"not an image", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\x00\x00garbage"])
def test_what_is_not_an_image_header_has_no_size(data: bytes) -> None:
    assert image_size(data) is None
    assert base64_size(b64(data)) is None
    assert base64_size("%%% not base64") is None


def test_openai_tiles_match_the_published_examples() -> None:
    rule = image_rule("openai")
    assert rule.tokens((1024, 1024)) == 765  # 4 tiles of 512
    assert rule.tokens((2048, 4096)) == 1105  # scaled to 768x1536: 6 tiles
    assert rule.tokens((4096, 8192), "low") == 85
    assert rule.tokens(None) == rule.tokens((1024, 1024))  # a URL's image: the stand-in size


def test_anthropic_pixels_match_the_published_examples() -> None:
    rule = image_rule("anthropic")
    assert rule.tokens((200, 200)) == 54
    assert abs(rule.tokens((1092, 1092)) - 1590) <= 1
    assert rule.tokens((4000, 3000)) <= 1600  # scaled down to the cap
    assert rule.tokens((8000, 100)) == pytest.approx(1568 * 20 / 750, abs=1)  # long edge 1568


def test_image_parts_of_each_api_are_recognised_and_others_are_not() -> None:
    png = b64(encoded("PNG", (512, 512)))
    url = f"data:image/png;base64,{png}"
    chat = image_text({"type": "image_url", "image_url": {"url": url, "detail": "high"}})
    responses = image_text({"type": "input_image", "image_url": url})
    source = {"type": "base64", "media_type": "image/png", "data": png}
    claude = image_text({"type": "image", "source": source})
    by_url = image_text({"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}})
    by_file = image_text({"type": "input_image", "file_id": "file-123"})
    assert chat is not None and chat.size == (512, 512) and chat.tokens == 255
    assert responses is not None and responses.tokens == 255
    assert claude is not None and claude.tokens == 350  # 512 * 512 / 750
    assert by_url is not None and by_url.size is None and "size not read" in by_url
    assert by_file is not None and "file-123" in by_file
    assert chat != image_text({"type": "image_url", "image_url": {"url": url}})  # the detail differs
    for other in ({"type": "text", "text": "hi"}, {"type": "image_url"}, "plain", None):
        assert image_text(other) is None
    assert pickle.loads(pickle.dumps(chat)) == chat and pickle.loads(pickle.dumps(chat)).tokens == 255


def _chat(image_url: str, question: str = "What is in it?") -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You describe pictures carefully. " * 80},
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": image_url}},
                    {"type": "text", "text": question},
                ],
            },
        ],
    }


def test_a_base64_image_is_counted_by_its_size_not_its_text() -> None:
    data = b64(encoded("PNG", (1024, 1024), noise=40_000))
    assert len(data) > 40_000  # as text, tens of thousands of tokens
    layout = layout_from_request(_chat(f"data:image/png;base64,{data}"))
    image = next(s for s in layout.segments if "image" in s.text)
    assert image.tokens == 765 + MESSAGE_OVERHEAD and "1024x1024" in image.text  # opens the user turn
    assert sum(s.tokens for s in layout.segments) < 1500
    assert layout.tokens_exact is False  # the image's count is an estimate


def test_the_same_image_keeps_the_prefix_and_another_image_breaks_it() -> None:
    one = b64(encoded("PNG", (1024, 1024), noise=10_000))
    two = b64(encoded("PNG", (1024, 1024), noise=10_000))
    cache = PieceCache(tokenizer_for("openai", "gpt-4o"))
    first = pieces_from_request(_chat(f"data:image/png;base64,{one}", "a?"), "chat", cache, keep_text=True)
    same = pieces_from_request(_chat(f"data:image/png;base64,{one}", "b?"), "chat", cache, keep_text=True)
    other = pieces_from_request(_chat(f"data:image/png;base64,{two}", "a?"), "chat", cache, keep_text=True)
    assert first[1].chain == same[1].chain and first[1].chain != other[1].chain
    assert isinstance(first[1].text, ImageText)
    tok = tokenizer_for("openai", "gpt-4o")
    with_same = first_divergence(first, same, tok)
    with_other = first_divergence(first, other, tok)
    assert with_same.tokens == first[1].end  # through the image, up to the question
    assert with_other.tokens == first[0].end + (first[1].tokens - 765)  # the system, and the turn's framing


def test_the_audit_counts_an_image_prompt_by_the_image_size() -> None:
    from prefixlint.audit.records import FieldMap, to_record
    from prefixlint.audit.replay import ReplayOptions, replay_partition

    data = b64(encoded("PNG", (1024, 1024), noise=40_000))
    entries = [
        {"timestamp": 1000 + 10 * i, "request": _chat(f"data:image/png;base64,{data}", f"question {i}?")}
        for i in range(4)
    ]
    records = [to_record(e, "log", i + 1, FieldMap()) for i, e in enumerate(entries)]
    summary = replay_partition(records, ReplayOptions())
    model = summary.models[("openai", "gpt-4o")]
    cache = PieceCache(tokenizer_for("openai", "gpt-4o"))
    pieces = pieces_from_request(entries[0]["request"], "chat", cache)
    through_image = pieces[1].end
    assert 1024 < through_image < 1300  # system (~400 tokens), the image (765), framing
    assert model.prompt == sum(pieces_from_request(e["request"], "chat", cache)[-1].end for e in entries)
    assert model.prompt < 4 * 1400  # not the image's base64 text
    # later requests reuse the system prompt and the image, in OpenAI's 128-token steps past 1024
    assert model.simulated == 3 * (1024 + (through_image - 1024) // 128 * 128)
    assert model.tokens_exact is False


def test_check_prices_a_payload_with_an_image_in_its_estimated_tokens(tmp_path: Path) -> None:
    """``prefixlint check`` on a logged request: the timestamp ahead of the rules and an image costs the
    rules and the image's 765 tokens, not the image's base64 text."""
    data = b64(encoded("PNG", (1024, 1024), noise=40_000))
    body = _chat(f"data:image/png;base64,{data}")
    body["messages"][0]["content"] = "Current time: 2026-11-29T10:15:03Z.\n" + body["messages"][0]["content"]
    body["messages"].insert(2, {"role": "assistant", "content": "A white square with some noise."})
    body["messages"].append({"role": "user", "content": "Anything else?"})
    (tmp_path / "request.json").write_text(json.dumps(body, indent=2))
    proc = run_cli(["check", "--no-cache", "--output-format=json", "request.json"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    [finding] = json.loads(proc.stdout)
    assert finding["code"] == "PFX110"
    assert 765 < finding["impact"]["tokens_lost"] < 1500
    assert finding["impact"]["exact"] is False


def test_the_wrapped_client_predicts_an_image_conversation_and_says_its_counts_are_estimates(
    provider_server: Any,
) -> None:
    """The real openai client over HTTP: the same image turn twice is a hit, predicted from the image's
    estimated tokens (as the provider counts it), and the report says the counts are estimates."""
    import openai

    import prefixlint.sdk as sdk

    sdk.forget()
    provider_server.reset()
    reports: list[Any] = []
    client = sdk.wrap(
        openai.OpenAI(base_url=provider_server.url + "/v1", api_key="k-images", max_retries=0),
        on_report=reports.append,
    )
    data = b64(encoded("PNG", (1024, 1024), noise=40_000))
    for question in ("What is in it?", "And the colours?"):
        body = _chat(f"data:image/png;base64,{data}", question)
        client.chat.completions.create(model="gpt-4o", messages=body["messages"])
    assert [r.verdict.value for r in reports] == ["expected_miss", "hit"]
    assert all(r.tokens_exact is False for r in reports)
    assert reports[-1].local_prompt_tokens < 1500  # the image at 765, not its base64 text
