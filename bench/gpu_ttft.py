"""GPU TTFT of the engine as it is served, against a Hugging Face SDPA forward of the same shape.

Prepared for one H200: the ``1b`` preset (Llama-3.2-1B shapes, random weights, bf16) at 8k and 32k
tokens. For each length it times

* the floor: ``transformers`` ``LlamaForCausalLM`` with ``attn_implementation="sdpa"``, built from a
  config of the same shape with random weights (nothing is downloaded), one dense forward of the
  prompt without a KV cache plus the LM head on the last position; when ``transformers`` is not
  importable, the engine's own ``forward_dense`` is the floor and the table says so;
* the engine's own dense forward (``forward_dense``) of the same shape, in this process;
* served miss TTFT (a fresh prompt) and served hit TTFT (cached prefix + a fresh ``--suffix``-token
  tail): ``prefixlint engine serve --preset 1b --device cuda`` in a subprocess with its default
  prefill chunks (``--max-num-batched-tokens 2048``), timed over HTTP to the first streamed chunk
  (``bench/served_engine.py``), median of ``--reps``.

It installs nothing, prints a markdown table, and writes ``gpu_ttft.json`` and ``gpu_ttft.md`` to
``$OUT`` (or ``bench/out``). A time budget (``--budget-s``, default 420) skips what is left rather
than run past 8 minutes.

    python bench/gpu_ttft.py                      # on the GPU machine
    python bench/gpu_ttft.py --smoke              # CPU, tiny preset, short prompts (tests)
    python bench/gpu_ttft.py --record out/gpu_ttft.json   # append a finished run to RESULTS.md
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

SECTION = "Engine TTFT (GPU)"


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def hf_floor(mc: Any, device: Any, dtype: Any, max_len: int) -> tuple[Any, str]:
    """A transformers Llama of ``mc``'s shape with random weights, or None and the reason."""
    try:
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM
    except Exception as exc:  # absent or broken: fall back, and say so
        return None, f"transformers not importable ({type(exc).__name__}); floor = engine forward_dense"
    import torch

    cfg = LlamaConfig(
        vocab_size=mc.vocab_size,
        hidden_size=mc.hidden_size,
        intermediate_size=mc.intermediate_size,
        num_hidden_layers=mc.num_layers,
        num_attention_heads=mc.num_heads,
        num_key_value_heads=mc.num_kv_heads,
        head_dim=mc.head_dim,
        rope_theta=mc.rope_theta,
        rms_norm_eps=mc.rms_norm_eps,
        tie_word_embeddings=mc.tie_word_embeddings,
        max_position_embeddings=max(max_len, 8192),
        attention_bias=mc.qkv_bias,
        attn_implementation="sdpa",
    )
    with torch.device(device):
        model = LlamaForCausalLM(cfg)
    model = model.to(dtype).eval()
    impl = getattr(model.config, "_attn_implementation", "?")
    return model, f"transformers {transformers.__version__} LlamaForCausalLM, attn_implementation={impl}"


def time_floor(model: Any, kind: str, n: int, ids: Any, device: Any, reps: int) -> list[float]:
    """Seconds of one dense forward of ``n`` tokens, ``reps`` times after one warm-up."""
    import torch

    out = []
    for i in range(reps + 1):
        x = torch.tensor(ids(n), device=device)
        _sync(device)
        t0 = time.perf_counter()
        with torch.inference_mode():
            if kind == "hf":
                hidden = model.model(input_ids=x[None], use_cache=False).last_hidden_state
                model.lm_head(hidden[:, -1]).float().argmax(-1).item()
            else:
                model.forward_dense(x).argmax(-1).item()
        _sync(device)
        if i:
            out.append(time.perf_counter() - t0)
    return out


