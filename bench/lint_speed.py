"""Linter speed: whole repositories against pcdlint, a one-file check, and the standard library.

Measures, in one run (each part can be chosen with ``--only``):

- ``devset``: the whole-repository runs of the real-code dev set (``shared/eval/real-devset``: every
  labelled repository at its commit, text files only, as its scorer lays them out) with
  ``prefixlint check --output-format json .`` (empty cache) and with pcdlint (``pcdlint --format
  json .``, an ``ast``-based peer linter; ``pip install pcdlint``), the two tools taking turns on
  each tree. Goal (issue #10): prefixlint's total time at or below pcdlint's.
- ``one-file``: a one-file check as pre-commit runs it (``prefixlint check --force-exclude FILE``
  in a fresh process, empty result cache) on three files of the dev set: one with findings, one that
  builds prompts without findings, one without prompt words; against the interpreter's own start
  and pcdlint on the same file, and as a first run (the user cache empty too). Goal (issue #10): at
  most 0.5 s.
- ``stdlib``: the CPython standard library of the running interpreter (``site-packages`` excluded);
- ``synthetic``: a prompt-heavy tree that this script generates (``--files`` modules, default 300,
  plus a shared prompts module and a few Jinja templates), and a mixed project of ``--warm-files``
  modules (default 2,000; one in ten builds prompts) for the warm-run goal;
- ``json``: ``--json-files N`` (default 2,000) adds a JSON comparison (issue #15): the mixed tree of
  ``--json-base`` modules alone (the baseline), the same tree with N unrelated JSON files added (package
  manifests, configs, fixtures, data files up to a few hundred KB, a JSON Lines log of responses), and
  that tree with five request payloads of one template on top. Each unrelated file costs one read of at
  most 8 KB (its first keys show no request shape). The rows give cold and warm times as ratios to the
  baseline (the "x bare parse" columns hold that ratio there) and the cost per JSON file.

For the stdlib and synthetic trees: the floor (bare ``libcst.parse_module`` of every ``.py`` file,
one process), measured in this process and as a fresh process that imports libcst first, prefixlint
cold (empty cache) with one worker and with two, and prefixlint warm (cache filled, nothing
changed), both in-process and as a fresh ``python -m prefixlint check`` subprocess. Goals (issue #2,
kept by issue #10): stdlib cold <= 0.3x bare parse; warm run over 2,000 files under 0.5 s.

Wall times on a shared machine are noisy: the dev-set and one-file tables also give CPU time (user +
system of the process and its children), and the load average is recorded with each entry.

Usage::

    python bench/lint_speed.py                      # everything, prints Markdown tables
    python bench/lint_speed.py --only devset --only one-file
    python bench/lint_speed.py --stdlib-every 4 --files 100   # quicker, on a sample
    python bench/lint_speed.py --record             # also append the tables to bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.child_cpu import adopt_orphans, reap_orphans  # noqa: E402

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
    from prefixlint.lint.checker import forget_projects
    from prefixlint.lint.config import SettingsResolver
    from prefixlint.lint.runner import RunOptions, lint_paths

    forget_projects()  # a cold run builds its project index again
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


# --- the real-code dev set: whole repositories against pcdlint --------------------------------------

# The file kinds the dev set's scorer writes into each tree.
TEXT_SUFFIXES = (
    ".py", ".j2", ".jinja", ".jinja2", ".prompt", ".prompty", ".txt", ".md",
    ".toml", ".cfg", ".yaml", ".yml", ".json",
)  # fmt: skip


def find_up(relative: str) -> Path | None:
    """The first ``relative`` path found in this repository's folder or one of its parents."""
    for base in (REPO, *REPO.parents):
        if (base / relative).exists():
            return base / relative
    return None


