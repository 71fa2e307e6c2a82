"""Test helpers: guard a prompt's static prefix in your own test suite.

```python
from prefixlint.testing import assert_shared_prefix

def test_prompt_prefix_is_stable():
    assert_shared_prefix(build_request, {"today": "2026-01-01"}, {"today": "2026-06-30"}, min_tokens=1024)
```

``build_request(**inputs)`` returns the keyword arguments you pass to ``create`` (a request body).
The helper renders it twice, applies what the SDK wrapper would (volatile values moved to the end)
and asserts the two requests share at least ``min_tokens`` tokens of prefix, naming the first
divergence when they do not.

Takes a request builder and two sets of inputs; gives an assertion (and, in ``rules``, rule test
helpers that run the real fixer). The last stage beside ``commands``: it may import the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prefixlint.analysis.payloads.divergence import SharedPrefix, first_divergence
from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.analysis.payloads.to_layout import detect_api
from prefixlint.model.providers import guess_provider
from prefixlint.model.tokens import tokenizer_for

__all__ = ["SharedPrefix", "assert_shared_prefix", "shared_prefix"]


def shared_prefix(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    provider: str | None = None,
    api: str | None = None,
    through_sdk: bool = True,
    placement: str = "last_user",
) -> SharedPrefix:
    """The shared static prefix of two request bodies (volatile values moved first if ``through_sdk``)."""
    from prefixlint.sdk.volatile import move_volatile

    body_a, body_b = dict(a), dict(b)
    api = api or detect_api(body_a)
    if through_sdk:
        body_a, _ = move_volatile(body_a, api, None, placement)
        body_b, _ = move_volatile(body_b, api, None, placement)
    provider = provider or guess_provider(body_a.get("model"))
    cache = PieceCache(tokenizer_for(provider, body_a.get("model")))
    pa = pieces_from_request(body_a, api, cache, keep_text=True)
    pb = pieces_from_request(body_b, api, cache, keep_text=True)
    return first_divergence(pa, pb, cache.tokenizer)  # to the token, as `prefixlint diff` counts


def assert_shared_prefix(
    build: Callable[..., Mapping[str, Any]],
    inputs_a: Mapping[str, Any],
    inputs_b: Mapping[str, Any],
    min_tokens: int,
    **kwargs: Any,
) -> SharedPrefix:
    """Render ``build`` with two sets of volatile inputs; assert a shared prefix of ``min_tokens``."""
    result = shared_prefix(build(**inputs_a), build(**inputs_b), **kwargs)
    if result.tokens < min_tokens:
        where = (
            f" first divergence at {result.path}: {result.excerpt_a!r} vs {result.excerpt_b!r}"
            if result.path
            else ""
        )
        raise AssertionError(
            f"the two renderings share {result.tokens} prefix tokens, fewer than {min_tokens};{where}"
        )
    return result
