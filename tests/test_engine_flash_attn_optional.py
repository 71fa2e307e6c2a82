"""flash-attn is an optional CUDA path: without it the engine uses SDPA and says how to get it."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

torch = pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")

INSTALL = "attention uses PyTorch SDPA. For the flash-attn path: pip install 'prefixlint[flash-attn]'"


def _fresh_attention(monkeypatch: pytest.MonkeyPatch, flash_attn: ModuleType | None) -> ModuleType:
    """A fresh copy of the attention module, imported with ``flash_attn`` as given (None: missing)."""
    from prefixlint.engine.layers import attention

    monkeypatch.setitem(sys.modules, "flash_attn", flash_attn)  # None: ``import flash_attn`` raises
    name = "_attention_under_test"
    spec = importlib.util.spec_from_file_location(name, attention.__file__)
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, fresh)
    spec.loader.exec_module(fresh)
    return fresh


def test_a_missing_flash_attn_gives_sdpa_and_a_message_that_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fresh = _fresh_attention(monkeypatch, None)
    assert fresh._flash_attn_func is None
    message = fresh.flash_attn_missing_message()
    assert message is not None
    assert message.startswith("flash-attn is not available (ModuleNotFoundError: ")
    assert message.endswith(INSTALL)
    assert fresh.attention_backend(torch.device("cuda"), torch.float16) == "sdpa (flash-attn not installed)"
    assert fresh.attention_backend(torch.device("cpu"), torch.float32).startswith("sdpa")


def test_with_flash_attn_there_is_no_message(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = ModuleType("flash_attn")
    fake.flash_attn_func = lambda *a, **k: None  # type: ignore[attr-defined]
    fresh = _fresh_attention(monkeypatch, fake)
    assert fresh.flash_attn_missing_message() is None
    assert fresh.attention_backend(torch.device("cuda"), torch.bfloat16) == "flash-attn"
    assert (
        fresh.attention_backend(torch.device("cuda"), torch.float32)
        == "sdpa (torch.float32 is not flash-attn's)"
    )
