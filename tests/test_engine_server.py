"""The real ``openai`` and ``anthropic`` clients over real HTTP against the engine server
(uvicorn on 127.0.0.1, random free port, background thread)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")
torch.set_num_threads(1)  # tiny matrices: extra threads only contend on a busy CI box
anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

from prefixlint.engine import EngineConfig, LLMEngine  # noqa: E402
from prefixlint.engine.integrity import reserve_unwritten_blocks  # noqa: E402
from prefixlint.engine.server import create_app  # noqa: E402
from prefixlint.live.serving import serve_in_thread  # noqa: E402

pytestmark = pytest.mark.engine
KEYS = {"key-a": "alice", "key-b": "bob", "key-c": "carol", "key-d": "dave", "key-m": "mallory"}
MAX_LEN = 2048


def start(fault_injection: bool = False, **kw: object) -> tuple[LLMEngine, object]:
    cfg = {"preset": "tiny", "device": "cpu", "num_blocks": 256, "block_size": 8, "max_model_len": MAX_LEN}
    eng = LLMEngine(EngineConfig(**{**cfg, **kw}))  # type: ignore[arg-type]
    return eng, create_app(eng, KEYS, fault_injection=fault_injection)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, LLMEngine]]:
    eng, app = start()
    try:
        with serve_in_thread(app) as url:
            yield url, eng
    finally:
        eng.shutdown()


def oai(url: str, key: str = "key-a") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=60)


def system_prompt() -> str:
    """A fresh long system prompt per test, so hits come only from the test itself."""
    return f"{uuid.uuid4().hex}: you are a terse assistant for prefix caching questions. " * 3


def chat(client: openai.OpenAI, system: str, user: str = "What is a KV block?", **kw: object):
    return client.chat.completions.create(
        model="tiny",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        max_tokens=4,
        temperature=0,
        **kw,
    )


def wait_idle(eng: LLMEngine, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = eng.stats()
        if s["blocks_free"] == s["blocks_total"] and s["running"] == s["waiting"] == 0:
            return
        time.sleep(0.02)
    raise AssertionError(f"blocks still held: {eng.stats()}")


def test_health_models_and_api_keys(server: tuple[str, LLMEngine]) -> None:
    url, engine = server
    health = httpx.get(f"{url}/health").json()
    assert health["status"] == "ok" and health["max_model_len"] == MAX_LEN
    assert [m.id for m in oai(url).models.list()] == ["tiny"]
    listed = httpx.get(f"{url}/v1/models", headers={"Authorization": "Bearer key-a"}).json()["data"][0]
    assert listed["max_model_len"] == engine.config.max_model_len  # what `bench retention` reads
    with pytest.raises(openai.AuthenticationError):
        oai(url, "wrong-key").models.list()
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=url, api_key="nope", max_retries=0).messages.create(
            model="tiny", max_tokens=1, messages=[{"role": "user", "content": "hi"}]
        )


def test_same_tenant_hits_and_other_tenant_misses(server: tuple[str, LLMEngine]) -> None:
    url, _ = server
    system = system_prompt()
    first = chat(oai(url, "key-a"), system)
    again = chat(oai(url, "key-a"), system)
    other = chat(oai(url, "key-b"), system)
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    assert again.usage.prompt_tokens_details.cached_tokens > 0
    assert other.usage.prompt_tokens_details.cached_tokens == 0
    assert (
        again.choices[0].message.content
        == first.choices[0].message.content
        == other.choices[0].message.content
    )


def test_chat_without_max_tokens_stops_at_the_default_shown_in_models(server: tuple[str, LLMEngine]) -> None:
    """tiny can never sample its end-of-sequence id; a chat request without max_tokens stops at
    the server-side default that /v1/models shows, not at max_model_len."""
    url, eng = server
    card = httpx.get(f"{url}/v1/models", headers={"Authorization": "Bearer key-a"}).json()["data"][0]
    assert card["default_max_tokens"] == eng.default_max_tokens == 256 < MAX_LEN
    r = oai(url).chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Tell me everything."}]
    )
    assert r.usage.completion_tokens == 256 and r.choices[0].finish_reason == "length"


def test_cached_tokens_is_present_at_zero(server: tuple[str, LLMEngine]) -> None:
    url, _ = server
    raw = httpx.post(
        f"{url}/v1/completions",
        headers={"Authorization": "Bearer key-a"},
        json={"model": "tiny", "prompt": f"fresh {uuid.uuid4().hex}", "max_tokens": 2},
    )
    body = raw.json()
    assert raw.status_code == 200 and body["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
    assert body["object"] == "text_completion" and body["choices"][0]["finish_reason"] == "length"


def test_completions_with_token_ids_and_stop(server: tuple[str, LLMEngine]) -> None:
    url, eng = server
    client = oai(url)
    full = client.completions.create(
        model="tiny", prompt=[1000, 2000, 3000, 4000], max_tokens=6, temperature=0
    )
    text = full.choices[0].text
    assert full.usage.prompt_tokens == 4 and full.usage.completion_tokens == 6
    at = next(i for i in range(1, len(text)) if not text[i].isspace())
    stop = text[at : at + 2]
    cut = client.completions.create(
        model="tiny", prompt=[1000, 2000, 3000, 4000], max_tokens=6, temperature=0, stop=[stop]
    )
    assert cut.choices[0].text == text[: text.find(stop)] and cut.choices[0].finish_reason == "stop"
    assert len(cut.choices[0].text) < len(text)
    with pytest.raises(openai.BadRequestError, match="n=1"):
        client.completions.create(model="tiny", prompt="x", max_tokens=1, n=2)
    with pytest.raises(openai.BadRequestError, match="echo"):
        client.completions.create(model="tiny", prompt="x", max_tokens=1, echo=True)
    # A stop string aborts the sequence; the abort is applied by the engine's next step.
    deadline = time.monotonic() + 5.0
    while eng.stats()["running"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert eng.stats()["running"] == 0


def test_streaming_chat_with_include_usage(server: tuple[str, LLMEngine]) -> None:
    url, _ = server
    system = system_prompt()
    want = chat(oai(url), system).choices[0].message.content
    chunks = list(chat(oai(url), system, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == want
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert all(c.usage is None for c in chunks[:-1]) and chunks[-1].choices == []
    usage = chunks[-1].usage
    assert usage.completion_tokens == 4 and usage.prompt_tokens_details.cached_tokens > 0


def test_streaming_completions(server: tuple[str, LLMEngine]) -> None:
    url, _ = server
    prompt = f"stream me {uuid.uuid4().hex}"
    want = oai(url).completions.create(model="tiny", prompt=prompt, max_tokens=5, temperature=0)
    stream = oai(url).completions.create(
        model="tiny",
        prompt=prompt,
        max_tokens=5,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == want.choices[0].text
    assert chunks[-1].usage.prompt_tokens == want.usage.prompt_tokens
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens >= 0


def test_anthropic_messages_honour_cache_control(server: tuple[str, LLMEngine]) -> None:
    url, _ = server
    # Fresh tenants: the ChatML framing "<|im_start|>system\n" is exactly one 8-token block, which
    # a tenant's earlier requests would legitimately have cached.
    client = anthropic.Anthropic(base_url=url, api_key="key-c", max_retries=0)
    system = [{"type": "text", "text": system_prompt(), "cache_control": {"type": "ephemeral"}}]
    msgs = [{"role": "user", "content": "Summarise the rules."}]
    first = client.messages.create(
        model="tiny", max_tokens=3, system=system, messages=msgs, extra_body={"temperature": 0}
    )
    second = client.messages.create(
        model="tiny", max_tokens=3, system=system, messages=msgs, extra_body={"temperature": 0}
    )
    assert first.usage.cache_read_input_tokens == 0 and first.usage.cache_creation_input_tokens > 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    total = first.usage.input_tokens + first.usage.cache_creation_input_tokens
    assert second.usage.input_tokens + second.usage.cache_read_input_tokens == total
    assert second.content[0].text == first.content[0].text and second.stop_reason == "max_tokens"
    # Without a breakpoint nothing is read from or written to the cache.
    plain = client.messages.create(model="tiny", max_tokens=3, system=system[0]["text"], messages=msgs)
    assert plain.usage.cache_read_input_tokens == plain.usage.cache_creation_input_tokens == 0
    # Another tenant never reads alice's blocks.
    bob = anthropic.Anthropic(base_url=url, api_key="key-d", max_retries=0)
    theirs = bob.messages.create(model="tiny", max_tokens=3, system=system, messages=msgs)
    assert theirs.usage.cache_read_input_tokens == 0
    # Streaming reports the same usage and text.
    with client.messages.stream(
        model="tiny", max_tokens=3, system=system, messages=msgs, extra_body={"temperature": 0}
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == first.content[0].text
    assert final.usage.cache_read_input_tokens == second.usage.cache_read_input_tokens
    assert final.usage.output_tokens == 3


def test_client_salt_is_rejected_unless_allowed(server: tuple[str, LLMEngine]) -> None:
    url, _ = server
    with pytest.raises(openai.BadRequestError, match="cache_salt is not accepted"):
        chat(oai(url), system_prompt(), extra_body={"cache_salt": "guess-the-victim"})
    eng, app = start(allow_client_salt=True, num_blocks=64, max_model_len=512)
    try:
        with serve_in_thread(app) as url2:
            system = system_prompt()
            chat(oai(url2), system, extra_body={"cache_salt": "s1"})
            same = chat(oai(url2), system, extra_body={"cache_salt": "s1"})
            other = chat(oai(url2), system, extra_body={"cache_salt": "s2"})
            other_tenant = chat(oai(url2, "key-b"), system, extra_body={"cache_salt": "s1"})
            assert same.usage.prompt_tokens_details.cached_tokens > 0
            assert other.usage.prompt_tokens_details.cached_tokens == 0
            assert other_tenant.usage.prompt_tokens_details.cached_tokens == 0  # salt adds to tenant
    finally:
        eng.shutdown()


def test_too_long_prompts_get_400_and_allocate_nothing(server: tuple[str, LLMEngine]) -> None:
    """The boundary at -1, exact and +1: over max_model_len is a 400 that never reaches the
    allocator; at or under it the request runs and stops at max_model_len."""
    url, eng = server
    wait_idle(eng)
    calls = eng.stats()["allocation_calls"]
    with pytest.raises(openai.BadRequestError, match="max_model_len"):
        oai(url).completions.create(model="tiny", prompt=[7] * (MAX_LEN + 1), max_tokens=1)
    with pytest.raises(anthropic.BadRequestError, match="max_model_len"):
        anthropic.Anthropic(base_url=url, api_key="key-a", max_retries=0).messages.create(
            model="tiny", max_tokens=1, messages=[{"role": "user", "content": "word " * (MAX_LEN + 10)}]
        )
    assert eng.stats()["allocation_calls"] == calls  # rejected before any block was handed out
    for length in (MAX_LEN - 1, MAX_LEN):
        ok = oai(url).completions.create(model="tiny", prompt=[8] * length, max_tokens=5)
        assert ok.usage.prompt_tokens == length and ok.choices[0].finish_reason == "length"
        assert ok.usage.completion_tokens == max(1, MAX_LEN - length)  # output stops at max_model_len
    assert eng.stats()["allocation_calls"] > calls
    wait_idle(eng)


def test_integrity_violation_fails_only_that_request_with_500(server: tuple[str, LLMEngine]) -> None:
    url, eng = server
    victim_ns = LLMEngine.namespace("mallory")

    def hook(seq, bm) -> None:
        decoding = len(seq) - seq.num_computed_tokens == 1
        if seq.namespace == victim_ns and seq.num_output_tokens == 1 and decoding:
            reserve_unwritten_blocks(seq, bm, 3)

    before = eng.stats()["integrity_failures"]
    eng.fault_hook = hook
    try:
        with pytest.raises(openai.InternalServerError, match="KV integrity violation") as err:
            oai(url, "key-m").completions.create(model="tiny", prompt="hello there", max_tokens=4)
        assert "choices" not in err.value.response.text  # no tokens came back
        fine = oai(url, "key-a").completions.create(model="tiny", prompt="hello there", max_tokens=4)
        assert fine.usage.completion_tokens == 4
    finally:
        eng.fault_hook = None
    assert eng.stats()["integrity_failures"] == before + 1
    wait_idle(eng)


def test_health_and_metrics_expose_the_kv_pool(server: tuple[str, LLMEngine]) -> None:
    url, _ = server
    health = httpx.get(f"{url}/health").json()
    assert (health["block_size"], health["num_blocks"], health["kv_pool_tokens"]) == (8, 256, 2048)
    assert health["prefix_caching"] is True
    text = httpx.get(f"{url}/metrics").text
    assert "prefixlint_engine_kv_block_size 8.0" in text
    assert "prefixlint_engine_kv_pool_tokens 2048.0" in text
    info = next(line for line in text.splitlines() if line.startswith("prefixlint_engine_cache_config_info{"))
    for label in ('block_size="8"', 'num_blocks="256"', 'pool_tokens="2048"', f'max_model_len="{MAX_LEN}"'):
        assert label in info
    assert info.endswith(" 1.0")


def test_metrics_endpoint(server: tuple[str, LLMEngine]) -> None:
    url, _ = server
    system = system_prompt()
    chat(oai(url), system)
    chat(oai(url), system)
    text = httpx.get(f"{url}/metrics").text
    values = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    assert values["prefixlint_engine_prefix_cache_hit_blocks_total"] > 0
    assert values["prefixlint_engine_prefix_cache_miss_blocks_total"] > 0
    assert values["prefixlint_engine_prefix_cache_hit_tokens_total"] > 0
    assert values["prefixlint_engine_kv_blocks_total"] == 256
    for name in (
        "block_evictions_total",
        "kv_integrity_failures_total",
        "kv_blocks_free",
        "requests_rejected_total",
    ):
        assert f"prefixlint_engine_{name}" in values
    assert values["prefixlint_engine_ttft_seconds_count"] >= 2


def test_disconnect_mid_stream_frees_blocks(server: tuple[str, LLMEngine]) -> None:
    url, eng = server
    wait_idle(eng)
    aborted = eng.counters.finished.get("abort", 0)
    # The engine is held after a request's first token until the client has hung up: the request is
    # surely running when its first line is read, and cannot finish before the disconnect, however
    # busy the machine (a timing margin failed under load: the request ran out first).
    gate = threading.Event()

    def hold_after_first_token(seq: object, bm: object) -> None:
        if seq.num_output_tokens >= 1:  # type: ignore[attr-defined]
            gate.wait(30)

    eng.fault_hook = hold_after_first_token
    try:
        disconnect_twice(url, eng, gate)
    finally:
        gate.set()
        eng.fault_hook = None
    assert eng.counters.finished.get("abort", 0) == aborted + 2


def disconnect_twice(url: str, eng: LLMEngine, gate: threading.Event) -> None:
    """Two streams hung up after their first token: raw HTTP, then the openai client's stream."""
    aborted = eng.counters.finished.get("abort", 0)
    body = {
        "model": "tiny",
        "prompt": f"a long story {uuid.uuid4().hex}",
        "max_tokens": MAX_LEN,
        "ignore_eos": True,
        "stream": True,
    }
    gate.clear()
    with httpx.stream(
        "POST", f"{url}/v1/completions", json=body, headers={"Authorization": "Bearer key-a"}, timeout=30
    ) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: "):
                json.loads(line[6:])
                break
        assert eng.stats()["running"] == 1
    # The connection is closed; once the engine goes on, the server notices and aborts the request.
    gate.set()
    wait_idle(eng)
    assert eng.counters.finished.get("abort", 0) == aborted + 1
    # The same through the openai client's stream object.
    gate.clear()
    stream = oai(url).chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "go on forever"}],
        max_tokens=MAX_LEN,
        stream=True,
        extra_body={"ignore_eos": True},
    )
    next(iter(stream))
    assert eng.stats()["running"] == 1
    stream.close()
    gate.set()
    wait_idle(eng)


