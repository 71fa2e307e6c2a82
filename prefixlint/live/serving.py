"""Run an ASGI app with uvicorn on a free loopback port in a background thread.

Used by tests, benches and the canary's fake server. Needs uvicorn (the ``engine`` and ``dev`` extras).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any


class BackgroundServer:
    """A uvicorn server on ``host`` and a free port, started and stopped explicitly."""

    def __init__(
        self, app: Any, host: str = "127.0.0.1", timeout: float = 30.0, lifespan: str = "off"
    ) -> None:
        import uvicorn

        config = uvicorn.Config(
            app, host=host, port=0, log_level="warning", lifespan=lifespan, access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="prefixlint-http", daemon=True)
        self._host = host
        self._timeout = timeout
        self.url = ""

    def start(self) -> str:
        """Start serving; returns the base URL ``http://host:port``."""
        self._thread.start()
        deadline = time.monotonic() + self._timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the local server did not start")
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{self._host}:{port}"
        return self.url

    def stop(self) -> None:
        """Ask the server to exit and wait for its thread."""
        self._server.should_exit = True
        self._thread.join(timeout=self._timeout)


@contextlib.contextmanager
def serve_in_thread(
    app: Any, host: str = "127.0.0.1", timeout: float = 30.0, lifespan: str = "off"
) -> Iterator[str]:
    """Serve ``app`` for the duration of the ``with`` block; yields the base URL."""
    server = BackgroundServer(app, host=host, timeout=timeout, lifespan=lifespan)
    url = server.start()
    try:
        yield url
    finally:
        server.stop()