def devset_repos(devset: Path) -> list[tuple[str, str]]:
    """``(owner/name, commit)`` of every labelled repository, in label order, each once."""
    seen: dict[tuple[str, str], None] = {}
    for line in (devset / "labels.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            seen[(row["repo"], row["commit"])] = None
    return list(seen)


def extract_tree(git_dir: Path, commit: str, dest: Path) -> int:
    """Write the text files of ``commit`` under ``dest`` (git plumbing: ls-tree and cat-file)."""
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit], capture_output=True, check=True
    ).stdout
    wanted = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, name = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        text = name.decode("utf-8", "replace")
        wanted_kind = kind == b"blob" and mode != b"120000" and text.lower().endswith(TEXT_SUFFIXES)
        if wanted_kind and "/node_modules/" not in text:
            wanted.append((sha, text))
    proc = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    written = 0
    for sha, name in wanted:
        proc.stdin.write(sha + b"\n")
        proc.stdin.flush()
        head = proc.stdout.readline().split()
        if len(head) < 3 or head[1] == b"missing":
            continue
        data = proc.stdout.read(int(head[2]))
        proc.stdout.read(1)
        target = dest / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += 1
        except OSError:
            continue
    proc.stdin.close()
    proc.wait()
    return written


def devset_trees(devset: Path, mirrors: Path | None, given: Path | None, scratch: Path) -> list[Path]:
    """One tree per labelled repository: ``given/OWNER+NAME`` when it exists, else extracted."""
    trees = []
    for repo, commit in devset_repos(devset):
        name = repo.replace("/", "+")
        if given is not None and (given / name).is_dir():
            trees.append(given / name)
            continue
        git_dir = mirrors / name / "repo" if mirrors is not None else None
        if git_dir is None or not git_dir.is_dir():
            print(f"devset: no snapshot of {repo} (fetch github:{repo}); left out", file=sys.stderr)
            continue
        dest = scratch / "devset" / name
        dest.mkdir(parents=True, exist_ok=True)
        extract_tree(git_dir, commit, dest)
        trees.append(dest)
    return trees


def timed_command(cmd: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, bytes, int]:
    """Wall and CPU seconds (the command and its children), stdout, and exit code of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    reap_orphans()  # workers the command did not wait for: their CPU counts, not their exit's wait
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout, proc.returncode


def pcdlint_command() -> list[str] | None:
    """How to run pcdlint here, or None when it is not installed."""
    try:
        import pcdlint  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-P", "-m", "pcdlint"]


def prefixlint_command() -> list[str]:
    # -P: the tree is the working directory, and ``python -m`` would put it first on sys.path (the
    # console script, which the scorer runs, never does)
    return [sys.executable, "-P", "-m", "prefixlint"]


def precompile() -> None:
    """Byte-compile this checkout, as installing the package does.

    pcdlint runs from the bytecode its installation wrote. Without this step every prefixlint run
    would compile its own modules from source (with ``PYTHONDONTWRITEBYTECODE`` set nothing is ever
    cached), a cost no installed copy pays.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [sys.executable, "-m", "compileall", "-q", str(REPO / "prefixlint")]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)


def tool_env(scratch: Path) -> dict[str, str]:
    """The environment of a cold run: this checkout first on the path, a fresh empty cache."""
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=scratch))
    return {**os.environ, "PYTHONPATH": str(REPO), "PREFIXLINT_CACHE_DIR": str(cache)}


def count_findings(stdout: bytes) -> int | str:
    try:
        data = json.loads(stdout or b"[]")
    except json.JSONDecodeError:
        return "no JSON"
    if isinstance(data, list):
        return len(data)
    if isinstance(data, dict):
        for key in ("diagnostics", "findings", "results"):
            if isinstance(data.get(key), list):
                return len(data[key])
    return "?"


