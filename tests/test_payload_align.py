"""Sample alignment, the first divergence to the token, volatile patterns and payload layouts."""

from __future__ import annotations

import json

import pytest

from prefixlint.analysis.payloads.align import align_group, align_pair, cluster_samples
from prefixlint.analysis.payloads.analyze import PayloadAnalyzer, analyze_payload_files
from prefixlint.analysis.payloads.divergence import first_divergence
from prefixlint.analysis.payloads.documents import read_payload_file
from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.analysis.payloads.samples import make_sample
from prefixlint.model.layout import DynamicKind, Nondeterminism, Section
from prefixlint.model.settings import Settings
from prefixlint.model.tokens import Tokenizer, tokenizer_for
from prefixlint.model.volatile_patterns import classify_values, find_volatile, volatile_patterns
from prefixlint.rules._examples import RULES

LONG = " ".join([RULES] * 6)


def body(system: str, question: str = "Question?", **extra: object) -> dict:
    return {
        "model": "gpt-4.1",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
        **extra,
    }


def samples(bodies: list[dict], tok: Tokenizer | None = None) -> list:
    tok = tok or tokenizer_for("openai", "gpt-4.1")
    cache = PieceCache(tok)
    text = "".join(json.dumps(b) + "\n" for b in bodies)
    pf = read_payload_file("s.jsonl", text)
    return [
        make_sample(p.label, pieces_from_request(p.body, p.api, cache, keep_text=True), tok, p)
        for p in pf.payloads
    ]


def aligned(bodies: list[dict], tok: Tokenizer | None = None):
    ss = samples(bodies, tok)
    members = [(ss[0], [])] + [(s, align_pair(ss[0], s)) for s in ss[1:]]
    return align_group(members, tok or tokenizer_for("openai", "gpt-4.1"))


def test_every_catalog_pattern_matches_its_invalid_and_none_of_its_valid_examples() -> None:
    patterns = volatile_patterns()
    assert {p.name for p in patterns} >= {
        "iso-timestamp",
        "natural-timestamp",
        "uuid",
        "hex-id",
        "jwt",
        "digit-run",
    }
    for p in patterns:
        assert p.invalid and p.valid, p.name
        for text in p.invalid:
            assert p.regex.search(text), (p.name, text)
        for text in p.valid:
            assert not p.regex.search(text), (p.name, text)
    # a value only a rare change makes (a date, a time of day) is never flagged on one sample
    for p in patterns:
        for text in (*p.valid, *(() if p.per_request else p.invalid)):
            assert not find_volatile(text), (p.name, text)


def test_classify_values_needs_every_value_to_match() -> None:
    assert classify_values(["2026-11-29T10:15:03Z", "2026-11-30T08:01:44Z"]).name == "iso-timestamp"
    assert classify_values(["2026-11-29", "2026-11-30"]).name == "iso-date"
    assert classify_values(["2026-11-29T10:15:03Z", "tomorrow"]) is None


def test_alignment_finds_the_stable_prefix_and_every_varying_span() -> None:
    stamps = ("2026-11-29T10:15:03Z", "2026-11-29T10:16:44Z", "2026-11-30T08:01:12Z")
    al = aligned(
        [body(f"Hi. Time: {s}.\n{LONG}\nUser id: u{i}\n{LONG}", f"Q{i}?") for i, s in enumerate(stamps)]
    )
    assert al.stable_prefix == min(d.tokens for d in al.divergences)
    kinds = [(s.path, s.kind.kind, s.values) for s in al.ahead_of_stable()]
    assert kinds[0] == ("messages[0].content", DynamicKind.TIMESTAMP, list(stamps))
    assert kinds[1][0] == "messages[0].content" and kinds[1][2] == ["u0", "u1", "u2"]
    first, second = al.ahead_of_stable()
    assert first.cost > second.cost > 0 and first.token < second.token
    tok = tokenizer_for("openai", "gpt-4.1")
    assert second.cost == pytest.approx(len(tok.encode("\n" + LONG)), abs=3)
    assert al.spans[-1].path == "messages[1].content" and al.spans[-1].cost == 0  # the new user turn


def test_short_stable_runs_between_values_are_one_span_and_chance_matches_make_none() -> None:
    al = aligned(
        [body(f"{LONG}", "The cat sat on the mat."), body(f"{LONG}", "A dog ran in the park today.")]
    )
    assert not al.ahead_of_stable()
    al = aligned([body(f"Name: Ann, id 7.\n{LONG}"), body(f"Name: Bob, id 9.\n{LONG}")])
    assert len(al.ahead_of_stable()) == 1  # ", id " joins the two values


def test_inserted_and_missing_messages_vary() -> None:
    base = body(LONG)
    longer = json.loads(json.dumps(base))
    longer["messages"][1:1] = [
        {"role": "user", "content": "Earlier."},
        {"role": "assistant", "content": "Yes."},
    ]
    al = aligned([base, longer])
    assert (
        al.stable_prefix == first_divergence(*(s.pieces for s in al.samples), tokenizer_for("openai")).tokens
    )


def test_tool_reorder_is_seen_across_samples() -> None:
    tools = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("a_tool", "b_tool")
    ]
    al = aligned([body(LONG, tools=tools), body(LONG, tools=tools[::-1])])
    assert al.tool_order_varies and not [s for s in al.spans if s.path.startswith("tools")]


def test_samples_of_other_templates_are_not_aligned() -> None:
    other = " ".join(["Summarize the document in three bullet points for an executive audience."] * 20)
    ss = samples([body(LONG, "Q1?"), body(other, "Q2?"), body(LONG, "Q3?")])
    groups = cluster_samples(ss)
    assert [c.size for c in groups] == [2, 1]