# -- logprobs ------------------------------------------------------------------------------------


def reference_logprobs(eng: LLMEngine, ids: list[int]) -> torch.Tensor:
    """Log-probabilities of the next token after ``ids`` from a plain dense forward."""
    logits = eng.runner.model.forward_dense(torch.tensor(ids)).float()
    if eng.runner.logit_bias is not None:
        logits = logits + eng.runner.logit_bias
    return torch.log_softmax(logits, -1)


def test_completion_logprobs_match_a_dense_forward(server: tuple[str, LLMEngine]) -> None:
    url, eng = server
    prompt = [1000 + 37 * i for i in range(20)]
    r = oai(url).completions.create(model="tiny", prompt=prompt, max_tokens=4, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 4
    assert "".join(lp.tokens) == r.choices[0].text
    assert lp.text_offset == [len("".join(lp.tokens[:i])) for i in range(4)]
    for token, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs, strict=True):
        assert top[token] == value and 3 <= len(top) <= 4  # the alternatives plus the sampled token
        assert value == max(top.values())  # greedy: the sampled token is the most likely one
    ref = reference_logprobs(eng, prompt)
    first = int(ref.argmax())
    assert eng.tokenizer.decode([first]) == lp.tokens[0]
    assert lp.token_logprobs[0] == pytest.approx(float(ref[first]), abs=1e-4)
    best3 = sorted(ref.tolist(), reverse=True)[:3]
    assert sorted(lp.top_logprobs[0].values(), reverse=True)[:3] == pytest.approx(best3, abs=1e-4)
    plain = oai(url).completions.create(model="tiny", prompt=prompt, max_tokens=4, temperature=0)
    assert plain.choices[0].logprobs is None and plain.choices[0].text == r.choices[0].text
    zero = oai(url).completions.create(model="tiny", prompt=prompt, max_tokens=2, temperature=0, logprobs=0)
    assert [list(t) for t in zero.choices[0].logprobs.top_logprobs] == [
        [t] for t in zero.choices[0].logprobs.tokens
    ]


