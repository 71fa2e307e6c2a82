"""Lint every ``.py`` file of the installed standard library: no crash, no traceback, bad files located.

Two passes, two workers, no cache:

1. every file, as ``prefixlint check`` sees it (read, decoded, pre-filtered, analysed when it may
   build prompts);
2. every ``PREFIXLINT_SWEEP_STRIDE``-th file (default 5; set 1 for all) with the pre-filter off, so
   the analyzer and the rules also run on arbitrary code. All of them take about 1 s of CPU per
   large stdlib module, so the stride keeps the test within a few minutes on 2 cores.
"""

from __future__ import annotations

import ast
import os
import sysconfig
from pathlib import Path

import pytest
from cli_support import has_python_analyzer

from prefixlint.lint.discover import Target
from prefixlint.lint.runner import RunOptions, check_targets, finalize
from prefixlint.model.settings import Settings

pytestmark = pytest.mark.slow


def stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts and p.is_file())


def python_rejects(path: Path) -> bool:
    """True when CPython's parser rejects the file (compile-time checks such as a misplaced
    ``from __future__`` import are not parse errors: libcst rightly accepts those files)."""
    try:
        ast.parse(path.read_bytes(), str(path))
    except (SyntaxError, ValueError):
        return True
    return False


def sweep(files: list[Path], prefilter: bool) -> None:
    settings = Settings()
    settings.root = str(Path(sysconfig.get_paths()["stdlib"]))
    targets = [Target(str(p), "python", settings) for p in files]
    results = check_targets(targets, RunOptions(jobs=2, use_cache=False, prefilter=prefilter))
    run = finalize(targets, results)
    assert run.internal_errors == [], "\n\n".join(f"{p}\n{e}" for p, e in run.internal_errors[:5])
    assert set(results) == {t.path for t in targets}
    errors = {f.location.path: f for f in run.findings if f.code == "PFX001"}
    for f in errors.values():
        assert f.location.line >= 1 and f.message
    # Every analysed file CPython itself rejects (test/badsyntax_*, lib2to3 data...) is reported.
    for path in (t.path for t in targets if not results[t.path].skipped):
        if python_rejects(Path(path)):
            assert path in errors, f"{path} does not compile but got no PFX001"


@pytest.mark.timeout(1200)
@pytest.mark.skipif(not has_python_analyzer(), reason="needs the Python analyzer")
def test_lint_whole_stdlib_without_crash() -> None:
    files = stdlib_files()
    assert len(files) > 500
    sweep(files, prefilter=True)


@pytest.mark.timeout(1200)
@pytest.mark.skipif(not has_python_analyzer(), reason="needs the Python analyzer")
def test_analyzer_on_stdlib_sample_without_prefilter() -> None:
    stride = int(os.environ.get("PREFIXLINT_SWEEP_STRIDE", "5"))
    sweep(stdlib_files()[::stride], prefilter=False)
