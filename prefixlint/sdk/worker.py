"""One process-wide thread that runs accounting jobs in order.

Every wrapped client shares it, so the jobs that read and write the process's prefix tracker
(prediction at send time, "response began" records, reports) run in the order the requests were
made. A job's result is a :class:`~concurrent.futures.Future`; errors are logged, never raised.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

log = logging.getLogger("prefixlint.sdk")


class Worker:
    """A FIFO job queue served by one daemon thread (restarted in a forked child)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self.queue: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Future[Any]]]
        self._pending = 0

    def _start(self) -> None:
        with self._lock:
            if self._pid != os.getpid():
                self.queue = queue.SimpleQueue()
                self._pending = 0
                thread = threading.Thread(target=self._loop, args=(self.queue,), name="prefixlint-sdk")
                thread.daemon = True
                thread.start()
                self._pid = os.getpid()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        if self._pid != os.getpid():
            self._start()
        fut: Future[Any] = Future()
        with self._lock:
            self._pending += 1
        self.queue.put((fn, args, fut))
        return fut

    def _loop(self, jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Future[Any]]]) -> None:
        while True:
            fn, args, fut = jobs.get()
            try:
                fut.set_result(fn(*args))
            except Exception as exc:
                log.exception("prefixlint: background accounting failed")
                fut.set_exception(exc)
            finally:
                with self._lock:
                    self._pending -= 1

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued job ran; False on timeout."""
        deadline = time.monotonic() + timeout
        while self._pending > 0 and self._pid == os.getpid():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0005)
        return True


WORKER = Worker()


@atexit.register
def _flush_at_exit() -> None:
    WORKER.flush(2.0)