def test_estimating_tokenizer_aligns_on_words() -> None:
    est = Tokenizer("o200k_base", exact=False, source="estimate")
    al = aligned(
        [body(f"Time: 2026-11-29T10:15:03Z.\n{LONG}"), body(f"Time: 2026-11-30T08:01:12Z.\n{LONG}")], est
    )
    span = al.ahead_of_stable()[0]
    assert span.kind.kind is DynamicKind.TIMESTAMP and span.cost > 100


def test_first_divergence_is_exact_to_the_token() -> None:
    tok = tokenizer_for("openai", "gpt-4.1")
    cache = PieceCache(tok)
    a = pieces_from_request(body(f"{LONG} Alpha"), "chat", cache, keep_text=True)
    b = pieces_from_request(body(f"{LONG} Beta"), "chat", cache, keep_text=True)
    sp = first_divergence(a, b, tok)
    assert sp.tokens == 4 + len(tok.encode(LONG)) and sp.path == "messages[0].content" and sp.exact
    blocks = first_divergence(a, b)  # without a tokenizer: whole 16-token blocks, as before
    assert blocks.tokens <= sp.tokens and blocks.tokens % 16 == 0
    extra = pieces_from_request(
        {"model": "gpt-4.1", "messages": [*body(LONG)["messages"], {"role": "assistant", "content": "x"}]},
        "chat",
        cache,
        keep_text=True,
    )
    sp = first_divergence(pieces_from_request(body(LONG), "chat", cache, keep_text=True), extra, tok)
    assert sp.path == "messages[2].content" and sp.path_a is None and sp.index_b == 2


def test_aligned_layout_marks_spans_and_tool_order() -> None:
    tools = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("a_tool", "b_tool")]
    texts = [
        ("a.json", json.dumps(body(f"Time: 2026-11-29T10:15:03Z.\n{LONG}", tools=tools), indent=2)),
        ("b.json", json.dumps(body(f"Time: 2026-11-30T11:00:00Z.\n{LONG}", tools=tools[::-1]), indent=2)),
    ]
    out = analyze_payload_files(texts, Settings())
    ref = out["a.json"].layouts[0]
    assert ref.samples == 2 and out["b.json"].layouts[0].samples == 2
    assert out["a.json"].dependencies == {"b.json"}
    dyn = [s for s in ref.segments if not s.static and not s.is_last_user_message]
    assert [s.kind for s in dyn] == [DynamicKind.TIMESTAMP] and dyn[0].label == "2026-11-29T10:15:03Z"
    line = texts[0][1].splitlines()[dyn[0].location.line - 1]
    assert line[dyn[0].location.col : dyn[0].location.end_col] == "2026-11-29T10:15:03Z"
    (order,) = [s for s in ref.segments if s.nondeterminism is Nondeterminism.TOOL_ORDER]
    # the first tool's segment, located at the ``tools`` key
    assert order.section is Section.TOOLS and '"tools"' in texts[0][1].splitlines()[order.location.line - 1]
    assert sum(s.tokens for s in ref.segments) == out["a.json"].layouts[0].total_tokens()


def test_provider_follows_the_request() -> None:
    analyzer = PayloadAnalyzer(Settings.model_validate({"provider": "vllm", "model": "llama"}))
    pf = read_payload_file(
        "r.jsonl",
        "".join(
            json.dumps(b) + "\n"
            for b in (
                {"model": "meta-llama/Llama-3.1-8B", "messages": []},
                {"model": "gpt-4o", "messages": []},
                {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": []},
            )
        ),
    )
    layouts, _ = analyzer.layouts(pf.payloads)
    assert [(x.provider, x.model) for x in layouts] == [
        ("vllm", "meta-llama/Llama-3.1-8B"),
        ("openai", "gpt-4o"),
        ("anthropic", "claude-sonnet-4-5"),
    ]
    assert not layouts[2].tokens_exact  # no public Claude tokenizer: counts are estimates


def test_the_pytest_helper_counts_to_the_token() -> None:
    from prefixlint.testing import shared_prefix

    a, b = body(f"{LONG} Alpha"), body(f"{LONG} Beta")
    result = shared_prefix(a, b, through_sdk=False)
    assert result.exact and result.tokens == 4 + len(tokenizer_for("openai", "gpt-4.1").encode(LONG))


def test_a_messages_body_is_anthropic_whatever_its_model_is_named() -> None:
    """An Anthropic Messages body sent to a gateway under an in-house model name is still priced as
    Anthropic's (the API says it, not the name)."""
    pf = read_payload_file(
        "r.json", json.dumps({"model": "house-model", "max_tokens": 5, "system": "S", "messages": []})
    )
    assert pf.payloads[0].api == "messages"
    layouts, _ = PayloadAnalyzer(Settings()).layouts(pf.payloads)
    assert (layouts[0].provider, layouts[0].model) == ("anthropic", "house-model")


def test_the_provider_given_wins_over_the_one_the_request_names() -> None:
    """``diff --provider anthropic`` on OpenAI-shaped requests cuts them with Anthropic's (estimated)
    tokenizer; without it, the request's own provider (OpenAI's exact tokenizer)."""
    from prefixlint.analysis.payloads.compare import Input, read_samples

    inputs = [Input("a.json", json.dumps(body(LONG)))]
    _, given, _ = read_samples(inputs, Settings(), provider="anthropic")
    _, found, _ = read_samples(inputs, Settings())
    assert (given.tokenizer.exact, found.tokenizer.exact) == (False, True)
