"""The loop: admission, scheduling, integrity checks, model steps, sampling, and the sync, threaded
and asyncio front doors.

TTFT here is engine-side: from ``add_request`` (arrival) to the first sampled token.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import torch

from prefixlint.engine.block_manager import BlockManager
from prefixlint.engine.config import EngineConfig, EngineConfigError
from prefixlint.engine.integrity import KVIntegrityError, verify
from prefixlint.engine.model_runner import ModelRunner
from prefixlint.engine.sampling import SamplingParams, TokenLogprob, sample, token_logprob
from prefixlint.engine.scheduler import Scheduler
from prefixlint.engine.sequence import Sequence
from prefixlint.engine.tokenizer import load_tokenizer

log = logging.getLogger("prefixlint.engine")


class AdmissionError(ValueError):
    """A request rejected before any block was allocated (HTTP 400)."""


@dataclass
class RequestOutput:
    """What one request produced. ``logits`` is ``[num_output_tokens, vocab]`` when requested;
    ``logprobs`` has one entry per output token when ``SamplingParams.logprobs`` is set."""

    request_id: int
    token_ids: list[int]
    num_prompt_tokens: int
    num_cached_tokens: int
    ttft_s: float | None
    finish_reason: str | None  # stop | length | abort | error
    error: str | None = None
    logits: torch.Tensor | None = None
    logprobs: list[TokenLogprob] | None = None


@dataclass
class StreamDelta:
    """New tokens of one request since the last delta (with their logprobs when requested);
    ``output`` is set on the final one."""

    token_ids: list[int]
    output: RequestOutput | None = None
    num_cached_tokens: int = 0
    logprobs: list[TokenLogprob] = field(default_factory=list)


@dataclass
class _Counters:
    requests: int = 0
    rejected: int = 0
    prompt_tokens_total: int = 0
    cached_tokens_total: int = 0
    integrity_failures: int = 0
    integrity_check_seconds: float = 0.0  # time spent in the KV owner-tag checks
    finished: dict[str, int] = field(default_factory=dict)


class LLMEngine:
    """A small paged-KV inference engine with tenant-salted prefix caching."""

    def __init__(self, config: EngineConfig | None = None, **overrides: object) -> None:
        config = (config or EngineConfig()).with_(**overrides) if overrides else (config or EngineConfig())
        config.validate()
        self.config = config
        self.model_config = config.model_config()
        if config.num_blocks is not None:
            self._check_pool(config.num_blocks)  # refuse before building anything
        self.tokenizer = load_tokenizer(config.model_dir, self.model_config.eos_token_ids)
        self.runner = ModelRunner(config, self.model_config)
        self._check_pool(self.runner.num_blocks)
        self.runner.set_invalid_token_ids(self.tokenizer.invalid_token_ids)
        self.block_manager = BlockManager(
            self.runner.num_blocks,
            config.block_size,
            config.enable_prefix_caching,
            config.scrub_on_free,
            self.runner.scrub,
        )
        self.scheduler = Scheduler(config, self.block_manager)
        self.eos_token_ids = set(self.model_config.eos_token_ids or self.tokenizer.eos_token_ids)
        # Output cap for requests that set none (the server's chat route); None: up to max_model_len.
        self.default_max_tokens = config.default_max_tokens or self.model_config.default_max_tokens
        self.counters = _Counters()
        self.finish_listeners: list[Callable[[Sequence], None]] = []
        # Test-only: called with (seq, block_manager) for every scheduled sequence before checks.
        self.fault_hook: Callable[[Sequence, BlockManager], None] | None = None
        self._step_lock = threading.Lock()
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._callbacks: dict[int, Callable[[Sequence, list[int]], None]] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stop = False

    def _check_pool(self, num_blocks: int) -> None:
        pool = num_blocks * self.config.block_size
        if pool < self.config.max_model_len:
            raise EngineConfigError(
                f"the KV pool holds {pool} tokens ({num_blocks} blocks x {self.config.block_size}), "
                f"fewer than max_model_len={self.config.max_model_len}: a request the engine admits "
                f"could never fit. Give the pool more blocks, or lower max_model_len to {pool} or "
                "less explicitly."
            )

    @property
    def model_name(self) -> str:
        return self.model_config.name

    @staticmethod
    def namespace(tenant: str | None, client_salt: str | None = None) -> str:
        """The cache namespace for a tenant plus an optional client salt (structured, so
        ``("a", "bc")`` and ``("ab", "c")`` never collide)."""
        if not tenant and not client_salt:
            return ""
        return json.dumps([tenant or "", client_salt or ""])

    # -- requests ------------------------------------------------------------------------------

    def check_prompt(self, prompt_token_ids: list[int]) -> None:
        """Raise :class:`AdmissionError` unless the prompt can run; allocates nothing."""
        n, cfg = len(prompt_token_ids), self.config
        if n == 0:
            raise AdmissionError("the prompt is empty")
        if n > cfg.max_model_len:
            raise AdmissionError(
                f"the prompt has {n} tokens, more than this server's max_model_len of {cfg.max_model_len}"
            )
        needed = (n + cfg.block_size - 1) // cfg.block_size
        if needed > self.block_manager.num_blocks:
            raise AdmissionError(
                f"the prompt needs {needed} KV blocks; the pool has {self.block_manager.num_blocks}"
            )
        vocab = self.model_config.input_vocab_size
        if min(prompt_token_ids) < 0 or max(prompt_token_ids) >= vocab:  # C-speed scans; name one below
            bad = next(t for t in prompt_token_ids if not 0 <= t < vocab)
            raise AdmissionError(f"token id {bad} is outside the vocabulary (0..{vocab - 1})")

    def add_request(
        self,
        prompt: list[int] | str,
        params: SamplingParams | None = None,
        salt: str | None = None,
        cacheable_tokens: int | None = None,
        on_update: Callable[[Sequence, list[int]], None] | None = None,
    ) -> Sequence:
        """Validate and queue a request. ``salt`` is the cache namespace (see :meth:`namespace`);
        ``cacheable_tokens`` limits prefix-cache reads and writes to the first that many tokens.
        ``on_update(seq, new_token_ids)`` runs on the stepping thread after every step that
        touches the request, the last time with ``seq.is_finished``."""
        ids = self.tokenizer.encode(prompt) if isinstance(prompt, str) else list(prompt)
        try:
            self.check_prompt(ids)
        except AdmissionError:
            self.counters.rejected += 1
            raise
        seq = Sequence(ids, params or SamplingParams(), salt or "", cacheable_tokens)
        if seq.params.seed is not None:
            seq.generator = torch.Generator().manual_seed(seq.params.seed)
        if on_update is not None:
            self._callbacks[seq.seq_id] = on_update
        self._inbox.put(("add", seq))
        self._wake.set()
        return seq

    def abort(self, seq: Sequence) -> None:
        """Cancel ``seq``; its blocks are freed at the start of the next step."""
        self._inbox.put(("abort", seq))
        self._wake.set()

    # -- one step ------------------------------------------------------------------------------

    def has_work(self) -> bool:
        return self.scheduler.has_work() or not self._inbox.empty()

    def step(self) -> list[Sequence]:
        """Run one scheduling step; returns the sequences that got tokens or finished."""
        with self._step_lock:
            touched = self._drain_inbox()
            batch = self.scheduler.schedule()
            runnable: list[tuple[Sequence, int]] = []
            for seq, n in batch:
                if self.fault_hook is not None:
                    before = (len(seq), seq.num_computed_tokens)
                    self.fault_hook(seq, self.block_manager)
                    if (len(seq), seq.num_computed_tokens) != before:
                        n = len(seq) - seq.num_computed_tokens
                try:
                    if self.config.integrity_checks:
                        t0 = time.perf_counter()
                        try:
                            verify(seq, self.block_manager, n)
                        finally:
                            self.counters.integrity_check_seconds += time.perf_counter() - t0
                    runnable.append((seq, n))
                except KVIntegrityError as exc:
                    self.counters.integrity_failures += 1
                    log.error("%s", exc)
                    seq.error = "KV integrity violation"
                    self._finish(seq, "error")
                    touched.append(seq)
            new_tokens = self._run(runnable) if runnable else {}
            for seq, _ in runnable:
                touched.append(seq)
            for seq in touched:
                cb = self._callbacks.get(seq.seq_id)
                if cb is not None:
                    try:
                        cb(seq, new_tokens.get(seq.seq_id, []))
                    except Exception:  # a broken listener must not stop the engine
                        log.exception("update callback of request %d failed", seq.seq_id)
                if seq.is_finished:
                    self._callbacks.pop(seq.seq_id, None)
            return touched

    def _drain_inbox(self) -> list[Sequence]:
        touched = []
        while not self._inbox.empty():
            op, seq = self._inbox.get()
            if op == "add":
                self.counters.requests += 1
                self.scheduler.add(seq)
            elif not seq.is_finished:
                self._finish(seq, "abort")
                touched.append(seq)
        return touched

    def _run(self, batch: list[tuple[Sequence, int]]) -> dict[int, list[int]]:
        try:
            logits = self.runner.run(batch)
        except Exception as exc:
            log.exception("model step failed")
            for seq, _ in batch:
                seq.error = f"model step failed: {exc}"
                self._finish(seq, "error")
            return {}
        bm, out = self.block_manager, {}
        for (seq, n), row in zip(batch, logits, strict=False):
            bm.mark_written(seq, seq.num_computed_tokens, seq.num_computed_tokens + n)
            seq.num_computed_tokens += n
            bm.cache_full_blocks(seq)
            if row is None:
                continue
            token = sample(row, seq.params, seq.generator)
            if seq.params.return_logits:
                seq.logits.append(row)
            if seq.params.logprobs is not None:
                seq.logprobs.append(token_logprob(row, token, seq.params.logprobs))
            seq.token_ids.append(token)
            out[seq.seq_id] = [token]
            if seq.first_token_time is None:
                seq.first_token_time = time.perf_counter()
            reason = self._stop_reason(seq, token)
            if reason:
                self._finish(seq, reason)
        return out

    def _stop_reason(self, seq: Sequence, token: int) -> str | None:
        p = seq.params
        if (token in self.eos_token_ids and not p.ignore_eos) or token in p.stop_token_ids:
            return "stop"
        if seq.num_output_tokens >= p.max_tokens or len(seq) >= self.config.max_model_len:
            return "length"
        return None

    def _finish(self, seq: Sequence, reason: str) -> None:
        if seq.is_finished:
            return
        self.scheduler.finish(seq, reason)
        self.counters.finished[reason] = self.counters.finished.get(reason, 0) + 1
        if seq.admitted:
            self.counters.prompt_tokens_total += seq.num_prompt_tokens
            self.counters.cached_tokens_total += seq.num_cached_tokens
        for listener in self.finish_listeners:
            listener(seq)

    # -- front doors ---------------------------------------------------------------------------

    def output(self, seq: Sequence) -> RequestOutput:
        """The :class:`RequestOutput` of ``seq`` (no tokens when it failed)."""
        failed = seq.finish_reason == "error"
        ttft = None if seq.first_token_time is None else seq.first_token_time - seq.arrival_time
        logits = torch.stack(seq.logits) if seq.logits else None
        return RequestOutput(
            seq.seq_id,
            [] if failed else seq.output_token_ids,
            seq.num_prompt_tokens,
            seq.num_cached_tokens,
            ttft,
            seq.finish_reason,
            seq.error,
            None if failed else logits,
            None if failed or seq.params.logprobs is None else list(seq.logprobs),
        )

    def generate(
        self,
        prompt: list[int] | str,
        params: SamplingParams | None = None,
        salt: str | None = None,
        cacheable_tokens: int | None = None,
    ) -> RequestOutput:
        """Run one request to completion (stepping inline, or waiting on the background loop)."""
        return self.generate_many([prompt], params, [salt], cacheable_tokens)[0]

    def generate_many(
        self,
        prompts: list[list[int] | str],
        params: SamplingParams | None = None,
        salts: list[str | None] | None = None,
        cacheable_tokens: int | None = None,
    ) -> list[RequestOutput]:
        """Run several requests concurrently (continuous batching) to completion."""
        done = threading.Event()
        seqs: list[Sequence] = []

        def on_update(_seq: Sequence, _new: list[int]) -> None:
            if all(s.is_finished for s in seqs):
                done.set()

        salts = salts or [None] * len(prompts)
        for prompt, salt in zip(prompts, salts, strict=False):
            seqs.append(self.add_request(prompt, params, salt, cacheable_tokens, on_update))
        if self._thread is not None:
            while not all(s.is_finished for s in seqs):
                done.wait(timeout=0.05)
                done.clear()
        else:
            while not all(s.is_finished for s in seqs):
                self.step()
        return [self.output(s) for s in seqs]

    def start(self) -> None:
        """Step in a background thread whenever there is work (for servers and async use)."""
        if self._thread is None:
            self._stop = False
            self._thread = threading.Thread(target=self._loop, name="prefixlint-engine", daemon=True)
            self._thread.start()

    def shutdown(self) -> None:
        if self._thread is not None:
            self._stop = True
            self._wake.set()
            self._thread.join(timeout=10)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop:
            if not self.has_work():
                self._wake.wait(timeout=0.5)
                self._wake.clear()
                continue
            try:
                progressed = bool(self.step())
            except Exception:  # never leave clients waiting on a dead loop
                log.exception("engine step failed; failing every queued request")
                self._fail_all("engine step failed")
                progressed = True
            if not progressed:
                time.sleep(0.001)  # waiting requests that cannot be admitted yet

    def _fail_all(self, error: str) -> None:
        with self._step_lock:
            self._drain_inbox()
            for seq in [*self.scheduler.running, *self.scheduler.waiting]:
                seq.error = error
                self._finish(seq, "error")
                cb = self._callbacks.pop(seq.seq_id, None)
                if cb is not None:
                    cb(seq, [])

    async def generate_stream(
        self,
        prompt: list[int] | str,
        params: SamplingParams | None = None,
        salt: str | None = None,
        cacheable_tokens: int | None = None,
    ) -> AsyncIterator[StreamDelta]:
        """Yield token deltas as they are sampled; the last delta carries ``output``. Starts the
        background loop if needed. Cancelling the consumer aborts the request and frees its
        blocks. Admission errors raise before the first yield."""
        self.start()
        loop = asyncio.get_running_loop()
        q: asyncio.Queue = asyncio.Queue()

        def on_update(seq: Sequence, new: list[int]) -> None:
            lps = seq.logprobs[len(seq.logprobs) - len(new) :] if new and seq.logprobs else []
            if not loop.is_closed():
                loop.call_soon_threadsafe(q.put_nowait, (list(new), lps, seq.is_finished))

        seq = self.add_request(prompt, params, salt, cacheable_tokens, on_update)
        finished = False
        try:
            while not finished:
                new, lps, finished = await q.get()
                if finished:
                    yield StreamDelta(new, self.output(seq), seq.num_cached_tokens, lps)
                elif new:
                    yield StreamDelta(new, None, seq.num_cached_tokens, lps)
        finally:
            if not finished:
                self._callbacks.pop(seq.seq_id, None)
                self.abort(seq)

    # -- introspection -------------------------------------------------------------------------

    def stats(self) -> dict[str, float]:
        """Counters: prefix-cache ``hits``/``misses`` (in blocks), ``cached_tokens_total``,
        pool occupancy, ``evictions``, ``integrity_failures``, ``integrity_check_seconds`` and
        request counts."""
        c = self.counters
        return {
            **self.block_manager.stats(),
            "cached_tokens_total": c.cached_tokens_total,
            "prompt_tokens_total": c.prompt_tokens_total,
            "integrity_failures": c.integrity_failures,
            "integrity_check_seconds": c.integrity_check_seconds,
            "requests": c.requests,
            "rejected": c.rejected,
            "preemptions": self.scheduler.num_preemptions,
            "running": len(self.scheduler.running),
            "waiting": len(self.scheduler.waiting),
        }
