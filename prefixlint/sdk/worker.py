"""One process-wide queue of accounting jobs, run in order by a worker thread or by a waiting caller.

Every wrapped client shares it, so the jobs that read and write the process's prefix tracker
(prediction at send time, "response began" records, reports) run in the order the requests were
made. Jobs run one at a time, in FIFO order, on the worker thread; a caller that needs a job's result
before the worker got to it (an inline report) runs the queue up to that job itself, so a busy
machine that is slow to wake the worker adds no scheduling delay. A job's result is a
:class:`~concurrent.futures.Future`; errors are logged, never raised. Waits end on an event (a job
done, the queue empty, a deadline), never by polling; :data:`WAIT_S` bounds them.

The worker runs Python, so while it runs, the calling thread waits for the GIL. A *lazy* job does
not wake it: it runs at the worker's next wake-up, ideally :meth:`Worker.wake` when a request is on
the wire (the calling thread then waits on I/O with the GIL released), at the latest :data:`LAZY_S`
after it was queued. A wake-up runs the jobs queued before it, not the lazy ones queued while they
run (the next request's own send-side job waits for that request to be on the wire). A worker that
found nothing to do for :data:`LAZY_S` sleeps without a deadline, and the next lazy job wakes it.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, NamedTuple

log = logging.getLogger("prefixlint.sdk")
WAIT_S = 10.0  # the longest a caller waits for accounting (a report's send-side job, a flush)
LAZY_S = 0.1  # the longest a lazy job waits for the worker's next wake-up


class _Job(NamedTuple):
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    future: Future[Any]
    due: float  # when a lazy job runs at the latest (monotonic); 0.0 for a job that runs now
    number: int  # in submission order


class Worker:
    """A FIFO job queue served by one daemon thread (restarted in a forked child) and by waiters."""

    def __init__(self) -> None:
        self._pid = -1
        self._jobs: deque[_Job] = deque()
        lock = threading.Lock()
        self._wake = threading.Condition(lock)  # a job was queued
        self._idle = threading.Condition(lock)  # the queue ran empty
        self._running = threading.Lock()  # held while jobs run: one at a time, in order
        self._pending = 0
        self._queued = 0  # jobs submitted so far (numbers them)
        self._run_to = 0  # the worker runs every job up to this number now (later lazy ones when due)
        self._asleep = False  # the worker waits with no deadline: a lazy job must wake it

    def _after_fork(self) -> None:
        """In a forked child: fresh locks, since another thread may have held one at the fork."""
        lock = threading.Lock()
        self._wake = threading.Condition(lock)
        self._idle = threading.Condition(lock)
        self._running = threading.Lock()

    def _start(self) -> None:
        with self._wake:
            if self._pid != os.getpid():
                self._jobs = deque()
                self._running = threading.Lock()
                self._pending = self._queued = self._run_to = 0
                self._asleep = False
                thread = threading.Thread(target=self._loop, name="prefixlint-sdk")
                thread.daemon = True
                thread.start()
                self._pid = os.getpid()

    def submit(self, fn: Callable[..., Any], *args: Any, lazy: bool = False) -> Future[Any]:
        """Queue ``fn(*args)``: the worker runs it now, or with ``lazy`` at its next wake-up."""
        if self._pid != os.getpid():
            self._start()
        fut: Future[Any] = Future()
        with self._wake:
            self._pending += 1
            self._queued += 1
            self._jobs.append(_Job(fn, args, fut, time.monotonic() + LAZY_S if lazy else 0.0, self._queued))
            if not lazy:
                self._run_to = self._queued
            if not lazy or self._asleep:
                self._wake.notify()
        return fut

    def wake(self) -> None:
        """Run the jobs queued so far now: the caller is about to wait on I/O with the GIL released."""
        if self._pid != os.getpid():
            return  # nothing was queued in this process
        with self._wake:
            self._release()

    def _release(self) -> None:
        """Let the worker run every job queued so far (the lock is held)."""
        if self._jobs:
            self._run_to = self._queued
            self._wake.notify()

    def queued(self) -> bool:
        """True when jobs wait for the worker (read without the lock: a hint, not a promise)."""
        return bool(self._jobs)

    def _ready(self) -> bool:
        """The oldest job may run now: queued before the last wake-up, or due (the lock is held)."""
        job = self._jobs[0]
        return job.number <= self._run_to or job.due <= time.monotonic()

    def _run_next(self, ready_only: bool = False) -> bool:
        """Run the oldest job (the caller holds ``_running``); False when there is none (or, with
        ``ready_only``, when it is a lazy job that waits for a wake-up)."""
        with self._wake:
            if not self._jobs or (ready_only and not self._ready()):
                return False
            fn, args, fut, _, _ = self._jobs.popleft()
        try:
            fut.set_result(fn(*args))
        except Exception as exc:
            log.exception("prefixlint: accounting job failed")
            fut.set_exception(exc)
        finally:
            with self._wake:
                self._pending -= 1
                if not self._pending:
                    self._idle.notify_all()
        return True

    def _loop(self) -> None:
        while True:
            with self._wake:
                self._wait_for_work()
            with self._running:
                while self._run_next(ready_only=True):
                    pass

    def _wait_for_work(self) -> None:
        """Wait (holding the lock) until the oldest job may run."""
        while True:
            if self._jobs:
                if self._ready():
                    return
                self._wake.wait(self._jobs[0].due - time.monotonic())
            elif not self._wake.wait(LAZY_S) and not self._jobs:
                self._asleep = True  # nothing for LAZY_S: sleep until a job comes
                self._wake.wait()
                self._asleep = False

    def run_until(self, fut: Future[Any]) -> None:
        """Run queued jobs on this thread, in order, until ``fut`` is done (unless the worker is busy)."""
        if fut.done() or not self._running.acquire(blocking=False):
            return
        try:
            while not fut.done() and self._run_next():
                pass
        finally:
            self._running.release()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued job ran (at most ``timeout``, default :data:`WAIT_S`); False on timeout."""
        if self._pid != os.getpid():
            return True  # nothing was queued in this process
        with self._idle:
            self._release()
            return self._idle.wait_for(lambda: self._pending <= 0, WAIT_S if timeout is None else timeout)


WORKER = Worker()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WORKER._after_fork)


@atexit.register
def _flush_at_exit() -> None:
    WORKER.flush(2.0)