def test_chat_logprobs_plain_and_streamed(server: tuple[str, LLMEngine]) -> None:
    url, eng = server
    system = system_prompt()
    r = chat(oai(url), system, logprobs=True, top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens == 4
    # The bytes rebuild the text (a last token can stop inside a character, decoded as U+FFFD).
    assert b"".join(bytes(c.bytes) for c in content).decode(errors="replace") == r.choices[0].message.content
    for c in content:
        assert len(c.top_logprobs) == 2 and c.top_logprobs[0].token == c.token
        assert c.logprob == c.top_logprobs[0].logprob >= c.top_logprobs[1].logprob
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "What is a KV block?"}]
    ref = reference_logprobs(eng, eng.tokenizer.encode(eng.tokenizer.render_chat(messages)))
    assert content[0].logprob == pytest.approx(float(ref.max()), abs=1e-4)
    chunks = list(chat(oai(url), system, logprobs=True, top_logprobs=2, stream=True))
    streamed = [
        c for ch in chunks if ch.choices and ch.choices[0].logprobs for c in ch.choices[0].logprobs.content
    ]
    assert [(c.token, c.logprob) for c in streamed] == [(c.token, pytest.approx(c.logprob)) for c in content]
    without = chat(oai(url), system, logprobs=False)
    assert without.choices[0].logprobs is None


