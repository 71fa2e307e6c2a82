"""prefixlint.engine: a small paged-KV inference engine that shows what prefix caching does to
TTFT, with tenant isolation by construction. Needs the ``[engine]`` extra (torch).

Takes token ids (or chat requests over its OpenAI- and Anthropic-compatible HTTP API, ``server/``)
and a tenant namespace; gives generated tokens with the cached-token count of each request. A
source of live traffic for ``live``; imports only ``model`` from the rest of the package.

    from prefixlint.engine import LLMEngine, EngineConfig, SamplingParams
    eng = LLMEngine(EngineConfig(preset="tiny", device="cpu"))
    out = eng.generate(eng.tokenizer.encode("hello"), SamplingParams(max_tokens=1, temperature=0))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefixlint.engine.config import PRESETS, EngineConfig, EngineConfigError, ModelConfig

if TYPE_CHECKING:
    from prefixlint.engine.integrity import KVIntegrityError
    from prefixlint.engine.llm_engine import AdmissionError, LLMEngine, RequestOutput, StreamDelta
    from prefixlint.engine.sampling import SamplingParams

__all__ = [
    "PRESETS",
    "AdmissionError",
    "EngineConfig",
    "EngineConfigError",
    "KVIntegrityError",
    "LLMEngine",
    "ModelConfig",
    "RequestOutput",
    "SamplingParams",
    "StreamDelta",
]

_LAZY = {
    "LLMEngine": "llm_engine",
    "RequestOutput": "llm_engine",
    "StreamDelta": "llm_engine",
    "AdmissionError": "llm_engine",
    "SamplingParams": "sampling",
    "KVIntegrityError": "integrity",
}


def __getattr__(name: str) -> object:
    """Import torch-dependent names on first use, so ``prefixlint.commands.engine`` stays light."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"prefixlint.engine.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'prefixlint.engine' has no attribute {name!r}")
