"""Without torch, everything but the engine's own tests still runs: the engine's test modules skip
with a reason, no other module is skipped for torch, and ``prefixlint engine serve`` says which
extra to install. (``.ci/run`` also runs the whole suite in a virtual environment without torch.)"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
SKIP_LINE = re.compile(r"^SKIPPED \[\d+\] (tests/[\w/]+\.py):\d+: (.*)$")


def torch_installed() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except ImportError:  # blocked by tests/without_torch.py
        return False


def needs_torch(path: Path) -> bool:
    return 'importorskip("torch"' in path.read_text(encoding="utf-8")


def run_without_torch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.skipif(not torch_installed(), reason="no torch here: this whole run is the torch-free run")
def test_without_torch_only_the_engine_tests_skip() -> None:
    proc = run_without_torch(
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-rs",
        "-p",
        "tests.without_torch",
        "-p",
        "no:cacheprovider",
        "tests",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "error" not in proc.stdout.splitlines()[-1].lower(), proc.stdout[-2000:]
    skipped = {}
    for line in proc.stdout.splitlines():
        m = SKIP_LINE.match(line)
        if m:
            skipped[m.group(1)] = m.group(2)
    engine_modules = {f"tests/{p.name}" for p in TESTS.glob("test_engine_*.py")} - {
        "tests/test_engine_skips.py"
    }
    assert engine_modules <= set(skipped), sorted(engine_modules - set(skipped))
    for module, reason in skipped.items():
        assert "torch" in reason, (module, reason)
        assert needs_torch(ROOT / module), f"{module} was skipped for torch but does not say it needs torch"
    for module in engine_modules:
        assert skipped[module] == "the engine needs torch (the [engine] extra)", module
    # Every test module that does not need torch was collected, not skipped.
    others = {f"tests/{p.name}" for p in TESTS.glob("test_*.py") if not needs_torch(p)}
    collected = {line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line}
    assert others <= collected | {"tests/test_engine_skips.py"}, sorted(others - collected)


def test_engine_serve_without_torch_names_the_extra() -> None:
    code = "import tests.without_torch; from prefixlint.cli import main; main()"
    proc = run_without_torch("-c", code, "engine", "serve", "--preset", "tiny")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pip install 'prefixlint[engine]'" in proc.stderr and "torch" in proc.stderr
