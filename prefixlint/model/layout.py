"""The request layout: the one model every part of prefixlint produces or reads.

A :class:`Layout` is the ordered list of :class:`Segment` objects that a request is made of, in the
provider's prefix order (tools, then system/instructions, then messages). Each segment is static
text or a dynamic value, with what kind of value it is, when it is computed, where it came from in
the source, and how many tokens it holds.

Code analysis, template analysis, payload analysis, the SDK and the audit all produce layouts; rules
and cache models read them. This module imports nothing from the rest of the package except edits and
the tokenizer, and nothing from libcst or jinja2.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from prefixlint.model.edits import Fix

_D = TypeVar("_D")


def evolve(obj: _D, **changes: object) -> _D:
    """``dataclasses.replace`` for this package's frozen dataclasses, several times faster.

    The layout model copies segments and environments tens of thousands of times per lint run;
    ``replace`` re-runs ``__init__`` with every field. These classes keep their fields in
    ``__dict__`` and have no ``__post_init__``, so a copy of the dict is the same object.
    """
    fields = obj.__dataclass_fields__  # type: ignore[attr-defined]
    if not changes.keys() <= fields.keys():
        raise TypeError(f"{type(obj).__name__} has no field {sorted(changes.keys() - fields.keys())[0]!r}")
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new


class Section(str, Enum):
    """Where in the request a segment sits, in prefix order."""

    TOOLS = "tools"
    SYSTEM = "system"
    MESSAGES = "messages"

    @property
    def order(self) -> int:
        return _SECTION_ORDER[self]


_SECTION_ORDER = {Section.TOOLS: 0, Section.SYSTEM: 1, Section.MESSAGES: 2}


class DynamicKind(str, Enum):
    """What a dynamic value is. Each per-request kind has its own dynamic-before-static rule."""

    TIMESTAMP = "timestamp"
    IDENTIFIER = "identifier"
    RANDOM = "random"
    USER_IDENTITY = "user_identity"
    RETRIEVED_CONTEXT = "retrieved_context"
    TOOL_OUTPUT = "tool_output"
    MEMORY = "memory"
    ENVIRONMENT = "environment"
    UNKNOWN = "unknown"
    # Conversation history: dynamic, but growing append-only, so it is the cache's friend as long
    # as nothing per-request sits before it.
    HISTORY = "history"
    # The new user turn: dynamic by nature and expected at the end.
    USER_INPUT = "user_input"


class Timing(str, Enum):
    """When a value is computed."""

    STATIC = "static"  # never changes: literal text, constants
    PROCESS = "process"  # once per process (import time, default arguments, settings read once)
    REQUEST = "request"  # on every request
    # Not known: an attribute read or a parameter with no visible caller. Never reported as
    # "computed per request"; it has its own rule code and a lower severity.
    UNKNOWN = "unknown"


class Granularity(str, Enum):
    """How often a time value changes, read from the call and its format string."""

    SUB_SECOND = "sub_second"  # time.time(), datetime.now() unformatted, isoformat() with time
    SECOND = "second"  # %H:%M:%S
    MINUTE = "minute"  # %H:%M
    HOUR = "hour"  # %H without minutes
    DAY = "day"  # date.today(), .date(), %Y-%m-%d, "%B %d, %Y"
    MONTH = "month"  # %Y-%m, %B %Y
    YEAR = "year"  # %Y

    @property
    def sub_day(self) -> bool:
        """True when the value changes more than once a day (about every request)."""
        return self in (Granularity.SUB_SECOND, Granularity.SECOND, Granularity.MINUTE, Granularity.HOUR)


class Cardinality(str, Enum):
    """How many distinct texts a value takes while the cache would stay warm (the cost model)."""

    FEW = "few"  # a locale, a plan tier, a flag: a few warm copies of the prefix
    PER_USER = "per_user"  # one warm copy per user or tenant
    PER_SESSION = "per_session"  # one per conversation or run
    PER_REQUEST = "per_request"  # a request id, a timestamp to the second: misses every time


class Nondeterminism(str, Enum):
    """Ways serialization can change bytes between identical logical requests."""

    UNSORTED_JSON = "unsorted_json"  # json.dumps without sort_keys over data that may be reordered
    SET_ITERATION = "set_iteration"  # iteration over a set/frozenset feeding the prompt or tools
    MEMORY_ADDRESS = "memory_address"  # repr() that carries an id/address
    TOOL_ORDER = "tool_order"  # the same tools sent in another order (seen between payload samples)


@dataclass(frozen=True)
class SourceLocation:
    """A span in a source file (1-based lines, 0-based columns, as ruff prints ``col+1``)."""

    path: str
    line: int
    col: int = 0
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col + 1}"


@dataclass(frozen=True)
class CacheControl:
    """An explicit cache breakpoint on a segment (Anthropic ``cache_control``)."""

    ttl: str = "5m"
    location: SourceLocation | None = None


@dataclass(frozen=True)
class Segment:
    """One piece of a request, in prefix order.

    ``text`` holds the static text (or, for a dynamic value, a short description such as the
    expression or placeholder name). ``tokens`` is the token count of static text, or an estimate
    for a dynamic value. ``chain`` lists the locations a value travelled through, from the place a
    user must change to the sink.
    """

    section: Section
    text: str = ""
    static: bool = True
    kind: DynamicKind | None = None
    timing: Timing = Timing.STATIC
    role: str | None = None
    tokens: int = 0
    location: SourceLocation | None = None
    chain: tuple[SourceLocation, ...] = ()
    # For a value inside an included template: the include statement of the outermost template,
    # the line a user moves (the value's own line serves every template that includes it).
    site: SourceLocation | None = None
    label: str = ""
    message_index: int | None = None
    conditional: bool = False
    repeated: bool = False
    confidence: float = 1.0
    cache_control: CacheControl | None = None
    nondeterminism: Nondeterminism | None = None
    is_last_user_message: bool = False
    # For time values: how often the text changes (None: not a time value, or not known).
    granularity: Granularity | None = None
    # How many distinct texts the value takes, where the code tells (None: not known).
    cardinality: Cardinality | None = None
    # Fixes an analyzer can offer for this segment (e.g. add sort_keys, move to the last user turn).
    fixes: tuple[Fix, ...] = ()
    # For an object built by a constructor the analyzer can read (a dataclass, a NamedTuple, a class
    # whose ``__init__`` sets ``self.x``): what each attribute holds, so that ``result.answer`` is the
    # argument bound to ``answer``, not whatever the other arguments are. Empty for other values.
    attributes: tuple[tuple[str, tuple[Segment, ...]], ...] = ()

    @property
    def dynamic(self) -> bool:
        return not self.static

    @property
    def per_request(self) -> bool:
        """True for values that change on every request (the main finding)."""
        return not self.static and self.timing is Timing.REQUEST

    @property
    def breaks_cache(self) -> bool:
        """True when bytes from this segment onward can differ between two requests."""
        if self.static:
            return self.nondeterminism is not None
        # the user's input differs per request too: only the history before the new turn is stable
        return self.kind is not DynamicKind.HISTORY

    def with_tokens(self, tokens: int) -> Segment:
        return evolve(self, tokens=tokens)


@dataclass
class Layout:
    """The ordered segments of one request, plus what is known about where it is sent."""

    segments: list[Segment] = field(default_factory=list)
    provider: str = "openai"
    model: str | None = None
    sink: SourceLocation | None = None
    sink_name: str = ""
    # Request-level values that influence caching, e.g. ``prompt_cache_key``.
    cache_key: Segment | None = None
    tokens_exact: bool = True
    # Rendered request payloads this layout was read from: 0 for code and templates (their static
    # text is source text), 1 for one payload (its text is what was sent), N for N payloads of one
    # template aligned together (its dynamic segments are spans seen to vary between them).
    samples: int = 0

    def __iter__(self) -> Iterator[Segment]:
        return iter(self.segments)

    def __len__(self) -> int:
        return len(self.segments)

    def ordered(self) -> Layout:
        """A copy with segments stably sorted into provider prefix order."""
        segs = sorted(self.segments, key=lambda s: s.section.order)
        return replace_segments(self, segs)

    def total_tokens(self) -> int:
        return sum(s.tokens for s in self.segments)

    def tokens_before(self, index: int) -> int:
        """Tokens in segments ``[0, index)``: the prefix that stays cacheable."""
        return sum(s.tokens for s in self.segments[:index])

    def static_tokens_after(self, index: int) -> int:
        """Static tokens after segment ``index`` that are re-prefilled because of it."""
        return sum(s.tokens for s in self.segments[index + 1 :] if s.static)

    def first_breaking_index(self) -> int | None:
        """Index of the first segment whose bytes can differ between requests."""
        for i, seg in enumerate(self.segments):
            if seg.breaks_cache:
                return i
        return None

    def history_after(self, index: int) -> bool:
        """True when conversation history follows segment ``index``."""
        return any(s.kind is DynamicKind.HISTORY for s in self.segments[index + 1 :])

    def breakpoints(self) -> list[tuple[int, CacheControl]]:
        """``(segment index, cache_control)`` pairs, in prefix order."""
        return [(i, s.cache_control) for i, s in enumerate(self.segments) if s.cache_control]

    def fingerprint(self, upto: int | None = None) -> str:
        """A sha256 over the static text and dynamic slots of the first ``upto`` segments."""
        h = hashlib.sha256()
        for seg in self.segments[:upto]:
            h.update(seg.section.value.encode())
            h.update(b"\x00S" if seg.static else b"\x00D")
            h.update((seg.text if seg.static else (seg.kind or DynamicKind.UNKNOWN).value).encode())
        return h.hexdigest()


def replace_segments(layout: Layout, segments: Iterable[Segment]) -> Layout:
    """A copy of ``layout`` with other segments."""
    return Layout(
        segments=list(segments),
        provider=layout.provider,
        model=layout.model,
        sink=layout.sink,
        sink_name=layout.sink_name,
        cache_key=layout.cache_key,
        tokens_exact=layout.tokens_exact,
        samples=layout.samples,
    )


def count_layout_tokens(layout: Layout, dynamic_estimate: int = 8) -> Layout:
    """Fill in ``tokens`` of static segments with the provider's tokenizer.

    Dynamic values have no text to count; they get ``dynamic_estimate`` tokens unless the producer
    already set a count. ``tokens_exact`` records whether the tokenizer was exact.
    """
    from prefixlint.model.tokens import tokenizer_for

    tok = tokenizer_for(layout.provider, layout.model)
    segs: list[Segment] = []
    for seg in layout.segments:
        if seg.static:
            segs.append(seg.with_tokens(tok.count(seg.text)))
        elif seg.tokens == 0:
            segs.append(seg.with_tokens(dynamic_estimate))
        else:
            segs.append(seg)
    out = replace_segments(layout, segs)
    out.tokens_exact = tok.exact
    return out


def merge_adjacent_static(segments: Sequence[Segment]) -> list[Segment]:
    """Join neighbouring static segments of the same section and message (keeps the first location)."""
    out: list[Segment] = []
    for seg in segments:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.static
            and seg.static
            and prev.section is seg.section
            and prev.message_index == seg.message_index
            and prev.cache_control is None
            and prev.nondeterminism is None
            and seg.nondeterminism is None
            and prev.conditional == seg.conditional
            and prev.repeated == seg.repeated
        ):
            out[-1] = evolve(
                prev,
                text=prev.text + seg.text,
                tokens=prev.tokens + seg.tokens,
                cache_control=seg.cache_control,
            )
        else:
            out.append(seg)
    return out
