"""Tokenizers: tiktoken ``cl100k_base`` (offline) for presets, a model directory's own otherwise."""

from __future__ import annotations

import json
import logging
from datetime import datetime
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


class ChatTemplateError(ValueError):
    """A chat template refused the conversation (``client=True``: the request's fault, a 400) or
    failed, including by trying something the sandbox forbids (the server's fault, a 500)."""

    def __init__(self, message: str, client: bool) -> None:
        super().__init__(message)
        self.client = client


def _raise_exception(message: str) -> None:
    """``raise_exception(...)`` as Hugging Face chat templates call it."""
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def compile_chat_template(source: str, where: str):  # -> jinja2.Template
    """Compile a model directory's chat template in a sandbox, as ``transformers`` does:
    ``ImmutableSandboxedEnvironment`` refuses attribute access to internals (``__class__``,
    ``__globals__`` ...) and mutation of arguments, so an untrusted template cannot run code.
    A template that does not parse is a configuration error."""
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)  # as transformers provides
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise EngineConfigError(f"{where}: the chat template does not parse: {exc}") from exc


class HFTokenizer(EngineTokenizer):
    """A model directory's ``tokenizer.json`` through the ``tokenizers`` package, and its chat
    template from ``tokenizer_config.json`` (rendered in a sandbox)."""

    def __init__(self, model_dir: str | Path, eos_token_ids: tuple[int, ...]) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EngineConfigError(
                f"{model_dir} has tokenizer.json, which needs the 'tokenizers' package: "
                "pip install 'prefixlint[engine]'"
            ) from exc
        self._tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.name = f"{Path(model_dir).name} tokenizer.json"
        self.eos_token_ids = eos_token_ids
        self.invalid_token_ids = []
        self._template = None
        self._special: dict[str, str] = {}
        cfg_path = Path(model_dir) / "tokenizer_config.json"
        if cfg_path.is_file():
            try:
                cfg = json.loads(cfg_path.read_text())
            except ValueError as exc:
                raise EngineConfigError(f"{cfg_path}: not valid JSON: {exc}") from exc
            source = cfg.get("chat_template")
            if isinstance(source, str):
                self._template = compile_chat_template(source, str(cfg_path))
            for name in ("bos_token", "eos_token", "pad_token", "unk_token"):
                value = cfg.get(name)
                value = value.get("content") if isinstance(value, dict) else value
                if isinstance(value, str):
                    self._special[name] = value

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        """The model's own chat template (sandboxed); ChatML when the directory has none."""
        if self._template is None:
            return super().render_chat(messages)
        from jinja2.exceptions import SecurityError, TemplateError

        try:
            return self._template.render(messages=messages, add_generation_prompt=True, **self._special)
        except SecurityError as exc:
            log.error("chat template of %s tried an unsafe operation: %s", self.name, exc)
            raise ChatTemplateError(
                f"the chat template of {self.name} tried an unsafe operation and was stopped ({exc})",
                client=False,
            ) from exc
        except TemplateError as exc:  # raise_exception(...) in the template: the conversation's fault
            raise ChatTemplateError(f"the chat template refused these messages: {exc}", client=True) from exc
        except Exception as exc:
            raise ChatTemplateError(f"the chat template of {self.name} failed: {exc}", client=False) from exc


def load_tokenizer(model_dir: str | None, eos_token_ids: tuple[int, ...]) -> EngineTokenizer:
    """The model directory's own tokenizer when it has one, else cl100k_base."""
    if model_dir and (Path(model_dir) / "tokenizer.json").is_file():
        return HFTokenizer(model_dir, eos_token_ids)
    if model_dir:
        log.warning("%s has no tokenizer.json; using cl100k_base", model_dir)
    return TiktokenTokenizer()
