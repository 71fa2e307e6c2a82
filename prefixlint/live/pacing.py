"""Pace and bound a run: at most ``rate`` requests a second, and hard caps on requests, prompt
tokens and wall time. A run asks :meth:`Budget.allows` before each request and stops when told no.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Budget:
    """Limits of one run (None: no limit) and what has been spent."""

    max_requests: int | None = None
    max_prompt_tokens: int | None = None
    max_time_s: float | None = None
    rate: float | None = None
    requests: int = 0
    prompt_tokens: int = 0
    exhausted: str | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _start: float | None = field(default=None, repr=False)
    _next_at: float = field(default=0.0, repr=False)

    def start(self) -> None:
        """Start the clock (the first request may go at once)."""
        self._start = self.clock()
        self._next_at = self._start

    @property
    def elapsed_s(self) -> float:
        """Seconds since :meth:`start`."""
        return 0.0 if self._start is None else self.clock() - self._start

    def allows(self, requests: int, prompt_tokens: int) -> bool:
        """Whether ``requests`` more requests of ``prompt_tokens`` tokens in all still fit.

        Records why not in :attr:`exhausted`."""
        if self.max_requests is not None and self.requests + requests > self.max_requests:
            self.exhausted = f"--max-requests {self.max_requests} reached"
        elif (
            self.max_prompt_tokens is not None and self.prompt_tokens + prompt_tokens > self.max_prompt_tokens
        ):
            self.exhausted = f"--max-prompt-tokens {self.max_prompt_tokens:,} reached"
        elif self.max_time_s is not None and self.elapsed_s >= self.max_time_s:
            self.exhausted = f"--max-time {self.max_time_s:g} s reached"
        else:
            return True
        return False

    def pace(self, prompt_tokens: int) -> None:
        """Wait for the next slot under ``rate``, then count one request of ``prompt_tokens``."""
        if self._start is None:
            self.start()
        if self.rate:
            wait = self._next_at - self.clock()
            if wait > 0:
                self.sleep(wait)
            self._next_at = max(self._next_at, self.clock()) + 1.0 / self.rate
        self.requests += 1
        self.prompt_tokens += prompt_tokens
