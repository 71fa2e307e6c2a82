"""A model directory's own tokenizer and chat template: the template is rendered in Jinja's
immutable sandbox (as transformers does), so an untrusted model directory cannot run code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")
tokenizers = pytest.importorskip("tokenizers", reason="model directories' tokenizer.json (engine extra)")
openai = pytest.importorskip("openai")
torch.set_num_threads(1)

import jinja2  # noqa: E402

from prefixlint.engine import EngineConfig, EngineConfigError, LLMEngine, ModelConfig  # noqa: E402
from prefixlint.engine.models.llama import build_model  # noqa: E402
from prefixlint.engine.server import create_app  # noqa: E402
from prefixlint.engine.tokenizer import ChatTemplateError, HFTokenizer  # noqa: E402
from prefixlint.live.serving import serve_in_thread  # noqa: E402

pytestmark = pytest.mark.engine
WORDS = [
    "<s>",
    "</s>",
    "[UNK]",
    "<|im_start|>",
    "<|im_end|>",
    "user",
    "assistant",
    "system",
    "hello",
    "world",
]
CHATML = (
    "{{ bos_token }} {% for m in messages %}<|im_start|> {{ m.role }} {{ m.content }} <|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
)


def payload(marker: Path) -> str:
    """The classic server-side template injection: reach ``os`` through a global's ``__globals__``."""
    return "{{ cycler.__init__.__globals__.os.mkdir('" + str(marker) + "') }}"


def model_dir(path: Path, template: str | None) -> Path:
    """A word-level tokenizer.json, its tokenizer_config.json, and a tiny random Llama for it."""
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(path / "tokenizer.json"))
    cfg: dict = {"bos_token": "<s>", "eos_token": {"content": "</s>"}}
    if template is not None:
        cfg["chat_template"] = template
    (path / "tokenizer_config.json").write_text(json.dumps(cfg))
    shape = ModelConfig("m", vocab_size=len(WORDS), hidden_size=32, intermediate_size=48, num_heads=2,
                        num_kv_heads=1, head_dim=16, num_layers=1, tie_word_embeddings=False)  # fmt: skip
    model = build_model(shape, seed=3)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path / "model.safetensors"))
    hf = {"model_type": "llama", "vocab_size": len(WORDS), "hidden_size": 32, "intermediate_size": 48,
          "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
          "eos_token_id": 1, "tie_word_embeddings": False}  # fmt: skip
    (path / "config.json").write_text(json.dumps(hf))
    return path


def test_the_payload_runs_code_in_a_plain_jinja_environment(tmp_path: Path) -> None:
    """Guard: what the sandbox stops is a real attack (the old, unsandboxed rendering ran it)."""
    marker = tmp_path / "pwned-plain"
    jinja2.Environment().from_string(payload(marker)).render(messages=[])
    assert marker.is_dir()


def test_a_malicious_chat_template_fails_cleanly_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    tok = HFTokenizer(model_dir(tmp_path, payload(marker)), (1,))
    with pytest.raises(ChatTemplateError, match="unsafe operation") as err:
        tok.render_chat([{"role": "user", "content": "hello"}])
    assert not err.value.client and not marker.exists()


def test_templates_render_with_transformers_conventions(tmp_path: Path) -> None:
    tok = HFTokenizer(model_dir(tmp_path, CHATML), (1,))
    text = tok.render_chat([{"role": "user", "content": "hello world"}])
    assert text == "<s> <|im_start|> user hello world <|im_end|> <|im_start|> assistant "
    assert tok.encode(text) == [0, 3, 5, 8, 9, 4, 3, 6]


def test_raise_exception_is_the_clients_fault(tmp_path: Path) -> None:
    template = (
        "{% if messages[0].role != 'user' %}{{ raise_exception('first message must be user') }}{% endif %}"
    )
    tok = HFTokenizer(model_dir(tmp_path, template), (1,))
    with pytest.raises(ChatTemplateError, match="first message must be user") as err:
        tok.render_chat([{"role": "system", "content": "x"}])
    assert err.value.client


def test_a_template_that_does_not_parse_is_refused_at_startup(tmp_path: Path) -> None:
    with pytest.raises(EngineConfigError, match="chat template does not parse"):
        HFTokenizer(model_dir(tmp_path, "{% for m in messages %}"), (1,))


def test_over_http_a_malicious_template_is_a_500_and_the_server_keeps_serving(tmp_path: Path) -> None:
    marker = tmp_path / "pwned-http"
    eng = LLMEngine(
        EngineConfig(
            model_dir=str(model_dir(tmp_path, payload(marker))), device="cpu", num_blocks=16, max_model_len=64
        )
    )
    try:
        with serve_in_thread(create_app(eng)) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
            with pytest.raises(openai.InternalServerError, match="unsafe operation"):
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hello"}], max_tokens=1
                )
            ok = client.completions.create(model="m", prompt="hello world", max_tokens=2)
            assert ok.usage.prompt_tokens == 2
    finally:
        eng.shutdown()
    assert not marker.exists()
