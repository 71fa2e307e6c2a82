"""Compare rendered requests: where they first diverge, what each provider can serve from cache,
and (for three or more) which spans vary between them.

This is ``prefixlint diff`` without the printing. The inputs are request payloads (a JSON body, or the
lines of a JSON Lines file) or rendered prompts (plain text). The first divergence comes from
:func:`~prefixlint.analysis.payloads.divergence.first_divergence`; the cacheable prefix from
:meth:`ModelCacheRules.cacheable` (OpenAI's 1,024-token minimum then 128-token steps, vLLM's 16-token
blocks) and, for breakpoint providers (Anthropic), from the prefix-cache model: the second request
reads what the first wrote at its ``cache_control`` breakpoints. The result is plain data
(:meth:`Comparison.to_dict`), which the reporter prints and ``--output-format json`` writes as is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint.analysis.payloads.align import Alignment, align_group, align_pair
from prefixlint.analysis.payloads.analyze import PayloadAnalyzer, provider_for
from prefixlint.analysis.payloads.divergence import SharedPrefix, first_divergence
from prefixlint.analysis.payloads.documents import read_payload_file
from prefixlint.analysis.payloads.kinds import kind_of_change
from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.analysis.payloads.samples import Sample, make_sample
from prefixlint.analysis.payloads.sniff import JSON_SUFFIXES
from prefixlint.model.json_text import LineIndex
from prefixlint.model.layout import Section, SourceLocation
from prefixlint.model.pieces import Piece
from prefixlint.model.prefix_cache import CacheModel
from prefixlint.model.providers import get_provider
from prefixlint.model.settings import Settings

# Providers every comparison reports (with the payload's own provider when it is another one).
REPORTED_PROVIDERS = ("openai", "anthropic", "vllm")
STDIN = "-"


class InputError(ValueError):
    """An input that cannot be compared: unreadable, malformed JSON, or not a request."""


@dataclass
class Input:
    """One input as given: a path (or ``-``) and its text."""

    name: str
    text: str


@dataclass
class TextSample:
    """A rendered prompt read as plain text: one piece, located by line and column."""

    name: str
    text: str
    lines: LineIndex = field(init=False)

    def __post_init__(self) -> None:
        self.lines = LineIndex(self.text)

    def locate(self, char: int) -> SourceLocation:
        line, col = self.lines.position(min(char, len(self.text)))
        return SourceLocation(self.name, line, col)


def read_samples(
    inputs: list[Input], settings: Settings, as_text: bool = False, provider: str | None = None
) -> tuple[list[Sample], PieceCache, dict[int, TextSample]]:
    """Samples of every input (a JSON Lines file gives one per request), cut with one tokenizer.

    The provider (unless given) and model come from the first request (or the settings, for plain
    text). Raises :class:`InputError` for malformed JSON (with line and column) or a JSON file without
    a request.
    """
    analyzer = PayloadAnalyzer(settings)
    payloads = []
    for inp in inputs:
        if not as_text and _is_json(inp):
            pf = read_payload_file(inp.name, inp.text, settings.payload_shape)
            if pf.errors:
                err = pf.errors[0]
                raise InputError(
                    f"{err.location.path}:{err.location.line}:{err.location.col + 1}: {err.message}"
                )
            payloads.extend(pf.payloads)
        else:
            payloads.append(inp)
    first = next((p for p in payloads if not isinstance(p, Input)), None)
    if first is not None:
        found, model = provider_for(first.body, first.api, settings)
        provider = provider or found
    else:
        provider, model = provider or settings.provider, settings.model
    cache = analyzer.cache(provider, model)
    samples: list[Sample] = []
    texts: dict[int, TextSample] = {}
    for p in payloads:
        if isinstance(p, Input):
            pieces = text_pieces(p.text, cache)
            texts[len(samples)] = TextSample(_label(p.name), p.text)
            samples.append(make_sample(_label(p.name), pieces, cache.tokenizer))
        else:
            pieces = pieces_from_request(p.body, p.api, cache, keep_text=True)
            samples.append(
                make_sample(_label(p.file) + (f":{p.line}" if p.shared else ""), pieces, cache.tokenizer, p)
            )
    return samples, cache, texts


def _is_json(inp: Input) -> bool:
    if inp.name.endswith(JSON_SUFFIXES):
        return True
    return inp.text.lstrip("\ufeff \t\r\n").startswith("{")


def _label(name: str) -> str:
    return "stdin" if name == STDIN else name


def text_pieces(text: str, cache: PieceCache) -> list[Piece]:
    """A rendered prompt as one piece (no role markers: it is sent as it is)."""
    entry = cache.entry(Section.MESSAGES.value, None, text)
    chain = cache.chain(b"", entry.digest)
    return [
        Piece(
            "prompt",
            Section.MESSAGES,
            None,
            entry.tokens,
            entry.digest,
            chain,
            entry.tokens,
            entry.sketch,
            True,
            None,
            None,
            text,
        )
    ]


@dataclass
class Comparison:
    """Everything ``prefixlint diff`` reports."""

    samples: list[Sample]
    provider: str
    model: str | None
    tokenizer: str
    exact: bool
    pairs: list[dict[str, Any]]
    cacheable: list[dict[str, Any]]
    alignment: Alignment | None = None

    @property
    def shared(self) -> int:
        """The prefix every input shares with the first, in tokens."""
        return min(p["shared_tokens"] for p in self.pairs)

    def cacheable_for(self, provider: str) -> int | None:
        """The smallest cacheable prefix over the pairs under ``provider``'s rules."""
        rows = [r for r in self.cacheable if r["provider"] == provider]
        return min(r["tokens"] for r in rows) if rows else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": [{"label": s.label, "tokens": s.total} for s in self.samples],
            "provider": self.provider,
            "model": self.model,
            "tokenizer": {"encoding": self.tokenizer, "exact": self.exact},
            "shared_tokens": self.shared,
            "pairs": self.pairs,
            "cacheable": self.cacheable,
            "alignment": _alignment_dict(self.alignment) if self.alignment else None,
        }