def measure_devset(trees: list[Path], scratch: Path, repeat: int) -> tuple[list[dict], dict[str, bytes]]:
    """Both tools on every tree, taking turns; the best of ``repeat`` runs of each."""
    pcd = pcdlint_command()
    rows = []
    outputs: dict[str, bytes] = {}
    for k, tree in enumerate(trees):
        py_files = sum(1 for _ in tree.rglob("*.py"))
        best: dict[str, tuple[float, float, int | str, int]] = {}
        runs = [("prefixlint", [*prefixlint_command(), "check", "--output-format", "json", "."])]
        if pcd is not None:
            runs.append(("pcdlint", [*pcd, "--format", "json", "."]))
        for r in range(repeat):
            order = runs if (k + r) % 2 == 0 else runs[::-1]
            for name, cmd in order:
                wall, cpu, out, code = timed_command(cmd, tree, tool_env(scratch))
                if name == "prefixlint":
                    outputs[str(tree)] = out
                prev = best.get(name)
                if prev is None or wall < prev[0]:
                    best[name] = (wall, cpu, count_findings(out), code)
        row = {"tree": tree.name, "py": py_files}
        for name, (wall, cpu, found, code) in best.items():
            row[name] = {"wall": wall, "cpu": cpu, "findings": found, "exit": code}
        rows.append(row)
        print(f"devset {k + 1}/{len(trees)} {tree.name}: " + ", ".join(
            f"{n} {v['wall']:.2f} s" for n, v in row.items() if isinstance(v, dict)
        ), file=sys.stderr, flush=True)  # fmt: skip
    return rows, outputs


def devset_table(rows: list[dict]) -> str:
    has_pcd = any("pcdlint" in r for r in rows)
    out = [
        "| Repository | .py files | prefixlint wall (s) | prefixlint CPU (s) | findings | exit |"
        + (" pcdlint wall (s) | pcdlint CPU (s) | findings | wall ratio |" if has_pcd else ""),
        "| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: | ---: | ---: |" if has_pcd else ""),
    ]
    total = {"prefixlint": [0.0, 0.0], "pcdlint": [0.0, 0.0]}
    for r in rows:
        p = r["prefixlint"]
        line = f"| {r['tree']} | {r['py']:,} | {p['wall']:.2f} | {p['cpu']:.2f} | {p['findings']} "
        line += f"| {p['exit']} |"
        total["prefixlint"][0] += p["wall"]
        total["prefixlint"][1] += p["cpu"]
        if has_pcd and "pcdlint" in r:
            q = r["pcdlint"]
            total["pcdlint"][0] += q["wall"]
            total["pcdlint"][1] += q["cpu"]
            ratio = p["wall"] / q["wall"] if q["wall"] else float("nan")
            line += f" {q['wall']:.2f} | {q['cpu']:.2f} | {q['findings']} | {ratio:.2f} |"
        out.append(line)
    p, q = total["prefixlint"], total["pcdlint"]
    line = f"| **total** | {sum(r['py'] for r in rows):,} | **{p[0]:.1f}** | **{p[1]:.1f}** | | |"
    if has_pcd:
        line += f" **{q[0]:.1f}** | **{q[1]:.1f}** | | **{p[0] / q[0]:.2f}** |" if q[0] else " | | | |"
    out.append(line)
    return "\n".join(out) + "\n"


# --- a one-file check, as pre-commit runs it ----------------------------------------------------------


def pick_one_files(trees: list[Path], outputs: dict[str, bytes]) -> list[tuple[str, Path, Path]]:
    """(what, tree, file): a file with findings, a prompt file without, a file without prompt words."""
    sys.path.insert(0, str(REPO))
    from prefixlint.lint.prefilter import may_build_prompts
    from prefixlint.model.settings import Settings

    settings = Settings()
    with_findings = prompt_clean = plain = None
    for tree in trees:
        try:
            report = json.loads(outputs.get(str(tree)) or b"[]")
        except json.JSONDecodeError:
            continue
        flagged = {
            (tree / f["filename"]).resolve()
            for f in report
            if isinstance(f, dict) and f.get("code") and str(f.get("filename", "")).endswith(".py")
        }
        for path in sorted(tree.rglob("*.py")):
            size = path.stat().st_size
            if not 2_000 <= size <= 30_000:
                continue  # a typical module, neither a stub nor a generated file
            if with_findings is None and path.resolve() in flagged:
                with_findings = (tree, path)
            elif (
                prompt_clean is None
                and path.resolve() not in flagged
                and may_build_prompts(path.read_bytes(), settings)
            ):
                prompt_clean = (tree, path)
            elif plain is None and not may_build_prompts(path.read_bytes(), settings):
                plain = (tree, path)
        if with_findings and prompt_clean and plain:
            break
    picked = [
        ("with findings", with_findings),
        ("prompts, no findings", prompt_clean),
        ("no prompt words", plain),
    ]
    return [(what, tp[0], tp[1]) for what, tp in picked if tp is not None]