@pytest.mark.parametrize(
    ("route", "extra", "message"),
    [
        ("chat", {"top_logprobs": 2}, "top_logprobs requires logprobs"),
        ("chat", {"logprobs": True, "top_logprobs": 21}, "top_logprobs must be an integer from 0 to 20"),
        ("chat", {"logprobs": 3}, "logprobs must be true or false"),
        ("completions", {"logprobs": 21}, "logprobs must be an integer from 0 to 20"),
        ("completions", {"logprobs": True}, "logprobs must be an integer"),
    ],
)
def test_bad_logprobs_requests_get_400(
    server: tuple[str, LLMEngine], route: str, extra: dict, message: str
) -> None:
    url, _ = server
    body = {"model": "tiny", "max_tokens": 1, **extra}
    if route == "chat":
        body["messages"] = [{"role": "user", "content": "hi"}]
    else:
        body["prompt"] = "hi"
    path = "chat/completions" if route == "chat" else "completions"
    r = httpx.post(f"{url}/v1/{path}", json=body, headers={"Authorization": "Bearer key-a"})
    assert r.status_code == 400 and message in r.json()["error"]["message"]


# -- fault injection over HTTP ---------------------------------------------------------------------


def test_fault_injection_is_refused_unless_the_server_was_started_with_it(
    server: tuple[str, LLMEngine],
) -> None:
    url, eng = server
    auth = {"Authorization": "Bearer key-a"}
    assert httpx.get(f"{url}/debug/fault", headers=auth).json() == {
        "enabled": False,
        "active": None,
        "injected": 0,
    }
    for method in ("POST", "DELETE"):
        r = httpx.request(
            method, f"{url}/debug/fault", headers=auth, json={"fault": "reserve_unwritten_blocks"}
        )
        assert r.status_code == 403 and "--enable-fault-injection" in r.json()["error"]["message"]
    assert eng.fault_hook is None
    assert httpx.post(f"{url}/debug/fault", json={}).status_code == 401  # keys still apply


