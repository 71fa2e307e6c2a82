"""First sightings: a prompt whose head this process never sent is not tokenized until it comes back.

Real ``openai`` and ``anthropic`` clients over real HTTP to the local provider-shaped server. The same
traffic is also run with deferring switched off (every request tokenized when sent, as before), and
every report must agree on what the wrapper predicted and concluded; only ``counted`` and
``local_prompt_tokens`` of a first sighting differ.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import anthropic
import openai
import pytest
from sdk_server import ProviderServer

import prefixlint.sdk as sdk
from prefixlint.analysis.payloads.pieces import (
    PieceCache,
    count_pieces,
    head_key,
    pieces_from_request,
    uncounted_pieces,
)
from prefixlint.model.tokens import tokenizer_for
from prefixlint.sdk import CacheReport, Verdict, sightings

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HEAD = "Shared handbook. " + " ".join(f"section{i}" for i in range(700))  # about 2,100 tokens
CLAUDE = "claude-sonnet-4-5"


def _words(tag: str, n: int) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


@pytest.fixture(scope="module")
def server() -> Iterator[ProviderServer]:
    srv = ProviderServer().start()
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _reset(server: ProviderServer) -> Iterator[None]:
    server.reset()
    sdk.forget()
    yield
    sdk.forget()


def _openai(server: ProviderServer, reports: list[CacheReport], **opts) -> openai.OpenAI:
    return sdk.wrap(
        openai.OpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0),
        on_report=reports.append,
        **opts,
    )


def _ask(client: openai.OpenAI, system: str, user: str = "q") -> None:
    client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": user}]
    )


def _judged(r: CacheReport) -> tuple:
    """What a report concludes (everything but whether and what it counted locally)."""
    return (
        r.verdict,
        r.predicted_cached,
        r.upper_bound,
        r.causes,
        r.divergence,
        r.reported_cached,
        r.prompt_tokens,
    )


def _traffic(server: ProviderServer, monkeypatch: pytest.MonkeyPatch, defer: bool) -> list[CacheReport]:
    server.reset()
    sdk.forget()
    if not defer:
        monkeypatch.setattr(sightings, "MAX_KEYS", 0)  # the first key fills the table: nothing is deferred
    reports: list[CacheReport] = []
    client = _openai(server, reports)
    one = HEAD + " " + _words("one", 400)
    _ask(client, one)  # fresh
    _ask(client, one)  # the same again: its second sighting
    _ask(client, HEAD + " " + _words("two", 400))  # shares only its head (the handbook) with the first
    _ask(client, "Fresh prompt A. " + _words("a", 1500))  # nothing shared
    _ask(client, "Fresh prompt B. " + _words("b", 1500))  # nothing shared: the call site's head changed again
    _ask(client, "Fresh prompt C. " + _words("c", 1500))
    monkeypatch.undo()
    return reports


def test_first_sightings_conclude_what_counting_them_concludes(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    deferred = _traffic(server, monkeypatch, defer=True)
    counted = _traffic(server, monkeypatch, defer=False)
    assert [_judged(r) for r in deferred] == [_judged(r) for r in counted]
    assert [r.counted for r in deferred] == [False, True, True, False, False, False]
    assert all(r.counted for r in counted)
    # a first sighting: 0 cached predicted, exactly; the total is the provider's
    first = deferred[0]
    assert first.verdict is Verdict.EXPECTED_MISS and first.causes == ("new prefix",)
    assert (first.predicted_cached, first.upper_bound, first.local_prompt_tokens) == (0, 0, 0)
    assert first.prompt_tokens and first.prompt_tokens > 2000
    # the second sighting predicts the hit from exact token boundaries
    again = deferred[1]
    assert again.verdict is Verdict.HIT and again.reported_cached and again.reported_cached > 2000
    assert abs(again.predicted_cached - again.reported_cached) <= 128
    assert again.local_prompt_tokens == counted[1].local_prompt_tokens > 2000
    # the prompt that shares only the handbook: a partial hit, predicted from the first one's counted tokens
    partial = deferred[2]
    assert partial.verdict is Verdict.HIT and 1024 <= partial.predicted_cached < again.predicted_cached
    assert abs(partial.predicted_cached - (partial.reported_cached or 0)) <= 128
    # the call site's prompt changes on every call: drift, at token 0, without counting
    assert deferred[5].verdict is Verdict.DRIFT and deferred[5].divergence.token_index == 0


def test_a_first_sighting_is_not_tokenized(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    _, _, cache = client._prefixlint_state.for_model("gpt-4o")
    before = cache.misses
    _ask(client, "Fresh. " + _words("w", 3000))
    assert cache.misses == before  # no text went through the tokenizer
    assert not reports[0].counted and reports[0].verdict is Verdict.EXPECTED_MISS
    _ask(client, "Fresh. " + _words("w", 3000))
    assert cache.misses > before  # the second sighting counted both
    assert reports[1].counted and reports[1].verdict is Verdict.HIT


def test_a_follower_sent_while_the_first_sighting_is_in_flight(server: ProviderServer) -> None:
    """The first request is still in the air when the second, identical, one leaves: the server serves
    the second from what the first wrote, which the wrapper may count as cached (upper bound) but not
    as surely cached (lower bound)."""
    server.delay = 0.6
    reports: list[CacheReport] = []
    lock = threading.Lock()

    def keep(r: CacheReport) -> None:
        with lock:
            reports.append(r)

    client = sdk.wrap(openai.OpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0), on_report=keep)
    prompt = "In flight. " + _words("f", 1500)
    first = threading.Thread(target=_ask, args=(client, prompt))
    first.start()
    deadline = time.monotonic() + 5
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # the server has read (and cached) the first prompt
    _ask(client, prompt)
    first.join()
    assert len(reports) == 2
    follower = next(r for r in reports if r.reported_cached)
    leader = next(r for r in reports if r is not follower)
    assert follower.verdict is Verdict.HIT and follower.predicted_cached == 0
    assert follower.upper_bound >= follower.reported_cached - 128
    assert follower.causes == ("written by a request still in flight when this one was sent",)
    assert leader.verdict is Verdict.EXPECTED_MISS and leader.counted  # counted while in flight


def test_identical_fresh_prompts_at_once_give_no_unexpected_hit(server: ProviderServer) -> None:
    server.delay = 0.05
    reports: list[CacheReport] = []
    client = sdk.wrap(
        openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k1", max_retries=0), on_report=reports.append
    )

    async def main() -> None:
        for rnd in range(3):
            prompt = f"Round {rnd}, fresh. " + _words(f"r{rnd}x", 1500)
            await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="gpt-4o",
                        messages=[{"role": "system", "content": prompt}, {"role": "user", "content": "q"}],
                    )
                    for _ in range(8)
                )
            )
        await client.close()

    asyncio.run(main())
    assert len(reports) == 24
    verdicts = [r.verdict.value for r in reports]
    assert "unexpected_hit" not in verdicts and "unexpected_miss" not in verdicts, verdicts
    assert sum(1 for r in reports if r.reported_cached) >= 3  # the server did serve hits between them


def test_anthropic_first_sighting_then_hit(server: ProviderServer) -> None:
    reports: list[CacheReport] = []
    client = sdk.wrap(
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0),
        on_report=reports.append,
        breakpoints=False,  # the caller marks its own breakpoints: nothing is cut before sending
    )
    system = [
        {
            "type": "text",
            "text": "Claude handbook. " + _words("c", 1500),
            "cache_control": {"type": "ephemeral"},
        }
    ]
    for _ in range(2):
        client.messages.create(
            model=CLAUDE, max_tokens=5, system=system, messages=[{"role": "user", "content": "question"}]
        )
    first, second = reports
    assert not first.counted and first.verdict is Verdict.EXPECTED_MISS
    assert (first.predicted_cached, first.upper_bound) == (0, 0) and first.cache_write > 1024
    assert second.counted and second.verdict is Verdict.HIT
    assert second.reported_cached and abs(second.predicted_cached - second.reported_cached) <= 0.03 * (
        second.prompt_tokens or 0
    )


def test_a_forked_child_counts_what_the_parent_sent_first(server: ProviderServer) -> None:
    import os

    reports: list[CacheReport] = []
    client = _openai(server, reports, tenant="acme")
    prompt = "Before the fork. " + _words("p", 1500)
    _ask(client, prompt)
    assert not reports[0].counted
    assert sdk.flush(timeout=10)  # no accounting job holds a lock across the fork
    pid = os.fork()
    if pid == 0:  # the child sends the parent's prompt again: its second sighting
        code = 1
        try:
            child: list[CacheReport] = []
            _ask(_openai(server, child, tenant="acme"), prompt)
            r = child[0] if child else None
            code = 0 if r and r.counted and r.verdict is Verdict.HIT and r.predicted_cached >= 1024 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_waiting_sightings_are_bounded(server: ProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sightings, "MAX_WAITING", 2)
    reports: list[CacheReport] = []
    client = _openai(server, reports)
    for tag in "abc":
        _ask(client, f"Bounded {tag}. " + _words(tag, 1500))
    assert [r.counted for r in reports] == [False, False, False]
    heads = client._prefixlint_state.tracker._heads
    assert len(heads.waiting) == 2 and heads.chars == sum(sum(map(len, s.texts)) for s in heads.waiting)
    _ask(client, "Bounded a. " + _words("a", 1500))  # the oldest was counted to make room: still a hit
    assert reports[-1].verdict is Verdict.HIT and reports[-1].predicted_cached >= 1024
    monkeypatch.setattr(sightings, "MAX_KEYS", len(heads.keys))  # the key table is full: stop deferring
    _ask(client, "Bounded d. " + _words("d", 1500))
    assert reports[-1].counted and not client._prefixlint_state.tracker._heads.deferring
    _ask(client, "Bounded b. " + _words("b", 1500))  # waiting when deferring stopped: counted then
    assert reports[-1].verdict is Verdict.HIT and reports[-1].predicted_cached >= 1024


BODIES = [
    (
        "chat",
        {
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "messages": [
                {"role": "system", "content": "sys " * 40},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c", "function": {"name": "f"}}],
                },
                {"role": "user", "content": "caf\u00e9 \U0001f642"},
            ],
        },
    ),
    ("responses", {"instructions": "be brief " * 30, "input": "just a string"}),
    (
        "messages",
        {
            "system": [
                {"type": "text", "text": "s " * 50, "cache_control": {"type": "ephemeral", "ttl": "1h"}}
            ],
            "messages": [{"role": "user", "content": "hello"}],
            "cache_control": {"type": "ephemeral"},
        },
    ),
]


@pytest.mark.parametrize(("api", "body"), BODIES, ids=[a for a, _ in BODIES])
def test_counting_later_gives_the_pieces_of_counting_now(api: str, body: dict) -> None:
    tok = tokenizer_for("openai", "gpt-4o")
    pieces, texts = uncounted_pieces(body, api, PieceCache(tok), keep_text=True)
    assert all(p.tokens == 0 and p.end == 0 for p in pieces)
    count_pieces(pieces, texts, PieceCache(tok))
    assert pieces == pieces_from_request(body, api, PieceCache(tok), keep_text=True)


def test_head_keys_differ_only_when_no_sketch_block_can_be_shared() -> None:
    body = {"messages": [{"role": "user", "content": "x" * 20 + "tail one"}]}
    same_start = {"messages": [{"role": "system", "content": "x" * 20 + "tail two"}]}  # role differs too
    other = {"messages": [{"role": "user", "content": "y" + "x" * 20}]}
    assert head_key(body, "chat") == head_key(same_start, "chat")
    assert head_key(body, "chat") != head_key(other, "chat")
    assert head_key({"messages": []}, "chat") is None


class _Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def _expiry_traffic(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch, defer: bool
) -> list[CacheReport]:
    server.reset()
    sdk.forget()
    monkeypatch.setattr(sightings, "MAX_WAITING", 1)
    if not defer:
        monkeypatch.setattr(sightings, "MAX_KEYS", 0)
    clock = _Clock()
    reports: list[CacheReport] = []
    client = _openai(server, reports, clock=clock)
    old = "Old prompt. " + _words("o", 1500)
    _ask(client, old)
    clock.offset = 3 * 86400.0  # past every retention the provider offers
    _ask(client, "Later prompt. " + _words("l", 1500))  # the old one waits no longer: dropped, uncounted
    tokenized = client._prefixlint_state.for_model("gpt-4o")[2].misses
    _ask(client, old)  # the server never forgets; the model says the entry expired
    monkeypatch.undo()
    return reports, tokenized


def test_a_sighting_past_its_cache_lifetime_is_dropped_uncounted(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    deferred, tokenized = _expiry_traffic(server, monkeypatch, defer=True)
    counted, _ = _expiry_traffic(server, monkeypatch, defer=False)
    assert tokenized == 0  # the old prompt was dropped, not counted
    assert [r.verdict for r in deferred] == [r.verdict for r in counted]
    assert [(r.predicted_cached, r.upper_bound) for r in deferred] == [(0, 0)] * 3
    assert deferred[2].verdict is Verdict.UNEXPECTED_HIT  # more than anything still cached explains
    assert [r.counted for r in deferred] == [False, False, True]
