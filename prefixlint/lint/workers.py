"""Forked worker processes that stream results back, so that a crash costs one file, not the run.

libcst's native parser overflows its stack on some deeply nested input (``'[' * 3000``, a long chain
of unary operators or of ``and``) and takes its process down with a segmentation fault, which no
``except`` can catch. So every file is checked in a child process forked from this one: children
inherit the list of work and the imported modules, take chunks of indexes from the parent, and send
each result back as soon as it is done. When a child dies, the parent knows exactly which item it was
working on (the first one of its chunk without a result): that item gets ``on_crash``'s result, the
rest of the chunk goes back to the queue, and a fresh child takes over.

Only on POSIX (``os.fork``) and only while this process runs a single thread; :func:`can_fork` says
so, and the caller falls back to ``concurrent.futures`` otherwise.

:func:`prestart` forks the first worker early, before files are found, so that its imports (libcst
alone takes about 0.2 s) run on a second core while this process finds files and reads their
settings; :func:`run_forked` then sends it the pickled work instead of forking. A worker that was never
used is killed (:func:`discard_prestarted`), and one that dies before it has its work is replaced by
an ordinary fork, so a run is never worse off than without it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import struct
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

_FRAME = struct.Struct("<Q")  # the length of one pickled result
_TASK = struct.Struct("<qq")  # a chunk of indexes [start, end); start < 0 means "stop"


def can_fork() -> bool:
    """True where a child can be forked safely: POSIX, and no other thread holds locks."""
    if not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


@dataclass
class _Child:
    pid: int
    tasks: int  # write end: chunks for the child
    results: int  # read end: framed results from the child
    chunk: tuple[int, int] | None = None
    received: int = 0
    buffer: bytearray = field(default_factory=bytearray)
    ready: bool = True  # False for a pre-started worker until it has read its work


_READY = -1  # the index of the frame a pre-started worker sends once it has its work
_PRESTARTED: list[_Child] = []  # the worker :func:`prestart` forked, until used or discarded


def prestart(warm: Callable[[], None]) -> None:
    """Fork a worker now that runs ``warm()`` (imports) and then waits for :func:`run_forked`'s work.

    Does nothing where forking is unsafe or a single core would run both processes in turn.
    """
    if _PRESTARTED or not can_fork() or _cores() < 2:
        return

    def body(tasks: int, results: int) -> None:
        with contextlib.suppress(Exception):  # what failed here fails again, and is reported, in work
            warm()
        head = _read_exact(tasks, _FRAME.size)
        if head is None:  # EOF: the parent did not need us
            return
        blob = _read_exact(tasks, _FRAME.unpack(head)[0])
        if blob is None:
            return
        work, around = pickle.loads(blob)
        _write_all(results, _frame(_READY, None))
        with around():
            _serve(tasks, results, work)

    child = _fork(body)
    child.ready = False
    _PRESTARTED.append(child)


def _cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)  # Linux: the cores this process may use
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def discard_prestarted() -> None:
    """Kill the pre-started worker if no run took it (nothing to analyse, every result cached)."""
    while _PRESTARTED:
        _stop(_PRESTARTED.pop())


def _stop(child: _Child) -> None:
    with contextlib.suppress(OSError):
        os.kill(child.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(child.pid, 0)
    for fd in (child.tasks, child.results):
        with contextlib.suppress(OSError):
            os.close(fd)


def _hand_over(
    work: Callable[[int], Any], around: Callable[[], AbstractContextManager[Any]]
) -> _Child | None:
    """The pre-started worker, sent ``work``; None when there is none or ``work`` cannot be pickled."""
    if not _PRESTARTED:
        return None
    child = _PRESTARTED.pop()
    try:
        blob = pickle.dumps((work, around), pickle.HIGHEST_PROTOCOL)
        _write_all(child.tasks, _FRAME.pack(len(blob)) + blob)
    except Exception:  # a closure, or the worker is already gone: fork as usual
        _stop(child)
        return None
    return child


def describe_exit(status: int) -> str:
    """``was killed by SIGSEGV`` or ``exited with status 3`` for a ``waitpid`` status."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"


