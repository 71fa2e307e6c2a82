"""Suite-wide settings."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# In CI the property tests replay a fixed set of examples (derandomized), so a run is reproducible;
# locally they explore new inputs each time, and regressions they find become explicit @example cases.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    """Snapshots that a run does not use (a ``-k`` selection, ``--collect-only``) are a warning,
    not a failure; ``--snapshot-update`` still removes them."""
    if hasattr(config.option, "warn_unused_snapshots"):
        config.option.warn_unused_snapshots = True


@pytest.fixture(autouse=True)
def _fork_as_a_cli_process_would(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Earlier tests leave idle daemon threads behind (the SDK's background reporter, Dask's offload
    pool), which would make ``check`` avoid ``fork`` in this process. A ``prefixlint check`` process
    has no such threads, so tests fork as it would; tests marked ``threaded_caller`` see the real
    thread count."""
    if request.node.get_closest_marker("threaded_caller") is None:
        monkeypatch.setattr("prefixlint.lint.workers.can_fork", lambda: hasattr(os, "fork"))
