"""Helpers for tests and benches: run an app on a free local port in a background thread."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn


@contextlib.contextmanager
def serve_in_thread(app: object, host: str = "127.0.0.1", timeout: float = 30.0) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a random free port; yields the base URL (``http://host:port``)."""
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, name="prefixlint-engine-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=timeout)