@pytest.mark.parametrize("checks", [True, False])
def test_fault_injection_over_http(checks: bool) -> None:
    eng, app = start(num_blocks=64, max_model_len=256, integrity_checks=checks, fault_injection=True)
    auth = {"Authorization": "Bearer key-a"}
    try:
        with serve_in_thread(app) as url:
            bad = httpx.post(f"{url}/debug/fault", headers=auth, json={"fault": "nope"})
            assert bad.status_code == 400 and "reserve_unwritten_blocks" in bad.text
            on = httpx.post(f"{url}/debug/fault", headers=auth, json={"num_blocks": 3, "count": 1}).json()
            assert on["active"] == {"fault": "reserve_unwritten_blocks", "num_blocks": 3, "remaining": 1}
            one_token = oai(url).completions.create(model="tiny", prompt="never faulted", max_tokens=1)
            assert one_token.usage.completion_tokens == 1  # no decode step: nothing to fault
            if checks:
                with pytest.raises(openai.InternalServerError, match="KV integrity violation"):
                    oai(url).completions.create(model="tiny", prompt="hello there", max_tokens=4)
            else:  # the fault goes unnoticed: the request "succeeds" on stale KV
                out = oai(url).completions.create(model="tiny", prompt="hello there", max_tokens=4)
                assert out.choices[0].finish_reason in ("length", "stop")
            state = httpx.get(f"{url}/debug/fault", headers=auth).json()
            assert state["injected"] == 1 and state["active"]["remaining"] == 0
            fine = oai(url).completions.create(model="tiny", prompt="hello there", max_tokens=4)
            assert fine.usage.completion_tokens == 4  # count=1: only one request was faulted
            assert eng.stats()["integrity_failures"] == (1 if checks else 0)
            off = httpx.delete(f"{url}/debug/fault", headers=auth).json()
            assert off["active"] is None and eng.fault_hook is None
    finally:
        eng.shutdown()


