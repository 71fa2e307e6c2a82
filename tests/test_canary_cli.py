"""``prefixlint bench`` CLI: runs, JSON files, plots, --compare, schema, light imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prefixlint.commands.bench import app
from prefixlint.live.fake_server import FakeServerConfig, fake_server
from prefixlint.live.results import SCHEMA_VERSION, BenchRun, SchemaError, json_schema, load_run

pytest.importorskip("uvicorn")

runner = CliRunner()
FAST = ["--prompt-tokens", "256,512", "--new-suffix-tokens", "32", "--samples", "4", "--warmup", "1"]


def _ttft(url: str, *extra: str) -> object:
    return runner.invoke(app, ["ttft", "--base-url", url, "--model", "fake-model", *FAST, *extra])


def test_ttft_writes_json_and_plots_and_compare(tmp_path: Path) -> None:
    a_json, b_json = tmp_path / "a.json", tmp_path / "b.json"
    png, svg = tmp_path / "ttft.png", tmp_path / "ttft.svg"
    with fake_server(FakeServerConfig(base_s=0.002, per_token_s=0.0002)) as (url, _):
        res = _ttft(url, "--out", str(a_json), "--plot", str(png), "--label", "fast")
        assert res.exit_code == 0, res.output
        assert "speedup" in res.output and "agrees" in res.output
    liar = FakeServerConfig(base_s=0.002, per_token_s=0.0002, lie="report-without-speed")
    with fake_server(liar) as (url, _):
        res = _ttft(url, "--out", str(b_json), "--plot", str(svg), "--label", "liar", "--strict")
        assert res.exit_code == 1, res.output
        assert "FINDING" in res.output and "miss-like TTFT" in res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()

    # JSON schema round trip.
    run = load_run(a_json)
    assert run.schema_version == SCHEMA_VERSION and run.kind == "ttft" and run.label == "fast"
    assert [r.prompt_tokens for r in run.lengths] == [256, 512]
    assert BenchRun.model_validate_json(run.to_json()) == run
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(a_json.read_text()), json_schema())

    text = runner.invoke(app, ["ttft", "--compare", str(a_json), str(b_json)])
    assert text.exit_code == 0, text.output
    assert "A = fast" in text.output and "B = liar" in text.output
    rows = [line for line in text.output.splitlines() if line.strip().startswith(("256", "512"))]
    assert len(rows) == 2
    js = runner.invoke(app, ["compare", str(a_json), str(b_json), "--output-format", "json"])
    data = json.loads(js.output)
    assert [r["prompt_tokens"] for r in data["lengths"]] == [256, 512]
    row = data["lengths"][1]
    assert row["a_speedup_p50"] > 2 > row["b_speedup_p50"]
    assert row["speedup_ratio_b_over_a"] == pytest.approx(row["b_speedup_p50"] / row["a_speedup_p50"])


def test_json_output_and_api_key_from_env() -> None:
    cfg = FakeServerConfig(base_s=0.001, per_token_s=0.0, api_key="sk-test")
    with fake_server(cfg) as (url, state):
        denied = runner.invoke(
            app,
            ["ttft", "--base-url", url, "--model", "fake-model", *FAST, "--output-format", "json"],
            env={"OPENAI_API_KEY": "wrong", "PREFIXLINT_API_KEY": None},
        )
        ok = runner.invoke(
            app,
            [
                "ttft",
                "--base-url",
                url,
                "--model",
                "fake-model",
                *FAST,
                "--output-format",
                "json",
                "--endpoint",
                "completions",
                "--extra-body",
                '{"ignore_eos": true}',
            ],
            env={"PREFIXLINT_API_KEY": "sk-test"},
        )
    assert ok.exit_code == 0, ok.output
    run = BenchRun.model_validate_json(ok.output)
    assert run.endpoint == "completions" and run.settings["extra_body_keys"] == ["ignore_eos"]
    assert all(s.error is None for r in run.lengths for s in r.samples)
    assert state.bodies[-1]["ignore_eos"] is True and "prompt" in state.bodies[-1]
    bad = BenchRun.model_validate_json(denied.output)
    assert all("HTTP 401" in (s.error or "") for s in bad.lengths[0].samples)
    assert any("failed" in w for w in bad.warnings)
    assert "sk-test" not in ok.output


def test_retention_cli(tmp_path: Path) -> None:
    cfg = FakeServerConfig(capacity_tokens=1024, advertised_tokens=1 << 20, base_s=0.001, per_token_s=0.0)
    out, plot = tmp_path / "ret.json", tmp_path / "ret.png"
    with fake_server(cfg) as (url, _):
        res = runner.invoke(
            app,
            [
                "retention",
                "--base-url",
                url,
                "--model",
                "fake-model",
                "--contexts",
                "4",
                "--context-tokens",
                "256",
                "--advertised-tokens",
                "2048",
                "--out",
                str(out),
                "--plot",
                str(plot),
                "--strict",
            ],
        )
    assert res.exit_code == 1, res.output
    assert "fewer-than-advertised" in res.output
    run = load_run(out)
    assert run.retention is not None and run.retention.retained_tokens < 2048
    assert plot.stat().st_size > 1000


def test_usage_errors(tmp_path: Path) -> None:
    res = runner.invoke(app, ["ttft", "--model", "m"])
    assert res.exit_code == 2 and "--base-url" in res.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_id": "prefixlint.bench/v1", "schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(SchemaError, match="newer"):
        load_run(bad)
    res = runner.invoke(app, ["compare", str(bad), str(bad)])
    assert res.exit_code == 2
    res = runner.invoke(app, ["ttft", "--base-url", "http://x/v1", "--model", "m", "--shared-prefix", "1.5"])
    assert res.exit_code == 2
    schema = runner.invoke(app, ["schema"])
    assert json.loads(schema.output)["title"] == "BenchRun"


@pytest.mark.parametrize("module", ["bench", "canary", "probe"])
def test_cli_module_imports_only_light_dependencies(module: str) -> None:
    heavy = "('torch', 'matplotlib', 'httpx', 'scipy', 'numpy')"
    code = f"import sys, prefixlint.commands.{module}; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert out.stdout.strip() == "[]"


def test_plot_without_matplotlib_is_a_usage_error_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    with fake_server(FakeServerConfig(base_s=0.001, per_token_s=0.0)) as (url, state):
        res = _ttft(url, "--plot", str(tmp_path / "t.png"))
        ret = runner.invoke(
            app, ["retention", "--base-url", url, "--model", "fake-model", "--plot", str(tmp_path / "r.png")]
        )
        assert state.requests == 0
    for r in (res, ret):
        assert r.exit_code == 2, r.output
        assert "--plot needs matplotlib: pip install 'prefixlint[live]'" in r.output
    assert not (tmp_path / "t.png").exists() and not (tmp_path / "r.png").exists()
