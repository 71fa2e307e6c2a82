"""Suite-wide settings."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator

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


@pytest.fixture(scope="session", autouse=True)
def _one_tls_context() -> Iterator[None]:
    """Every HTTP client a test builds (openai, anthropic) would load the system's CA bundle into a new
    TLS context, about 40 ms each, half the SDK tests' time, though they talk plain HTTP to a loopback
    server. They share one context instead."""
    try:
        import httpcore2
    except ImportError:
        yield
        return
    build = httpcore2.default_ssl_context

    @functools.cache
    def shared(*, _trust_env: bool = True) -> object:
        return build(_trust_env=_trust_env)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(httpcore2, "default_ssl_context", shared)
        yield


@pytest.fixture(autouse=True)
def _short_accounting_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A report or flush waits at most 10 s for the SDK's accounting worker; its jobs take
    milliseconds, so in tests a wait that long is a failure, and it fails in 3 s. No test starts
    while accounting queued by an earlier one has not run (a broken queue fails here, once)."""
    worker = sys.modules.get("prefixlint.sdk.worker")
    if worker is not None:
        monkeypatch.setattr(worker, "WAIT_S", 3.0)
        assert worker.WORKER.flush(), "the SDK's accounting queue did not drain"


@pytest.fixture(scope="session")
def provider_server() -> Iterator[object]:
    """One local provider server for every SDK test module (each test resets it): starting and
    stopping one per module cost about 0.15 s each, paid again by every mutant mutmut runs."""
    from sdk_server import ProviderServer

    srv = ProviderServer().start()
    yield srv
    srv.stop()