# -- tenancy: isolated per API key by default ------------------------------------------------------

NO_KEY = {"Authorization": openai.omit}  # the real client, sending no credentials at all


def cached(response) -> int:
    return response.usage.prompt_tokens_details.cached_tokens


def serve_engine(**app_kw: object):
    eng = LLMEngine(
        EngineConfig(preset="tiny", device="cpu", num_blocks=128, block_size=8, max_model_len=512)
    )
    return eng, create_app(eng, **app_kw)


def test_by_default_each_api_key_is_its_own_cache_namespace() -> None:
    eng, app = serve_engine()
    try:
        with serve_in_thread(app) as url:
            system = system_prompt()
            assert cached(chat(oai(url, "sk-alice"), system)) == 0
            assert cached(chat(oai(url, "sk-alice"), system)) > 0  # same key hits
            assert cached(chat(oai(url, "sk-bob"), system)) == 0  # another key misses
            assert cached(chat(oai(url, "sk-bob"), system)) > 0
            anon = system_prompt()
            assert cached(chat(oai(url, "x"), anon, extra_headers=NO_KEY)) == 0
            assert cached(chat(oai(url, "x"), anon, extra_headers=NO_KEY)) > 0  # no key with no key hits
            assert cached(chat(oai(url, "sk-carol"), anon)) == 0  # a key never reads the anonymous cache
            # Anthropic clients send x-api-key: the same key is the same namespace on both APIs.
            ant = anthropic.Anthropic(base_url=url, api_key="sk-alice", max_retries=0)
            blocks = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
            msg = ant.messages.create(
                model="tiny", max_tokens=1, system=blocks, messages=[{"role": "user", "content": "hi"}]
            )
            assert msg.usage.cache_read_input_tokens > 0
            # Namespaces are keyed hashes: the key itself is never the namespace.
            namespaces = {b.namespace for b in eng.block_manager.blocks if b.namespace}
            assert namespaces and not any("sk-alice" in ns or "sk-bob" in ns for ns in namespaces)
            assert (
                httpx.get(f"{url}/v1/models", headers={"Authorization": "Bearer anything"}).status_code == 200
            )
    finally:
        eng.shutdown()