def run_forked(
    count: int,
    work: Callable[[int], Any],
    on_crash: Callable[[int, str], Any],
    jobs: int,
    chunk_size: int,
    on_result: Callable[[int, Any], None] | None = None,
    around: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> list[Any]:
    """``[work(i) for i in range(count)]``, computed in ``jobs`` forked children.

    An item whose child dies while working on it gets ``on_crash(i, "was killed by SIGSEGV")``; an
    exception that escapes ``work`` in the child gets ``on_crash(i, "raised ...")``.
    ``on_result(i, result)`` runs in this process as results arrive (progress); each child works
    inside ``around()`` (the garbage collector settings of a run).
    """
    _reap()
    results: list[Any] = [None] * count
    queue: deque[tuple[int, int]] = deque(
        (i, min(i + chunk_size, count)) for i in range(0, count, max(1, chunk_size))
    )
    children: dict[int, _Child] = {}
    selector = selectors.DefaultSelector()

    def done(i: int, value: Any) -> None:
        results[i] = value
        if on_result is not None:
            on_result(i, value)

    def assign(child: _Child) -> None:
        child.chunk = queue.popleft() if queue else None
        child.received = 0
        if child.chunk is None and child.ready:
            release(child)
            return
        start, end = child.chunk if child.chunk else (-1, -1)
        # a pre-started worker may have died before it read its work: its closed pipe says so next
        with contextlib.suppress(BrokenPipeError) if not child.ready else contextlib.nullcontext():
            os.write(child.tasks, _TASK.pack(start, end))

    def detach(child: _Child) -> None:
        """Stop listening to ``child`` and close this process's ends of its pipes."""
        selector.unregister(child.results)
        del children[child.results]
        os.close(child.results)
        os.close(child.tasks)

    def release(child: _Child) -> None:
        """A worker with no work left: every result it owed is in, so its exit is not waited for.

        Closing its task pipe ends it. Tearing down a worker's heap of parsed trees takes it 15-20 ms,
        a tenth of a one-file check; it is reaped later (:func:`_reap`) instead.
        """
        detach(child)
        _EXITING.append(child.pid)

    def spawn() -> None:
        child = _hand_over(work, around) if not children else None
        if child is None:
            child = _spawn(work, around, [fd for c in children.values() for fd in (c.tasks, c.results)])
        children[child.results] = child
        selector.register(child.results, selectors.EVENT_READ, child)
        assign(child)

    try:
        for _ in range(min(jobs, len(queue))):
            spawn()
        while children:
            for key, _ in selector.select():
                child: _Child = key.data
                data = os.read(child.results, 1 << 20)
                if data:
                    child.buffer += data
                    for i, value in _frames(child.buffer):
                        if i == _READY:
                            child.ready = True
                            continue
                        if isinstance(value, _Raised):
                            value = on_crash(i, f"raised {value.error}")
                        done(i, value)
                        child.received += 1
                    if child.chunk and child.received == child.chunk[1] - child.chunk[0]:
                        assign(child)
                    continue
                detach(child)
                _, status = os.waitpid(child.pid, 0)
                if not child.ready:  # a pre-started worker that died before its work: not a file's fault
                    if child.chunk is not None:
                        queue.appendleft(child.chunk)
                elif child.chunk is not None:
                    start, end = child.chunk
                    culprit = start + child.received
                    if culprit < end:
                        done(culprit, on_crash(culprit, describe_exit(status)))
                        if culprit + 1 < end:
                            queue.appendleft((culprit + 1, end))
                if queue:
                    spawn()
    finally:
        for child in children.values():  # interrupted: leave no child behind
            _stop(child)
        selector.close()
    return results


_EXITING: list[int] = []  # workers told to stop whose exit nobody has waited for yet


def _reap() -> None:
    """Collect the exit of stopped workers that have exited (the rest stay listed until next time)."""
    for pid in list(_EXITING):
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped already (by a caller's own ``waitpid(-1)``)
            done = pid
        if done:
            _EXITING.remove(pid)


@dataclass(frozen=True)
class _Raised:
    """An exception that escaped ``work`` in a child (``BaseException`` too, e.g. a Rust panic)."""

    error: str


def _frames(buffer: bytearray) -> Iterator[tuple[int, Any]]:
    """Complete ``(index, result)`` frames at the start of ``buffer``, removed from it."""
    while len(buffer) >= _FRAME.size:
        (size,) = _FRAME.unpack_from(buffer)
        if len(buffer) < _FRAME.size + size:
            return
        blob = bytes(buffer[_FRAME.size : _FRAME.size + size])
        del buffer[: _FRAME.size + size]
        yield pickle.loads(blob)


def _spawn(
    work: Callable[[int], Any], around: Callable[[], AbstractContextManager[Any]], inherited: list[int]
) -> _Child:
    def body(tasks: int, results: int) -> None:
        with around():
            _serve(tasks, results, work)

    return _fork(body, inherited)


def _fork(body: Callable[[int, int], None], inherited: Sequence[int] = ()) -> _Child:
    """A child forked with a pipe each way that runs ``body(tasks, results)`` and exits.

    The child closes the parent's ends and ``inherited`` (other children's pipes), ignores Ctrl-C and
    exits with status 70 when ``body`` raises, without running the parent's exit handlers.
    """
    task_r, task_w = os.pipe()
    result_r, result_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            for fd in (task_w, result_r, *inherited):
                os.close(fd)
            _quiet_child()
            body(task_r, result_w)
        except BaseException:
            code = 70
        finally:
            # No atexit handlers, no flushing of buffers inherited from the parent: they are its own.
            # The standard streams are let go first: a caller reading the check's output through a
            # pipe (pre-commit) then has its end of file before this process has torn its heap down.
            for fd in (0, 1, 2):
                with contextlib.suppress(OSError):
                    os.close(fd)
            os._exit(code)
    os.close(task_r)
    os.close(result_w)
    return _Child(pid, task_w, result_r)


def _quiet_child() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us on Ctrl-C
    faulthandler = sys.modules.get("faulthandler")
    if faulthandler is not None:  # a crash here is the file's PFX001, not a traceback dump
        faulthandler.disable()


def _frame(i: int, value: Any) -> bytes:
    blob = pickle.dumps((i, value), pickle.HIGHEST_PROTOCOL)
    return _FRAME.pack(len(blob)) + blob


def _serve(tasks: int, results: int, work: Callable[[int], Any]) -> None:
    while True:
        head = _read_exact(tasks, _TASK.size)
        if head is None:
            return
        start, end = _TASK.unpack(head)
        if start < 0:
            return
        for i in range(start, end):
            try:
                blob = pickle.dumps((i, work(i)), pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:
                blob = pickle.dumps((i, _Raised(f"{type(exc).__name__}: {exc}")))
            _write_all(results, _FRAME.pack(len(blob)) + blob)


def _read_exact(fd: int, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
