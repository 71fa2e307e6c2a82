"""Merged projections: one product for q/k/v and gate/up, with the layers' own parameters."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the engine needs torch (the [engine] extra)")
torch.set_num_threads(1)

from torch import nn  # noqa: E402

from prefixlint.engine import ModelConfig  # noqa: E402
from prefixlint.engine.layers.merged import MergedLinear  # noqa: E402
from prefixlint.engine.models.llama import build_model  # noqa: E402

pytestmark = pytest.mark.engine


@pytest.mark.parametrize("bias", [True, False])
def test_merged_layers_give_each_layers_output(bias: bool) -> None:
    layers = [nn.Linear(8, n, bias=bias) for n in (6, 2, 2)]
    x = torch.randn(5, 8)
    want = [lin(x) for lin in layers]
    merged = MergedLinear(*layers)
    assert merged.merged()
    for got, expected in zip(merged(x), want, strict=True):
        torch.testing.assert_close(got, expected)
    with torch.no_grad():
        layers[1].weight.mul_(3.0)  # in place: the merged product sees it
        if bias:
            layers[2].bias.add_(1.0)
    assert merged.merged()
    for got, lin in zip(merged(x), layers, strict=True):
        torch.testing.assert_close(got, lin(x))


def test_a_layer_given_its_own_weight_runs_alone() -> None:
    layers = [nn.Linear(8, 4), nn.Linear(8, 4)]
    merged = MergedLinear(*layers)
    layers[0].weight = nn.Parameter(torch.randn(4, 8))  # no longer a slice of the merged weight
    assert not merged.merged()
    x = torch.randn(3, 8)
    for got, lin in zip(merged(x), layers, strict=True):
        torch.testing.assert_close(got, lin(x))


def test_a_built_model_is_merged_and_keeps_its_parameter_names() -> None:
    cfg = ModelConfig("x", vocab_size=300, hidden_size=32, intermediate_size=48, num_layers=2,
                      num_heads=4, num_kv_heads=2, head_dim=8, qkv_bias=True)  # fmt: skip
    model = build_model(cfg, seed=3)
    layer = model.model.layers[0]
    assert layer.self_attn.qkv is not None and layer.self_attn.qkv.merged()
    assert layer.mlp.gate_up is not None and layer.mlp.gate_up.merged()
    names = set(model.state_dict())
    assert {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.v_proj.bias"} <= names
    assert "model.layers.0.mlp.up_proj.weight" in names
    assert not any("qkv" in n or "gate_up" in n for n in names)
    ids = torch.arange(10, 30)
    before = model.forward_dense(ids, all_logits=True)
    # Loading by name writes into the merged tensors: a model loaded from this one agrees with it.
    twin = build_model(cfg, seed=4)
    assert not torch.allclose(twin.forward_dense(ids, all_logits=True), before)
    twin.load_state_dict(model.state_dict())
    torch.testing.assert_close(twin.forward_dense(ids, all_logits=True), before)
    # A cast gives every layer a weight of its own: the layers then run one by one, still right.
    wide = model.to(torch.float64)
    assert not wide.model.layers[0].self_attn.qkv.merged()
    torch.testing.assert_close(wide.forward_dense(ids, all_logits=True).float(), before, atol=1e-4, rtol=1e-4)