def compare(
    samples: list[Sample], cache: PieceCache, provider: str, model: str | None, texts: dict[int, TextSample]
) -> Comparison:
    """Compare every sample with the first one; align them all when there are three or more."""
    tok = cache.tokenizer
    ref = samples[0]
    pairs: list[dict[str, Any]] = []
    cacheable: list[dict[str, Any]] = []
    for k, other in enumerate(samples[1:], start=1):
        sp = first_divergence(ref.pieces, other.pieces, tok)
        pairs.append(_pair(ref, other, sp, texts.get(0), texts.get(k)))
        for row in cacheable_rows(ref.pieces, other.pieces, sp.tokens, provider, model):
            cacheable.append({"pair": [ref.label, other.label], "shared_tokens": sp.tokens, **row})
    alignment = None
    if len(samples) > 2:
        members = [(ref, [])] + [(s, align_pair(ref, s)) for s in samples[1:]]
        alignment = align_group(members, tok)
    return Comparison(samples, provider, model, tok.name, tok.exact, pairs, cacheable, alignment)


def _pair(
    ref: Sample, other: Sample, sp: SharedPrefix, text_a: TextSample | None, text_b: TextSample | None
) -> dict:
    """One comparison of the first input with another, as data."""
    piece_a = ref.pieces[sp.index_a] if sp.index_a is not None else None
    piece_b = other.pieces[sp.index_b] if sp.index_b is not None else None
    kind = None
    if sp.diverges:
        kind = kind_of_change(
            piece_a.text if piece_a else None,
            piece_b.text if piece_b else None,
            sp.char,
            (piece_a or piece_b).section.value,  # type: ignore[union-attr]
            piece_a is None or piece_b is None or piece_a.role == piece_b.role,
        )
    return {
        "a": ref.label,
        "b": other.label,
        "shared_tokens": sp.tokens,
        "total_a": sp.total_a,
        "total_b": sp.total_b,
        "exact": sp.exact,
        "diverges": sp.diverges,
        "path_a": sp.path_a,
        "path_b": sp.path,
        "location_a": _where(ref, sp.index_a, sp.char, text_a),
        "location_b": _where(other, sp.index_b, sp.char, text_b),
        "excerpt_a": sp.excerpt_a,
        "excerpt_b": sp.excerpt_b,
        "excerpt_at": sp.excerpt_at,
        "kind": kind.what if kind else None,
        "value_kind": kind.kind.value if kind else None,
        "same_model": _model(ref) == _model(other),
    }


