"""Tokenizers: tiktoken ``cl100k_base`` (offline) for presets, a model directory's own otherwise."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from prefixlint.engine.config import CL100K_EOS, EngineConfigError

log = logging.getLogger("prefixlint.engine")


class EngineTokenizer:
    """``encode``/``decode`` plus what the engine needs: EOS ids and ids it must never sample."""

    name: str
    eos_token_ids: tuple[int, ...]
    invalid_token_ids: list[int]

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def decode(self, ids: list[int]) -> str:
        raise NotImplementedError

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token (a token can end inside a multi-byte character)."""
        return self.decode([token_id]).encode()

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        """A plain ChatML-style transcript ending with an open assistant turn."""
        parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
        return "".join(parts) + "<|im_start|>assistant\n"


class TiktokenTokenizer(EngineTokenizer):
    """cl100k_base through :func:`prefixlint.model.tokens.get_tokenizer`, so counts match the linter."""

    def __init__(self) -> None:
        from prefixlint.model.tokens import get_tokenizer

        tok = get_tokenizer("cl100k_base")
        if not tok.exact:
            raise EngineConfigError(
                "the cl100k_base tokenizer is not available offline "
                f"({tok.label}); the engine needs exact token ids"
            )
        self._enc = tok._encoding
        self.name = "cl100k_base"
        self.eos_token_ids = (CL100K_EOS,)
        self._special = set(self._enc._special_tokens.values())  # type: ignore[attr-defined]
        n_regular = self._enc.max_token_value + 1 - len(self._special)  # type: ignore[attr-defined]
        n_vocab = self._enc.n_vocab  # type: ignore[attr-defined]
        # Ids that are neither regular nor special tokens cannot be decoded: never sample them.
        self.invalid_token_ids = [i for i in range(n_regular, n_vocab) if i not in self._special]

    def encode(self, text: str) -> list[int]:
        return self._enc.encode(text, disallowed_special=())  # type: ignore[attr-defined]

    def decode(self, ids: list[int]) -> str:
        return self._enc.decode(list(ids))  # type: ignore[attr-defined]

    def decode_bytes(self, ids: list[int]) -> bytes:
        return self._enc.decode_bytes(list(ids))  # type: ignore[attr-defined]

    def token_bytes(self, token_id: int) -> bytes:
        return self.decode_bytes([token_id])


class HFTokenizer(EngineTokenizer):
    """A model directory's ``tokenizer.json`` through the ``tokenizers`` package."""

    def __init__(self, model_dir: str | Path, eos_token_ids: tuple[int, ...]) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EngineConfigError(
                f"{model_dir} has tokenizer.json; install the 'tokenizers' package to use it"
            ) from exc
        self._tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.name = f"{Path(model_dir).name} tokenizer.json"
        self.eos_token_ids = eos_token_ids
        self.invalid_token_ids = []
        self._template = None
        cfg = Path(model_dir) / "tokenizer_config.json"
        if cfg.is_file():
            self._template = json.loads(cfg.read_text()).get("chat_template")

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        if isinstance(self._template, str):
            try:
                import jinja2

                env = jinja2.Environment(autoescape=False)
                return env.from_string(self._template).render(messages=messages, add_generation_prompt=True)
            except Exception as exc:
                log.warning("chat template of %s failed (%s); using ChatML", self.name, exc)
        return super().render_chat(messages)


def load_tokenizer(model_dir: str | None, eos_token_ids: tuple[int, ...]) -> EngineTokenizer:
    """The model directory's own tokenizer when it has one, else cl100k_base."""
    if model_dir and (Path(model_dir) / "tokenizer.json").is_file():
        return HFTokenizer(model_dir, eos_token_ids)
    if model_dir:
        log.warning("%s has no tokenizer.json; using cl100k_base", model_dir)
    return TiktokenTokenizer()