def measure_one_file(picks: list[tuple[str, Path, Path]], scratch: Path, repeat: int) -> list[dict]:
    """Fresh processes, empty result cache: prefixlint as pre-commit runs it, the interpreter, pcdlint.

    ``prefixlint`` runs with the user cache as this machine has it (``~/.cache/prefixlint``: the rule
    codes, the tokenizer's tables and the code libcst's classes compiled, kept by any earlier run, as
    Python keeps ``.pyc`` files); ``first run`` with an empty one, as right after installing. The
    commands take turns, run by run, so that a change in the machine's load falls on all of them.
    """
    pcd = pcdlint_command()
    rows = []
    for what, tree, path in picks:
        rel = str(path.relative_to(tree))
        check = [*prefixlint_command(), "check", "--force-exclude", rel]
        cmds: dict[str, tuple[list[str], Callable[[], dict[str, str]]]] = {
            "prefixlint": (check, lambda: tool_env(scratch)),
            "prefixlint, first run": (check, lambda: first_run_env(scratch)),
            "python -c pass": ([sys.executable, "-P", "-c", "pass"], lambda: tool_env(scratch)),
        }
        if pcd is not None:
            cmds["pcdlint"] = ([*pcd, rel], lambda: tool_env(scratch))
        walls: dict[str, list[float]] = {name: [] for name in cmds}
        cpus: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(repeat):
            for name, (cmd, env) in cmds.items():
                wall, cpu, _out, _code = timed_command(cmd, tree, env())
                walls[name].append(wall)
                cpus[name].append(cpu)
        for name in cmds:
            rows.append(
                {
                    "file": f"{tree.name}/{rel}",
                    "what": what,
                    "run": name,
                    "min": min(walls[name]),
                    "median": statistics.median(walls[name]),
                    "cpu": min(cpus[name]),
                }
            )
    return rows


