"""Linter speed: prefixlint against a bare ``libcst.parse_module`` over the same files.

Measures, in one run:

- the CPython standard library of the running interpreter (``site-packages`` excluded);
- a synthetic prompt-heavy tree that this script generates (``--files`` modules, default 300, plus
  a shared prompts module and a few Jinja templates);
- a synthetic mixed project of ``--warm-files`` modules (default 2,000; one in ten builds prompts)
  for the warm-run goal;

and for each tree: the floor (bare ``libcst.parse_module`` of every ``.py`` file, one process),
measured in this process and as a fresh process that imports libcst first (the cold runs below are
fresh processes, so that floor carries the same fixed costs; both ratios are printed), prefixlint
cold (empty cache) with one worker and with two, and prefixlint warm (cache filled, nothing
changed), both in-process and as a fresh ``python -m prefixlint check`` subprocess.

Goals (from issue #2): stdlib cold <= 0.3x bare parse; prompt-heavy cold <= 1.5x bare parse on one
worker and faster with two; warm run over 2,000 files under 0.5 s.

``--json-files N`` (default 2,000) adds a JSON comparison (issue #15): the mixed tree of
``--json-base`` modules alone (the baseline), the same tree with N unrelated JSON files added (package
manifests, configs, fixtures, data files up to a few hundred KB, a JSON Lines log of responses), and
that tree with five request payloads of one template on top. Each unrelated file costs one read of at
most 8 KB (its first keys show no request shape). The rows give cold and warm times as ratios to the
baseline (the "x bare parse" columns hold that ratio there) and the cost per JSON file.

Usage::

    python bench/lint_speed.py                 # full run, prints a Markdown table
    python bench/lint_speed.py --stdlib-every 4 --files 100   # quicker, on a sample
    python bench/lint_speed.py --record        # also append the table to bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SECTION = "## Linter speed"


# --- trees ----------------------------------------------------------------------------------------


def stdlib_files(every: int = 1) -> tuple[Path, list[Path]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts and p.is_file())
    return root, files[::every]


_MODULE = '''"""Synthetic prompt-building module {i}."""

import json
import uuid
from datetime import datetime

from openai import OpenAI
from anthropic import Anthropic

from shared_prompts import BASE_RULES, STYLE_GUIDE

client = OpenAI()
claude = Anthropic()

TOOLS_{i} = [
    {{"type": "function", "function": {{"name": "lookup_{i}", "parameters": {{"type": "object"}}}}}},
]


def build_system_{i}(user_name: str, docs: list[str]) -> str:
    header = {header}
    return header + BASE_RULES + STYLE_GUIDE + "\\n".join(docs)


def answer_{i}(user_name: str, question: str, history: list[dict], docs: list[str], meta: dict) -> str:
    system = build_system_{i}(user_name, docs)
    payload = json.dumps(meta{sort})
    response = client.chat.completions.create(
        model="gpt-4.1",
        messages=[
            {{"role": "system", "content": system}},
            *history,
            {{"role": "user", "content": payload + question}},
        ],
        tools=TOOLS_{i},
    )
    return response.choices[0].message.content


def summarize_{i}(text: str, request_id: str) -> str:
    result = claude.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=512,
        system=[
            {{"type": "text", "text": STYLE_GUIDE, "cache_control": {{"type": "ephemeral"}}}},
            {{"type": "text", "text": f"Request {{request_id}} at {{datetime.now().isoformat()}}"}},
        ],
        messages=[{{"role": "user", "content": text}}],
    )
    return result.content[0].text


def helper_{i}(values: list[int]) -> int:
    total = 0
    for v in values:
        if v % 2:
            total += v * {i}
        else:
            total -= v
    return total + len(str(uuid.uuid4()))
'''

_HEADERS = (
    'f"Today is {datetime.now():%Y-%m-%d}. You help {user_name}.\\n"',
    '"You are a careful assistant.\\n"',
    'f"User: {user_name}\\n"',
    '"Answer briefly.\\n"',
)

_PLAIN = '''"""Ordinary module {i}: plain helpers."""

from dataclasses import dataclass


@dataclass
class Record{i}:
    key: str
    value: int

    def scaled(self, factor: int) -> int:
        return self.value * factor + {i}


def parse_{i}(line: str) -> Record{i}:
    key, _, value = line.partition("=")
    return Record{i}(key.strip(), int(value or 0))


def total_{i}(lines: list[str]) -> int:
    return sum(parse_{i}(x).scaled(2) for x in lines if x and not x.startswith("#"))
'''

_TEMPLATE = """{# synthetic template #}
You are the assistant for {{ company }}.
{{ rules }}
Today is {{ now }}.
{% for doc in docs %}
- {{ doc }}
{% endfor %}
"""


def make_prompt_tree(root: Path, n: int, seed: int = 7) -> list[Path]:
    """A project of ``n`` prompt-building modules, a shared prompts module and a few templates."""
    rng = random.Random(seed)
    pkg = root / "app"
    pkg.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'synthetic'\n\n[tool.prefixlint]\n")
    (root / "shared_prompts.py").write_text(
        '"""Prompt constants shared by every module."""\n\n'
        f"BASE_RULES = {('Follow the policy carefully. ' * 60)!r}\n"
        f"STYLE_GUIDE = {('Write clearly and cite sources. ' * 60)!r}\n"
    )
    files = [root / "shared_prompts.py"]
    for i in range(n):
        sub = pkg / f"part{i // 100:02d}"
        sub.mkdir(exist_ok=True)
        path = sub / f"mod{i:05d}.py"
        path.write_text(
            _MODULE.format(i=i, header=rng.choice(_HEADERS), sort=rng.choice(("", ", sort_keys=True")))
        )
        files.append(path)
    tdir = root / "templates"
    tdir.mkdir()
    for i in range(max(1, n // 100)):
        (tdir / f"system{i}.j2").write_text(_TEMPLATE)
    return files


def make_mixed_tree(root: Path, total: int, prompt_files: int) -> list[Path]:
    """A project of ``total`` modules of which ``prompt_files`` build prompts (the rest are ordinary)."""
    files = make_prompt_tree(root, prompt_files)
    lib = root / "lib"
    for i in range(total - len(files)):
        sub = lib / f"pkg{i // 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / f"util{i:05d}.py"
        path.write_text(_PLAIN.format(i=i))
        files.append(path)
    return files


_PAYLOAD = {
    "model": "gpt-4.1",
    "messages": [
        {"role": "system", "content": "Current time: {now}.\n" + "Follow the policy carefully. " * 80},
        {"role": "user", "content": "question {i}"},
    ],
}


def add_unrelated_json(root: Path, n: int, seed: int = 11) -> list[Path]:
    """Add ``n`` JSON files that are no requests (manifests, configs, data, fixtures) and a JSON Lines log."""
    rng = random.Random(seed)
    out: list[Path] = []
    for i in range(n):
        sub = root / "data" / f"set{i // 200:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        kind = i % 5
        if kind == 0:
            doc: object = {
                "name": f"pkg-{i}",
                "version": "1.0.0",
                "dependencies": {f"d{k}": "^2" for k in range(30)},
            }
        elif kind == 1:
            doc = {"compilerOptions": {"strict": True, "target": "es2022"}, "include": ["src/**/*"]}
        elif kind == 2:
            doc = [
                {"id": k, "value": rng.random(), "label": f"row {k}"}
                for k in range(rng.choice((10, 200, 4000)))
            ]
        elif kind == 3:
            doc = {"fixtures": [{"input": f"case {k}", "expected": k * 2} for k in range(50)], "version": 3}
        else:  # a nested "messages" key: the sniff has to look at the keys to say no
            doc = {"data": {"items": [{"messages": k} for k in range(100)]}, "meta": {"count": 100}}
        path = sub / f"file{i:05d}.json"
        path.write_text(json.dumps(doc))
        out.append(path)
    log = root / "data" / "responses.jsonl"
    log.write_text(
        "".join(json.dumps({"id": f"r{k}", "choices": [], "usage": {"n": k}}) + "\n" for k in range(500))
    )
    out.append(log)
    return out


def add_payloads(root: Path, n: int = 5) -> list[Path]:
    """Add ``n`` request payloads of one template (a timestamp varies ahead of the rules)."""
    reqdir = root / "requests"
    reqdir.mkdir(exist_ok=True)
    out = []
    for i in range(n):
        body = json.loads(json.dumps(_PAYLOAD))
        system = body["messages"][0]["content"]
        body["messages"][0]["content"] = system.replace("{now}", f"2026-11-29T10:{i:02d}:00Z")
        body["messages"][1]["content"] = f"question {i}"
        path = reqdir / f"request{i}.json"
        path.write_text(json.dumps(body, indent=2))
        out.append(path)
    return out


def discovery_time(root: Path, repeat: int = 5) -> float:
    """Best time of ``discover`` over ``root`` in this process (the walk with every JSON file sniffed)."""
    from prefixlint.lint.config import SettingsResolver
    from prefixlint.lint.discover import discover

    return min(timed(lambda: discover([root], SettingsResolver())) for _ in range(repeat))


def measure_json(scratch: Path, base_files: int, json_files: int) -> list[dict]:
    """The mixed tree alone, with unrelated JSON files added, and with a few payloads on top."""
    plain = scratch / "json-base"
    files = make_mixed_tree(plain, base_files, max(1, base_files // 10))
    with_json = scratch / "json-unrelated"
    shutil.copytree(plain, with_json)
    unrelated = add_unrelated_json(with_json, json_files)
    with_payloads = scratch / "json-payloads"
    shutil.copytree(with_json, with_payloads)
    payloads = add_payloads(with_payloads)
    size = sum(p.stat().st_size for p in unrelated)
    trees = (("base", plain), ("unrelated", with_json), ("payloads", with_payloads))
    colds: dict[str, list[float]] = {name: [] for name, _ in trees}
    warms: dict[str, list[float]] = {name: [] for name, _ in trees}
    found: dict[str, int] = {}
    # Interleaved and best of 3, so that the three trees share the machine's load alike.
    for _ in range(3):
        for name, root in trees:
            cache = scratch / f"cache-json-{name}"
            shutil.rmtree(cache, ignore_errors=True)
            t, found[name] = lint_subprocess(root, cache, 2)
            colds[name].append(t)
    for _ in range(3):
        for name, root in trees:
            warms[name].append(lint_subprocess(root, scratch / f"cache-json-{name}", 2)[0])
    timings = {name: (min(colds[name]), min(warms[name]), found[name]) for name, _ in trees}
    walk = {name: discovery_time(root) for name, root in trees}
    base_cold, base_warm, base_find = timings["base"]
    rows = [
        {
            "tree": f"mixed {base_files:,} (10% prompts)",
            "run": f"prefixlint {run}, fresh process",
            "files": len(files),
            "s": t,
            "ratio": 1.0,
            "vs_process": 1.0,
            "findings": base_find,
            "note": "baseline of the JSON rows",
        }
        for run, t in (("cold, `-j 2` (best of 3)", base_cold), ("warm (best of 3)", base_warm))
    ]

    labels = {
        "unrelated": f"+ {json_files:,} unrelated JSON ({size / 1e6:.1f} MB)",
        "payloads": f"+ {json_files:,} unrelated JSON + {len(payloads)} payloads of one template",
    }
    for name, label in labels.items():
        cold, warm, nfind = timings[name]
        count = len(files) + len(unrelated) + (len(payloads) if name == "payloads" else 0)
        runs = (
            ("cold, `-j 2` (best of 3)", cold, base_cold, base_cold),
            ("warm (best of 3)", warm, base_warm, base_warm),
            # the walk with every JSON file sniffed, as a share of the baseline's warm run
            ("discovery only, in-process (best of 5)", walk[name], walk["base"], base_warm),
        )
        for run, t, b, scale in runs:
            note = f"{(t - b) / len(unrelated) * 1e3:+.3f} ms per JSON file vs the baseline"
            t_ratio = (t - b) / scale + 1 if run.startswith("discovery") else t / b
            rows.append(
                {
                    "tree": f"mixed {base_files:,} {label}",
                    "run": run if run.startswith("discovery") else f"prefixlint {run}, fresh process",
                    "files": count,
                    "s": t,
                    "ratio": t_ratio,
                    "vs_process": t_ratio,
                    "findings": nfind,
                    "note": note,
                }
            )
    return rows


# --- measurements ---------------------------------------------------------------------------------


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bare_parse(files: list[Path]) -> float:
    import libcst

    def run() -> None:
        for p in files:
            try:
                libcst.parse_module(p.read_bytes())
            except Exception:
                continue

    return timed(run)


_PARSE_SCRIPT = """
import sys
import libcst
for name in sys.stdin.read().splitlines():
    try:
        libcst.parse_module(open(name, "rb").read())
    except Exception:
        continue
"""


def bare_parse_process(files: list[Path]) -> float:
    """The floor as a fresh process: interpreter start, ``import libcst`` and the same parses.

    prefixlint's cold runs are fresh processes too; this floor carries the same fixed costs
    (libcst alone takes about 0.35 s to import).
    """
    names = "\n".join(str(p) for p in files).encode()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-P", "-c", _PARSE_SCRIPT], input=names, check=True)
    return time.perf_counter() - start


def lint_in_process(
    root: Path, jobs: int, cache_dir: Path, use_cache: bool = True
) -> tuple[float, int, object]:
    import prefixlint.lint.checker as checker
    from prefixlint.lint.config import SettingsResolver
    from prefixlint.lint.runner import RunOptions, lint_paths

    checker._PROJECTS.clear()  # a cold run builds its project index again
    options = RunOptions(jobs=jobs, use_cache=use_cache, cache_dir=cache_dir)
    start = time.perf_counter()
    run = lint_paths([root], SettingsResolver(), options)
    elapsed = time.perf_counter() - start
    return elapsed, len(run.findings), run.stats


def lint_subprocess(root: Path, cache_dir: Path, jobs: int | None = None) -> tuple[float, int]:
    """Wall time of a fresh ``python -m prefixlint check`` and the number of findings it reported."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # -P: the tree being linted is the working directory, and ``python -m`` would put it first on
    # sys.path; for the stdlib copy that shadows the real standard library (every import compiled
    # from source, about 0.5 s), which the ``prefixlint`` console script never does.
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []
    cmd = [
        sys.executable,
        *safe_path,
        "-m",
        "prefixlint",
        "check",
        "--exit-zero",
        "--statistics",
        "--output-format",
        "json",
    ]
    cmd += ["--cache-dir", str(cache_dir), str(root)]
    if jobs:
        cmd += ["-j", str(jobs)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=root)
    elapsed = time.perf_counter() - start
    return elapsed, sum(row["count"] for row in json.loads(proc.stdout or b"[]"))


def prefilter_passes(files: list[Path]) -> int:
    from prefixlint.lint.prefilter import may_build_prompts
    from prefixlint.model.settings import Settings

    settings = Settings()
    return sum(may_build_prompts(p.read_bytes(), settings) for p in files)


def measure(name: str, root: Path, files: list[Path], scratch: Path, workers: tuple[int, ...]) -> list[dict]:
    """Floor, cold runs (fresh process, empty cache) per worker count, warm in-process and warm CLI."""
    rows = []
    floor = bare_parse(files)
    process_floor = bare_parse_process(files)
    passes = prefilter_passes(files)
    rows.append(
        {
            "tree": name,
            "run": "bare `libcst.parse_module`, 1 process",
            "files": len(files),
            "s": floor,
            "vs_process": floor / process_floor,
            "note": f"{passes:,} files pass the pre-filter",
        }
    )
    rows.append(
        {
            "tree": name,
            "run": "bare `libcst.parse_module`, fresh process (`import libcst` included)",
            "files": len(files),
            "s": process_floor,
            "ratio": process_floor / floor,
            "vs_process": 1.0,
        }
    )
    for jobs in workers:
        cache = scratch / f"cache-{name.split()[0]}-{jobs}"
        shutil.rmtree(cache, ignore_errors=True)
        cold, nfind = lint_subprocess(root, cache, jobs)
        rows.append(
            {
                "tree": name,
                "run": f"prefixlint cold, `-j {jobs}` (fresh process, empty cache)",
                "files": len(files),
                "s": cold,
                "ratio": cold / floor,
                "vs_process": cold / process_floor,
                "findings": nfind,
            }
        )
    cache = scratch / f"cache-{name.split()[0]}-{workers[-1]}"
    warm, nfind, stats = lint_in_process(root, workers[-1], cache)
    rows.append(
        {
            "tree": name,
            "run": "prefixlint warm, in-process (discovery + cache + suppressions)",
            "files": stats.files,
            "s": warm,
            "ratio": warm / floor,
            "vs_process": warm / process_floor,
            "findings": nfind,
            "note": f"{stats.cached:,} cached, {stats.analysed} analysed",
        }
    )
    warm_cli = min(lint_subprocess(root, cache, workers[-1])[0] for _ in range(3))
    rows.append(
        {
            "tree": name,
            "run": "prefixlint warm, fresh `python -m prefixlint check` (best of 3)",
            "files": stats.files,
            "s": warm_cli,
            "ratio": warm_cli / floor,
            "vs_process": warm_cli / process_floor,
            "findings": nfind,
        }
    )
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| Tree | Run | Files | Time (s) | x bare parse | x bare parse, fresh process | Findings | Note |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else "1.00"
        vs_process = f"{r['vs_process']:.2f}"
        out.append(
            f"| {r['tree']} | {r['run']} | {r['files']:,} | {r['s']:.2f} | {ratio} | {vs_process} | "
            f"{r.get('findings', '')} | {r.get('note', '')} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=300, help="prompt-heavy modules (default 300)")
    parser.add_argument(
        "--warm-files", type=int, default=2000, help="modules of the mixed tree (default 2000)"
    )
    parser.add_argument(
        "--stdlib-every", type=int, default=1, help="take every Nth stdlib file (default all)"
    )
    parser.add_argument("--skip-stdlib", action="store_true")
    parser.add_argument("--json-files", type=int, default=2000, help="unrelated JSON files (0: skip)")
    parser.add_argument("--json-base", type=int, default=500, help="modules of the JSON comparison tree")
    parser.add_argument("--json-only", action="store_true", help="run only the JSON comparison")
    parser.add_argument("--record", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()

    import prefixlint

    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="prefixlint-bench-") as tmp:
        scratch = Path(tmp)
        if not args.skip_stdlib and not args.json_only:
            root, files = stdlib_files(args.stdlib_every)
            # Lint a copy: exactly the sampled files, outside any git checkout whose .gitignore
            # would hide them (pyenv's own repository ignores its versions/ folder).
            copy = scratch / "stdlib"
            for f in files:
                dest = copy / f.relative_to(root)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
            root, files = copy, [copy / f.relative_to(root) for f in files]
            rows += measure("stdlib", root, files, scratch, (1, 2))
        if not args.json_only:
            tree = scratch / "prompt-heavy"
            files = make_prompt_tree(tree, args.files)
            rows += measure("prompt-heavy", tree, files, scratch, (1, 2))
            mixed = scratch / "mixed"
            files = make_mixed_tree(mixed, args.warm_files, max(1, args.warm_files // 10))
            rows += measure(f"mixed {args.warm_files:,} (10% prompts)", mixed, files, scratch, (2,))
        if args.json_files:
            rows += measure_json(scratch, args.json_base, args.json_files)
    command = "python bench/lint_speed.py" + (
        f" --stdlib-every {args.stdlib_every}" if args.stdlib_every > 1 else ""
    )
    command += f" --files {args.files}" if args.files != 300 else ""
    command += f" --warm-files {args.warm_files}" if args.warm_files != 2000 else ""
    command += f" --json-files {args.json_files}" if args.json_files != 2000 else ""
    command += f" --json-base {args.json_base}" if args.json_base != 500 else ""
    command += " --json-only" if args.json_only else ""
    entry = (
        f"`{command}`, prefixlint {prefixlint.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs.\n\n" + table(rows)
    )
    print(entry)
    if args.record:
        sys.path.insert(0, str(REPO / "bench"))
        from results_md import machine, record, stamp

        record(SECTION.removeprefix("## "), f"### {stamp()} - {machine()}\n\n{entry}")


if __name__ == "__main__":
    main()
