"""Test-only fault injection over HTTP (``/debug/fault``), for proving leak detectors such as
``prefixlint canary`` against a running server.

Refused (403) unless the server was started with ``--enable-fault-injection``. When switched on, a
fault from :mod:`prefixlint.engine.integrity` is applied to requests at their first decode step
(so a request with ``max_tokens=1`` is never faulted): ``reserve_unwritten_blocks`` makes it
decode over KV blocks that were reserved but never written, which hold whatever an earlier
request left there. With the integrity checks on, the faulted request fails closed (HTTP 500);
with ``--no-integrity-checks`` it answers from stale KV.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from fastapi import FastAPI, Request

from prefixlint.engine.block_manager import BlockManager
from prefixlint.engine.integrity import (
    recycle_block_behind_back,
    reserve_unwritten_blocks,
    swap_in_foreign_block,
)
from prefixlint.engine.llm_engine import LLMEngine
from prefixlint.engine.sequence import Sequence
from prefixlint.engine.server.errors import ApiError, read_json
from prefixlint.engine.server.frontend import Server

KINDS = ("reserve_unwritten_blocks", "swap_in_foreign_block", "recycle_block_behind_back")
MAX_FAULT_BLOCKS = 1024


class FaultSwitch:
    """The engine's ``fault_hook``, switched on and off over HTTP."""

    def __init__(self, engine: LLMEngine) -> None:
        self.engine = engine
        self.kind: str | None = None
        self.num_blocks = 4
        self.remaining: int | None = None  # requests still to fault; None: every request
        self.injected = 0
        self._lock = threading.Lock()

    def state(self) -> dict:
        with self._lock:
            active = None
            if self.kind is not None:
                active = {"fault": self.kind, "num_blocks": self.num_blocks, "remaining": self.remaining}
            return {"enabled": True, "active": active, "injected": self.injected}

    def switch_on(self, kind: str, num_blocks: int, count: int | None) -> None:
        with self._lock:
            self.kind, self.num_blocks, self.remaining = kind, num_blocks, count
        self.engine.fault_hook = self._hook

    def switch_off(self) -> None:
        self.engine.fault_hook = None
        with self._lock:
            self.kind = None

    def _hook(self, seq: Sequence, bm: BlockManager) -> None:
        """Runs on the engine thread for every scheduled sequence, before the checks."""
        first_decode = seq.num_output_tokens == 1 and len(seq) - seq.num_computed_tokens == 1
        with self._lock:
            if self.kind is None or not first_decode or self.remaining == 0:
                return
            apply = self._fault(self.kind)
            if apply is None:
                return  # not enough free blocks for this fault now: leave the request alone
            apply(seq, bm)
            self.injected += 1
            if self.remaining is not None:
                self.remaining -= 1

    def _fault(self, kind: str) -> Callable[[Sequence, BlockManager], None] | None:
        bm = self.engine.block_manager
        if kind == "reserve_unwritten_blocks":
            if bm.num_free < self.num_blocks + 1:
                return None
            n = self.num_blocks
            return lambda seq, bm: reserve_unwritten_blocks(seq, bm, n)
        return swap_in_foreign_block if kind == "swap_in_foreign_block" else recycle_block_behind_back


def _parse(body: dict) -> tuple[str, int, int | None]:
    kind = body.get("fault", "reserve_unwritten_blocks")
    if kind not in KINDS:
        raise ApiError(400, f"fault must be one of {', '.join(KINDS)}")
    num_blocks, count = body.get("num_blocks", 4), body.get("count")
    if (
        isinstance(num_blocks, bool)
        or not isinstance(num_blocks, int)
        or not 1 <= num_blocks <= MAX_FAULT_BLOCKS
    ):
        raise ApiError(400, f"num_blocks must be an integer from 1 to {MAX_FAULT_BLOCKS}")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ApiError(400, "count must be a positive integer, or null for every request")
    return kind, num_blocks, count


def add_fault_routes(app: FastAPI, srv: Server, enabled: bool) -> None:
    """``GET``/``POST``/``DELETE /debug/fault``: 403 unless ``enabled``."""
    switch = FaultSwitch(srv.engine) if enabled else None

    def require(request: Request) -> FaultSwitch:
        srv.tenant(request)
        if switch is None:
            raise ApiError(
                403,
                "fault injection is off: it is a test-only feature; start the server with "
                "--enable-fault-injection to use it",
                "permission_error",
            )
        return switch

    @app.get("/debug/fault")
    async def _state(request: Request) -> dict:
        srv.tenant(request)
        return switch.state() if switch is not None else {"enabled": False, "active": None, "injected": 0}

    @app.post("/debug/fault")
    async def _on(request: Request) -> dict:
        sw = require(request)
        sw.switch_on(*_parse(await read_json(request)))
        return sw.state()

    @app.delete("/debug/fault")
    async def _off(request: Request) -> dict:
        sw = require(request)
        sw.switch_off()
        return sw.state()
