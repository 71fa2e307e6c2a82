"""The real ``openai`` and ``anthropic`` clients over real HTTP against the engine server
(uvicorn on 127.0.0.1, random free port, background thread)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch")
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


def start(**kw: object) -> tuple[LLMEngine, object]:
    cfg = {"preset": "tiny", "device": "cpu", "num_blocks": 256, "block_size": 8, "max_model_len": MAX_LEN}
    eng = LLMEngine(EngineConfig(**{**cfg, **kw}))  # type: ignore[arg-type]
    return eng, create_app(eng, KEYS)


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
    assert httpx.get(f"{url}/health").json() == {"status": "ok"}
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
    with pytest.raises(openai.BadRequestError, match="logprobs"):
        client.completions.create(model="tiny", prompt="x", max_tokens=1, logprobs=2)
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
    url, eng = server
    wait_idle(eng)
    with pytest.raises(openai.BadRequestError, match="max_model_len"):
        oai(url).completions.create(model="tiny", prompt=[7] * (MAX_LEN + 1), max_tokens=1)
    ok = oai(url).completions.create(model="tiny", prompt=[7] * MAX_LEN, max_tokens=5)
    assert ok.usage.completion_tokens == 1 and ok.choices[0].finish_reason == "length"
    with pytest.raises(anthropic.BadRequestError, match="max_model_len"):
        anthropic.Anthropic(base_url=url, api_key="key-a", max_retries=0).messages.create(
            model="tiny", max_tokens=1, messages=[{"role": "user", "content": "word " * (MAX_LEN + 10)}]
        )
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
    body = {
        "model": "tiny",
        "prompt": f"a long story {uuid.uuid4().hex}",
        "max_tokens": MAX_LEN,
        "ignore_eos": True,
        "stream": True,
    }
    with httpx.stream(
        "POST", f"{url}/v1/completions", json=body, headers={"Authorization": "Bearer key-a"}, timeout=30
    ) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: "):
                json.loads(line[6:])
                break
        assert eng.stats()["running"] == 1
    # The connection is closed; the server notices on its next write and aborts the request.
    wait_idle(eng)
    assert eng.counters.finished.get("abort", 0) == aborted + 1
    # The same through the openai client's stream object.
    stream = oai(url).chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "go on forever"}],
        max_tokens=MAX_LEN,
        stream=True,
        extra_body={"ignore_eos": True},
    )
    next(iter(stream))
    stream.close()
    wait_idle(eng)
    assert eng.counters.finished.get("abort", 0) == aborted + 2
