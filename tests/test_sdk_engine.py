"""The SDK wrapper against the reference engine: real ``openai``/``anthropic`` clients, real HTTP.

One engine (tiny preset, CPU, 16-token blocks) serves the module on 127.0.0.1 and a random port. It
honours client salts (``allow_client_salt``), so the tenant salts the wrapper sends in ``extra_body``
are the only thing that separates tenants: no API keys are configured.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)  # tiny matrices: extra threads only contend on a busy CI box
openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx = pytest.importorskip("httpx")

import prefixlint.sdk as sdk  # noqa: E402
from prefixlint.engine import EngineConfig, LLMEngine  # noqa: E402
from prefixlint.engine.server import create_app  # noqa: E402
from prefixlint.live.serving import serve_in_thread  # noqa: E402
from prefixlint.sdk.report import CacheReport, Verdict  # noqa: E402

pytestmark = pytest.mark.engine
SECRET = "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="  # 32 bytes, base64 (a test value)
BLOCK = 16  # the engine's block size and the increment of [prefixlint-engine] in providers.toml


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    eng = LLMEngine(
        EngineConfig(
            preset="tiny",
            device="cpu",
            num_blocks=256,
            block_size=BLOCK,
            max_model_len=2048,
            allow_client_salt=True,
        )
    )
    try:
        with serve_in_thread(create_app(eng)) as base:
            yield base
    finally:
        eng.shutdown()


class Sent:
    """Request bodies as they went over the wire (an httpx request hook)."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []

    def __call__(self, request: httpx.Request) -> None:
        self.bodies.append(json.loads(request.read()))

    def client(self, module: object = httpx) -> httpx.Client:
        return module.Client(event_hooks={"request": [self]}, timeout=60)  # type: ignore[attr-defined]


def wrapped_openai(url: str, reports: list[CacheReport], sent: Sent, **kw: object) -> openai.OpenAI:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, http_client=sent.client())
    return sdk.wrap(
        client,
        provider="prefixlint-engine",
        tenant="acme",
        salt_secret=SECRET,
        on_report=reports.append,
        **kw,
    )


def messages(system: str, user: str = "What is a KV block?") -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def system_prompt() -> str:
    """A fresh system prompt of about 80 tokens per test, so hits come only from the test itself."""
    return f"{uuid.uuid4().hex}: you are a terse assistant for prefix caching questions. " * 4


def test_repeated_prompt_is_a_predicted_hit(url: str) -> None:
    reports: list[CacheReport] = []
    sent = Sent()
    client = wrapped_openai(url, reports, sent)
    msgs = messages(system_prompt())
    for _ in range(2):
        client.chat.completions.create(model="tiny", messages=msgs, max_tokens=2, temperature=0)
    first, second = reports
    assert first.verdict is Verdict.EXPECTED_MISS and first.reported_cached == 0
    assert first.salted and second.salted and first.prefix_hash == second.prefix_hash
    assert second.verdict is Verdict.HIT, second
    assert second.reported_cached and second.reported_cached % BLOCK == 0
    # the engine frames messages differently; the prediction is scaled to its tokens and put on its
    # block grid (whole blocks, the last prompt token recomputed)
    assert second.predicted_cached == second.reported_cached == (second.prompt_tokens - 1) // BLOCK * BLOCK
    assert second.local_prompt_tokens != second.prompt_tokens
    salts = {b["cache_salt"] for b in sent.bodies}
    assert len(salts) == 1 and len(salts.pop()) == 43 and "acme" not in json.dumps(sent.bodies)


def test_tenants_get_different_salts_and_do_not_share_blocks(url: str) -> None:
    reports: list[CacheReport] = []
    sent = Sent()
    client = wrapped_openai(url, reports, sent)
    msgs = messages(system_prompt())
    for tenant in ("alice", "alice", "bob"):
        client.chat.completions.create(
            model="tiny", messages=msgs, max_tokens=1, temperature=0, prefixlint_tenant=tenant
        )
    a1, a2, b1 = reports
    salts = [body["cache_salt"] for body in sent.bodies]
    assert salts[0] == salts[1] != salts[2]
    assert a2.verdict is Verdict.HIT and a2.reported_cached and a2.predicted_cached == a2.reported_cached
    assert b1.reported_cached == 0 and b1.verdict is Verdict.EXPECTED_MISS  # a new prefix for bob
    assert a1.tenant_hash == a2.tenant_hash != b1.tenant_hash


def test_stream_with_include_usage_produces_a_report(url: str) -> None:
    reports: list[CacheReport] = []
    sent = Sent()
    client = wrapped_openai(url, reports, sent, include_usage=True)
    msgs = messages(system_prompt())
    texts = []
    for _ in range(2):
        chunks = list(
            client.chat.completions.create(
                model="tiny", messages=msgs, max_tokens=3, temperature=0, stream=True
            )
        )
        texts.append("".join(c.choices[0].delta.content or "" for c in chunks if c.choices))
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert [b["stream_options"] for b in sent.bodies] == [{"include_usage": True}] * 2
    assert texts[0] == texts[1]
    first, second = reports
    assert first.stream and first.verdict is Verdict.EXPECTED_MISS and first.reported_cached == 0
    assert second.verdict is Verdict.HIT and second.reported_cached
    usage = chunks[-1].usage
    assert second.predicted_cached == second.reported_cached == usage.prompt_tokens_details.cached_tokens
    assert "stream_options.include_usage: set" in second.changes


def test_anthropic_client_gets_cache_reads_through_breakpoints(url: str) -> None:
    reports: list[CacheReport] = []
    sent = Sent()
    httpx2 = pytest.importorskip("httpx2")  # the anthropic SDK's own fork of httpx
    client = sdk.wrap(
        anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0, http_client=sent.client(httpx2)),
        provider="prefixlint-engine",
        tenant="acme",
        salt_secret=SECRET,
        on_report=reports.append,
    )
    system = system_prompt()
    usages = []
    for _ in range(2):
        msg = client.messages.create(
            model="tiny",
            max_tokens=2,
            system=system,
            messages=[{"role": "user", "content": "What is a KV block?"}],
        )
        usages.append(msg.usage)
    # the wrapper placed the breakpoints (the request had none) and salted the request
    assert all(b.get("cache_salt") for b in sent.bodies)
    marked = [
        blk
        for b in sent.bodies
        for blk in (b["system"] if isinstance(b["system"], list) else [])
        if blk.get("cache_control")
    ]
    assert marked and reports[0].breakpoints >= 1
    assert usages[0].cache_read_input_tokens == 0 and usages[0].cache_creation_input_tokens > 0
    assert usages[1].cache_read_input_tokens > 0
    assert usages[1].cache_read_input_tokens % BLOCK == 0
    first, second = reports
    assert first.verdict is Verdict.EXPECTED_MISS and second.verdict is Verdict.HIT, second
    assert second.reported_cached == usages[1].cache_read_input_tokens
    # Anthropic's input_tokens leave out cache reads and writes; the report counts the whole prompt
    assert second.prompt_tokens == usages[1].input_tokens + usages[1].cache_read_input_tokens
    assert first.prompt_tokens == usages[0].input_tokens + usages[0].cache_creation_input_tokens