def first_run_env(scratch: Path) -> dict[str, str]:
    """:func:`tool_env` with an empty user cache too: prefixlint's first run on a machine."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=scratch))
    return {**tool_env(scratch), "PREFIXLINT_CACHE_HOME": str(home)}


def one_file_table(rows: list[dict]) -> str:
    out = [
        "| File | Kind | Command | Wall min (s) | Wall median (s) | CPU min (s) |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        times = f"{r['min']:.2f} | {r['median']:.2f} | {r['cpu']:.2f}"
        out.append(f"| `{r['file']}` | {r['what']} | {r['run']} | {times} |")
    return "\n".join(out) + "\n"


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


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


PARTS = ("devset", "one-file", "stdlib", "synthetic", "json")


def main() -> None:
    adopt_orphans()  # the CPU columns count the workers a check leaves to end on their own
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=PARTS, help="run only these parts (repeatable)")
    parser.add_argument("--files", type=int, default=300, help="prompt-heavy modules (default 300)")
    parser.add_argument(
        "--warm-files", type=int, default=2000, help="modules of the mixed tree (default 2000)"
    )
    parser.add_argument(
        "--stdlib-every", type=int, default=1, help="take every Nth stdlib file (default all)"
    )
    parser.add_argument("--skip-stdlib", action="store_true", help="same as leaving stdlib out of --only")
    parser.add_argument("--json-files", type=int, default=2000, help="unrelated JSON files (0: skip)")
    parser.add_argument("--json-base", type=int, default=500, help="modules of the JSON comparison tree")
    parser.add_argument("--json-only", action="store_true", help="same as --only json")
    parser.add_argument(
        "--devset", type=Path, help="the real-code dev set (default: shared/eval/real-devset)"
    )
    parser.add_argument(
        "--mirrors", type=Path, help="its snapshots, OWNER+NAME/repo (default: $MIRRORS, .mirror)"
    )
    parser.add_argument("--trees", type=Path, help="already extracted trees, OWNER+NAME (used when present)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool and tree (best kept; default 1)")
    parser.add_argument(
        "--one-file-repeat", type=int, default=7, help="runs per one-file command (default 7)"
    )
    parser.add_argument("--record", action="store_true", help="append the tables to bench/RESULTS.md")
    args = parser.parse_args()
    parts = set(args.only or PARTS)
    if args.json_only:
        parts = {"json"}
    if args.skip_stdlib:
        parts.discard("stdlib")
    if not args.json_files:
        parts.discard("json")

    import prefixlint

    precompile()
    load_before = load_average()
    sections: list[str] = []
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="prefixlint-bench-") as tmp:
        scratch = Path(tmp)
        if parts & {"devset", "one-file"}:
            devset = args.devset or find_up("shared/eval/real-devset")
            env_mirrors = os.environ.get("MIRRORS")
            mirrors = args.mirrors or (Path(env_mirrors) if env_mirrors else find_up(".mirror"))
            if devset is None:
                print("devset: shared/eval/real-devset not found; give --devset", file=sys.stderr)
            else:
                trees = devset_trees(devset, mirrors, args.trees, scratch)
                if pcdlint_command() is None:
                    print(
                        "devset: pcdlint is not installed (pip install pcdlint): no baseline", file=sys.stderr
                    )
                dev_rows, outputs = measure_devset(trees, scratch, args.repeat)
                if "devset" in parts:
                    head = (
                        f"Real-code dev set, whole repositories ({len(trees)} trees, best of {args.repeat})"
                    )
                    sections.append(f"{head}:\n\n" + devset_table(dev_rows))
                if "one-file" in parts:
                    picks = pick_one_files(trees, outputs)
                    sections.append(
                        f"One-file check as pre-commit runs it (fresh process, empty cache, "
                        f"{args.one_file_repeat} runs each):\n\n"
                        + one_file_table(measure_one_file(picks, scratch, args.one_file_repeat))
                    )
        if "stdlib" in parts:
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
        if "synthetic" in parts:
            tree = scratch / "prompt-heavy"
            files = make_prompt_tree(tree, args.files)
            rows += measure("prompt-heavy", tree, files, scratch, (1, 2))
            mixed = scratch / "mixed"
            files = make_mixed_tree(mixed, args.warm_files, max(1, args.warm_files // 10))
            rows += measure(f"mixed {args.warm_files:,} (10% prompts)", mixed, files, scratch, (2,))
        if "json" in parts:
            rows += measure_json(scratch, args.json_base, args.json_files)
        if rows:
            sections.append(table(rows))
    command = "python bench/lint_speed.py" + "".join(f" --only {p}" for p in args.only or ())
    command += f" --stdlib-every {args.stdlib_every}" if args.stdlib_every > 1 else ""
    command += f" --files {args.files}" if args.files != 300 else ""
    command += f" --warm-files {args.warm_files}" if args.warm_files != 2000 else ""
    command += f" --json-files {args.json_files}" if args.json_files != 2000 else ""
    command += f" --json-base {args.json_base}" if args.json_base != 500 else ""
    command += " --json-only" if args.json_only else ""
    command += f" --repeat {args.repeat}" if args.repeat != 1 else ""
    entry = (
        f"`{command}`, prefixlint {prefixlint.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load_before} before and {load_average()} after; "
        "prefixlint byte-compiled first, as an installed copy is.\n\n" + "\n".join(sections)
    )
    print(entry)
    if args.record:
        sys.path.insert(0, str(REPO / "bench"))
        from results_md import machine, record, stamp

        record(SECTION.removeprefix("## "), f"### {stamp()} - {machine()}\n\n{entry}")


if __name__ == "__main__":
    main()