def measure(args: argparse.Namespace, checkpoint: Callable[[dict], None] | None = None) -> dict:
    """Every measurement of one run; returns the JSON-able results."""
    import torch
    from served_engine import ServedEngine

    from prefixlint.engine import PRESETS
    from prefixlint.engine.model_runner import resolve_device, resolve_dtype
    from prefixlint.engine.models.llama import build_model

    t_start = time.perf_counter()
    mc = PRESETS[args.preset]
    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    lengths = [int(x) for x in args.lengths.split(",")]
    max_len = max(lengths) + args.block_size
    rng = random.Random(args.seed)
    hi = min(mc.vocab_size, 100000)  # ordinary ids of the model's vocabulary
    lo = min(1000, hi // 2)

    def ids(n: int) -> list[int]:
        return [rng.randrange(lo, hi) for _ in range(n)]

    def left() -> float:
        return args.budget_s - (time.perf_counter() - t_start)

    res: dict = {
        "preset": mc.name,
        "params": mc.num_params(),
        "device": str(device),
        "dtype": str(dtype),
        "suffix_tokens": args.suffix,
        "reps": args.reps,
        "lengths": {},
        "skipped": [],
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "torch": torch.__version__,
    }
    if device.type == "cpu":
        torch.set_num_threads(args.threads or os.cpu_count() or 1)

    # 1. The floor first, then free it, so the engine gets the memory it sizes its pool from.
    hf, note = (None, "floor = engine forward_dense (--floor engine)")
    if args.floor != "engine":
        try:
            hf, note = hf_floor(mc, device, dtype, max_len)
        except Exception as exc:  # e.g. an older transformers without head_dim: say so, go on
            hf, note = None, f"HF model failed ({type(exc).__name__}: {exc}"[:300] + "); floor = engine dense"
    res["floor"] = note
    res["floor_kind"] = "hf-sdpa" if hf is not None else "engine-forward_dense"
    floor: dict[int, float] = {}
    if hf is not None:
        for n in lengths:
            if left() < 60:
                res["skipped"].append(f"floor {n}")
                continue
            try:
                floor[n] = statistics.median(time_floor(hf, "hf", n, ids, device, args.reps))
            except Exception as exc:  # OOM at 32k, say: the engine's dense forward stands in
                res["skipped"].append(f"HF floor {n}: {type(exc).__name__}: {exc}"[:300])
        del hf
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()

    # 2. The engine as served: a pool for a few contexts of the longest length, default chunks.
    blocks_per_ctx = -(-max_len // args.block_size)
    serve_args = [
        "--dtype", args.dtype, "--block-size", str(args.block_size), "--max-model-len", str(max_len),
        "--num-blocks", str(args.contexts_in_pool * blocks_per_ctx),
    ]  # fmt: skip
    if args.max_batched_tokens:
        serve_args += ["--max-num-batched-tokens", str(args.max_batched_tokens)]
    threads = args.threads if device.type == "cpu" else None
    try:
        srv = ServedEngine(
            args.preset, str(device), serve_args, threads, startup_timeout_s=max(60.0, left() - 60)
        )
        srv.__enter__()
    except Exception as exc:  # report what broke, keep the floor numbers
        res["skipped"].append(f"engine start: {type(exc).__name__}: {exc}"[:1500])
        res["wall_s"] = time.perf_counter() - t_start
        return res
    res["served"] = srv.summary
    res["command"] = " ".join(srv.command()[3:]).replace(f"--port {srv.port} ", "")
    dense_model = build_model(mc, device, dtype, seed=0)
    try:
        srv.first_token(ids(64))
        for n in lengths:
            if left() < 30:
                res["skipped"].append(f"engine {n}: time budget")
                continue
            row: dict[str, Any] = {}
            try:
                engine_dense = statistics.median(time_floor(dense_model, "engine", n, ids, device, args.reps))
                srv.first_token(ids(n))  # warm-up at this shape
                miss = [srv.first_token(ids(n))[0].ttft_s for _ in range(args.reps)]
                shared = ids(n - args.suffix)
                srv.first_token(shared + ids(args.suffix))  # prime
                hits = [srv.first_token(shared + ids(args.suffix))[0] for _ in range(args.reps)]
            except Exception as exc:  # torch.OutOfMemoryError, a failed request: record, go on
                res["skipped"].append(f"engine {n}: {type(exc).__name__}: {exc}"[:500])
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                continue
            row["floor_s"] = floor.get(n, engine_dense)
            row["floor_kind"] = "hf-sdpa" if n in floor else "engine-forward_dense"
            row["engine_dense_s"] = engine_dense
            row["miss_s"] = statistics.median(miss)
            row["hit_s"] = statistics.median(h.ttft_s for h in hits)
            row["cached_tokens"] = min(h.cached_tokens for h in hits)
            row["miss_over_floor"] = row["miss_s"] / row["floor_s"]
            row["speedup"] = row["miss_s"] / row["hit_s"]
            row["raw"] = {"miss": miss, "hit": [h.ttft_s for h in hits]}
            res["lengths"][str(n)] = row
            if checkpoint is not None:
                checkpoint(res)
    finally:
        srv.__exit__(None, None, None)
    res["wall_s"] = time.perf_counter() - t_start
    return res


def table(res: dict) -> str:
    """Markdown table of a run."""
    kind = "HF SDPA" if res.get("floor_kind") == "hf-sdpa" else "engine forward_dense"
    lines = [
        f"| prompt | floor ({kind}) | "
        "engine dense | engine miss (served) | miss/floor | "
        f"engine hit (served, +{res['suffix_tokens']} new) | cached | "
        "speedup |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, r in res["lengths"].items():
        ratio = f"{r['miss_over_floor']:.2f}x" if r["miss_over_floor"] else "-"
        floor = f"{r['floor_s'] * 1e3:.1f} ms" if r["floor_s"] else "-"
        if r["floor_kind"] != res.get("floor_kind"):
            floor += " (engine dense)"
        lines.append(
            f"| {int(n):,} | {floor} | {r['engine_dense_s'] * 1e3:.1f} ms | "
            f"{r['miss_s'] * 1e3:.1f} ms | {ratio} | {r['hit_s'] * 1e3:.1f} ms | "
            f"{r['cached_tokens']:,} | {r['speedup']:.1f}x |"
        )
    lines.append("")
    lines.append(f"Floor: {res['floor']}.")
    if res["skipped"]:
        lines.append(f"Skipped: {'; '.join(res['skipped'])}.")
    return "\n".join(lines)


def entry(res: dict) -> str:
    """The RESULTS.md entry of a run."""
    where = res.get("machine") or res.get("gpu") or res["device"]
    return (
        f"### {res.get('date', '?')}: {where}\n\n"
        f"Preset `{res['preset']}` ({res['params'] / 1e9:.2f}B parameters, random weights), "
        f"{res['dtype']}, {res['device']}, torch {res['torch']}, "
        f"served as `prefixlint {res.get('command', '?')}` "
        f"(attention: {res.get('served', {}).get('attention', '?')}), "
        f"median of {res['reps']} requests per cell, "
        f"client-side TTFT over HTTP, `python bench/gpu_ttft.py` ({res['wall_s']:.0f} s).\n\n"
        f"{table(res)}\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="CPU, tiny preset, short prompts")
    ap.add_argument("--preset", default=None, help="default 1b (tiny with --smoke)")
    ap.add_argument("--device", default=None, help="default cuda (cpu with --smoke)")
    ap.add_argument("--dtype", default="auto", help="auto = bf16 on CUDA, fp32 on CPU")
    ap.add_argument("--lengths", default=None, help="default 8192,32768 (256,512 with --smoke)")
    ap.add_argument("--suffix", type=int, default=64)
    ap.add_argument("--reps", type=int, default=None, help="default 3 (2 with --smoke)")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument(
        "--max-batched-tokens",
        type=int,
        default=0,
        help="serve --max-num-batched-tokens (0: its default, 2048)",
    )
    ap.add_argument("--contexts-in-pool", type=int, default=4, help="KV pool size in longest prompts")
    ap.add_argument("--floor", choices=["auto", "engine"], default="auto")
    ap.add_argument("--threads", type=int, default=0, help="CPU torch threads (0 = all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-s", type=float, default=420.0, help="skip what is left after this")
    ap.add_argument("--out-dir", type=Path, default=None, help="default $OUT, else bench/out")
    ap.add_argument(
        "--record",
        type=Path,
        default=None,
        help="append the run in this JSON file to bench/RESULTS.md and exit",
    )
    args = ap.parse_args(argv)

    from results_md import machine, record, stamp

    if args.record is not None:
        res = json.loads(args.record.read_text())
        print(f"recorded in {record(SECTION, entry(res))}")
        return 0
    args.preset = args.preset or ("tiny" if args.smoke else "1b")
    args.device = args.device or ("cpu" if args.smoke else "cuda")
    args.lengths = args.lengths or ("256,512" if args.smoke else "8192,32768")
    args.reps = args.reps or (2 if args.smoke else 3)

    out_dir = args.out_dir or Path(os.environ.get("OUT") or HERE / "out")
    out_dir.mkdir(parents=True, exist_ok=True)

    def save(res: dict) -> None:
        (out_dir / "gpu_ttft.json").write_text(json.dumps(res, indent=2) + "\n")

    res = measure(args, save)
    res["machine"], res["date"], res["smoke"] = machine(), stamp(), args.smoke
    md = table(res)
    print(md)
    save(res)
    (out_dir / "gpu_ttft.md").write_text(entry(res))
    print(f"wrote {out_dir / 'gpu_ttft.json'} and gpu_ttft.md ({res['wall_s']:.0f} s)")
    return 0 if res["lengths"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
