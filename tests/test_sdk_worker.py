"""The accounting worker: a FIFO queue run by its own daemon thread, by waiting callers, and flushed."""

from __future__ import annotations

import threading
import time

import pytest

from prefixlint.sdk import worker as worker_module
from prefixlint.sdk.worker import Worker


def test_a_submitted_job_runs_on_the_worker_thread_without_a_waiter() -> None:
    worker = Worker()
    ran: list[threading.Thread] = []
    fut = worker.submit(lambda x: ran.append(threading.current_thread()) or x * 2, 21)
    assert fut.result(timeout=5) == 42
    assert ran[0] is not threading.current_thread()
    assert ran[0].name == "prefixlint-sdk" and ran[0].daemon  # never keeps the process alive
    assert worker.flush(5)


def test_jobs_run_one_at_a_time_in_the_order_submitted() -> None:
    worker = Worker()
    gate = threading.Event()
    order: list[int] = []
    worker.submit(gate.wait, 5)  # the worker is busy: the rest queue up behind it
    futs = [worker.submit(order.append, i) for i in range(20)]
    gate.set()
    for f in futs:
        f.result(timeout=5)
    assert order == list(range(20))


def test_flush_waits_for_every_queued_job_and_says_when_it_timed_out() -> None:
    worker = Worker()
    assert worker.flush(0.01)  # nothing queued in this process
    gate = threading.Event()
    worker.submit(gate.wait, 5)
    assert not worker.flush(0.05)
    gate.set()
    assert worker.flush(5)


def test_a_failing_job_gives_its_error_to_its_future_and_the_queue_goes_on(caplog) -> None:
    worker = Worker()

    def boom() -> None:
        raise ValueError("broken job")

    failed = worker.submit(boom)
    after = worker.submit(lambda: "next")
    with pytest.raises(ValueError, match="broken job"):
        failed.result(timeout=5)
    assert after.result(timeout=5) == "next"
    assert worker.flush(5)
    assert "accounting job failed" in caplog.text


def test_a_waiting_caller_does_not_run_jobs_while_the_worker_is_busy() -> None:
    worker = Worker()
    worker.submit(lambda: None).result(timeout=5)  # the worker thread runs
    with worker._running:  # held by whoever runs jobs: here, as if by the worker
        queued = worker.submit(lambda: threading.current_thread())
        worker.run_until(queued)
        assert not queued.done()
    assert queued.result(timeout=5) is not threading.current_thread()
    started, gate = threading.Event(), threading.Event()
    worker.submit(lambda: started.set() or gate.wait(5))
    assert started.wait(5)  # the worker thread is busy with this job
    mine = worker.submit(lambda: threading.current_thread())
    worker.run_until(mine)  # returns at once: the worker will reach it
    assert not mine.done()
    gate.set()
    assert mine.result(timeout=5) is not threading.current_thread()
    assert worker.flush(5)


def test_a_lazy_job_waits_for_a_wake_up_and_keeps_its_place_in_the_queue(monkeypatch) -> None:
    monkeypatch.setattr(worker_module, "LAZY_S", 30.0)
    worker = Worker()
    worker.submit(lambda: None).result(timeout=5)  # the worker thread runs, its queue is empty
    order: list[str] = []
    lazy = worker.submit(order.append, "lazy", lazy=True)
    time.sleep(0.05)
    assert not lazy.done() and worker.queued()
    worker.wake()
    lazy.result(timeout=5)
    second = worker.submit(order.append, "second lazy", lazy=True)
    urgent = worker.submit(order.append, "urgent")  # runs the lazy job queued before it first
    urgent.result(timeout=5)
    assert second.done() and order == ["lazy", "second lazy", "urgent"]
    third = worker.submit(order.append, "third", lazy=True)
    assert worker.flush(5) and third.done()  # a flush runs lazy jobs at once


def test_a_lazy_job_runs_by_itself_once_it_waited_lazy_s(monkeypatch) -> None:
    monkeypatch.setattr(worker_module, "LAZY_S", 1.0)
    worker = Worker()
    worker.submit(lambda: None).result(timeout=5)
    first = worker.submit(lambda: time.monotonic(), lazy=True)
    t0 = time.monotonic()
    time.sleep(0.5)
    second = worker.submit(lambda: time.monotonic(), lazy=True)
    ran = first.result(timeout=5)
    assert ran - t0 >= 1.0 - 0.01  # not before its time...
    assert not second.done()  # ...and the one queued later waits for its own
    assert second.result(timeout=5) - t0 >= 1.5 - 0.01


def test_a_sleeping_worker_is_woken_by_a_lazy_job(monkeypatch) -> None:
    monkeypatch.setattr(worker_module, "LAZY_S", 0.05)
    worker = Worker()
    worker.submit(lambda: None).result(timeout=5)
    deadline = time.monotonic() + 5
    while not worker._asleep and time.monotonic() < deadline:  # idle for LAZY_S: no deadline left
        time.sleep(0.01)
    assert worker._asleep
    assert worker.submit(lambda: "ran", lazy=True).result(timeout=5) == "ran"


def test_a_wake_up_runs_the_jobs_queued_before_it_not_lazy_ones_queued_while_they_run(monkeypatch) -> None:
    monkeypatch.setattr(worker_module, "LAZY_S", 30.0)
    worker = Worker()
    worker.submit(lambda: None).result(timeout=5)
    started, gate = threading.Event(), threading.Event()
    first = worker.submit(lambda: started.set() or gate.wait(5), lazy=True)
    worker.wake()
    assert started.wait(5)  # the worker runs the first job...
    later = worker.submit(lambda: "later", lazy=True)  # ...when the next request's job is queued
    gate.set()
    first.result(timeout=5)
    time.sleep(0.05)
    assert not later.done()  # it waits for its own wake-up
    worker.wake()
    assert later.result(timeout=5) == "later"


def test_flush_also_waits_for_the_jobs_queued_behind_a_running_one() -> None:
    """A flush returns once every job submitted so far ran, not when the first of them did."""
    worker = Worker()
    gate, order = threading.Event(), []
    worker.submit(gate.wait, 5)
    worker.submit(lambda: time.sleep(0.2) or order.append("slow"))
    worker.submit(order.append, "last")
    gate.set()
    assert worker.flush(5) and order == ["slow", "last"]


def test_a_job_submitted_to_an_idle_worker_runs_at_once(monkeypatch) -> None:
    """A job that is not lazy wakes the idle worker: it does not wait for ``LAZY_S``."""
    monkeypatch.setattr(worker_module, "LAZY_S", 30.0)
    worker = Worker()
    worker.submit(lambda: None).result(timeout=5)  # the worker thread runs and waits for work
    time.sleep(0.05)
    assert worker.submit(lambda: "now").result(timeout=5) == "now"


def test_a_waiting_caller_runs_the_lazy_jobs_up_to_its_own(monkeypatch) -> None:
    """``run_until`` on an idle worker runs every job up to the awaited one on the caller's thread,
    lazy ones too (they would otherwise wait for a wake-up)."""
    monkeypatch.setattr(worker_module, "LAZY_S", 30.0)
    worker = Worker()
    worker.submit(lambda: None).result(timeout=5)
    first = worker.submit(threading.current_thread, lazy=True)
    mine = worker.submit(threading.current_thread, lazy=True)
    worker.run_until(mine)
    assert first.done() and mine.done()
    assert first.result() is mine.result() is threading.current_thread()