def _model(sample: Sample) -> Any:
    return sample.payload.body.get("model") if sample.payload else None


def _where(sample: Sample, index: int | None, char: int, text: TextSample | None) -> str | None:
    if index is None:
        return None
    loc = text.locate(char) if text is not None else sample.locate(index, char, char + 1)
    return f"{loc.path}:{loc.line}:{loc.col + 1}" if loc else None


def cacheable_rows(
    pa: list[Piece], pb: list[Piece], shared: int, provider: str, model: str | None
) -> list[dict[str, Any]]:
    """The prefix of ``pb`` each provider can serve from cache after ``pa``, with the rule applied."""
    names = list(REPORTED_PROVIDERS)
    if provider not in names:
        names.append(provider)
    prompt = pb[-1].end if pb else 0
    rows = []
    for name in names:
        own = model if name == provider else None
        rules = get_provider(name).rules_for(own)
        if rules.granularity in ("breakpoint", "exact"):
            cm = CacheModel.for_provider(name, own)
            cm.record(pa, 0.0)
            tokens = cm.predict(pb, 1.0).cached
            if rules.granularity == "breakpoint" and not any(p.ttl for p in pb):
                why = "no cache_control breakpoint: nothing is cached"
            elif tokens:
                why = f"the last breakpoint both requests share ends at token {tokens:,}"
            else:
                why = f"no shared breakpoint prefix reaches the {rules.min_cacheable_tokens:,}-token minimum"
        else:
            tokens = rules.cacheable(shared, prompt)
            why = _rule_text(rules.granularity, rules.min_cacheable_tokens, rules.increment, shared, tokens)
        rows.append(
            {
                "provider": name,
                "model": rules.model,
                "tokens": tokens,
                "minimum": rules.min_cacheable_tokens,
                "granularity": rules.granularity,
                "increment": rules.increment,
                "rule": why,
            }
        )
    return rows


def _rule_text(granularity: str, minimum: int, step: int, shared: int, tokens: int) -> str:
    if granularity == "increment":
        if shared < minimum:
            return f"{shared:,} shared tokens are below the {minimum:,}-token minimum"
        return f"{minimum:,}-token minimum, then steps of {step}"
    if granularity == "block":
        if not tokens:
            return f"{shared:,} shared tokens fill no whole {step}-token block"
        return f"whole blocks of {step} tokens"
    return (
        "any shared length" if tokens else f"{shared:,} shared tokens are below the {minimum:,}-token minimum"
    )


def _alignment_dict(al: Alignment) -> dict[str, Any]:
    return {
        "samples": len(al.samples),
        "stable_prefix_tokens": al.stable_prefix,
        "tool_order_varies": al.tool_order_varies,
        "varying_spans": [
            {
                "path": s.path,
                "location": f"{s.location.path}:{s.location.line}:{s.location.col + 1}"
                if s.location
                else None,
                "token": s.token,
                "tokens": round(s.tokens),
                "kind": s.kind.what,
                "value_kind": s.kind.kind.value,
                "values": s.values,
                "stable_tokens_after": round(s.cost),
                "ahead_of_stable": s.cost > 0,
            }
            for s in al.spans
        ],
    }


def load_inputs(names: list[str], read_stdin: Any) -> list[Input]:
    """The text of each named input (``-``: standard input, read once)."""
    out = []
    seen_stdin = False
    for name in names:
        if name == STDIN:
            if seen_stdin:
                raise InputError("-: standard input can be given once")
            seen_stdin = True
            out.append(Input(STDIN, read_stdin()))
            continue
        try:
            data = Path(name).read_bytes()
        except OSError as exc:
            raise InputError(f"{name}: {exc.strerror or exc}") from None
        try:
            out.append(Input(name, data.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise InputError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    return out