def test_shared_cache_shares_across_keys() -> None:
    eng, app = serve_engine(shared_cache=True)
    try:
        with serve_in_thread(app) as url:
            system = system_prompt()
            assert cached(chat(oai(url, "sk-alice"), system)) == 0
            assert cached(chat(oai(url, "sk-bob"), system)) > 0  # another key hits alice's prefix
            assert cached(chat(oai(url, "x"), system, extra_headers=NO_KEY)) > 0
    finally:
        eng.shutdown()


def test_shared_cache_with_mapped_keys_still_checks_keys() -> None:
    eng, app = serve_engine(api_keys=KEYS, shared_cache=True)
    try:
        with serve_in_thread(app) as url:
            system = system_prompt()
            chat(oai(url, "key-a"), system)
            assert cached(chat(oai(url, "key-b"), system)) > 0
            with pytest.raises(openai.AuthenticationError):
                chat(oai(url, "not-a-key"), system)
    finally:
        eng.shutdown()


def test_per_key_namespaces_depend_on_the_server_secret() -> None:
    from prefixlint.engine.server.tenancy import Tenancy

    a, b = Tenancy(secret=b"one"), Tenancy(secret=b"two")
    assert a.key_namespace("sk-1") == Tenancy(secret=b"one").key_namespace("sk-1")
    assert a.key_namespace("sk-1") != b.key_namespace("sk-1") != b.key_namespace("sk-2")
    assert "sk-1" not in a.key_namespace("sk-1")
    assert (a.mode, Tenancy(KEYS).mode, Tenancy(shared_cache=True).mode) == (
        "per-key",
        "per-tenant",
        "shared",
    )
