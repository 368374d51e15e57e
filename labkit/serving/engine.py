"""The decoding loop of the local server: one thread owns the model and decodes every request.

The HTTP threads submit ``Generation`` objects and read what the engine puts on each one's
``events`` queue: ``("token", id)``, then ``("done", finish_reason)`` or ``("error", message)``.
Timings are the server's own (``time.perf_counter``), from the moment the request arrived.
"""

from __future__ import annotations

import collections
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Deque, Dict, List, Optional

import torch
import torch.nn.functional as F

from labkit.errors import LabkitError
from labkit.serving.model import Cache, ChatModel

__all__ = ["Engine", "Generation", "QueueFull", "EngineStopped"]


class QueueFull(LabkitError, RuntimeError):
    """More requests than the engine decodes at once plus ``max_queue`` waiting (HTTP 429)."""


class EngineStopped(LabkitError, RuntimeError):
    """The engine is shutting down and takes no new request."""


@dataclass
class Generation:
    """One completion to decode, and what happened to it (filled in by the engine)."""

    prompt_ids: List[int]
    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: Optional[int] = None
    ignore_eos: bool = False  # vLLM's extension: end-of-text is never chosen, every completion is max_tokens long
    arrival: float = field(default_factory=time.perf_counter)
    arrival_wall: float = field(default_factory=time.time)
    events: "queue.Queue" = field(default_factory=queue.Queue)
    cancelled: bool = False
    admitted_at: Optional[float] = None
    first_token_at: Optional[float] = None
    finished_at: Optional[float] = None
    token_times: List[float] = field(default_factory=list)
    batch_size_sum: int = 0
    finish_reason: Optional[str] = None
    generator: Optional[torch.Generator] = None

    @property
    def completion_tokens(self) -> int:
        return len(self.token_times)


def _sample(logits: torch.Tensor, gen: Generation, eos_id: int) -> int:
    """The next token: greedy at temperature 0, else sampled (nucleus ``top_p``) with the request's seed."""
    if gen.ignore_eos:
        logits = logits.clone()
        logits[eos_id] = float("-inf")
    if gen.temperature == 0:
        return int(torch.argmax(logits))
    if gen.generator is None:
        gen.generator = torch.Generator().manual_seed(gen.seed if gen.seed is not None else random.getrandbits(63))
    probs = F.softmax(logits / gen.temperature, dim=-1)
    if gen.top_p < 1.0:
        ordered, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(ordered, dim=-1) - ordered < gen.top_p  # the smallest set reaching top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], ordered[keep])
    return int(torch.multinomial(probs, 1, generator=gen.generator))


def _left_pad(cache: Cache, mask: torch.Tensor, length: int):
    """``cache`` and ``mask`` padded on the left to ``length`` positions."""
    extra = length - mask.shape[1]
    if extra == 0:
        return cache, mask
    padded = [(F.pad(k, (0, 0, extra, 0)), F.pad(v, (0, 0, extra, 0))) for k, v in cache]
    return padded, F.pad(mask, (extra, 0))


class Engine:
    """Decodes submitted ``Generation`` s on one thread, ``max_batch`` at a time."""

    def __init__(self, model: ChatModel, max_batch: int, max_queue: int):
        self.model = model
        self.max_batch = max_batch
        self.max_queue = max_queue
        self._waiting: Deque[Generation] = collections.deque()
        # Taken off _waiting but not yet in _rows (prefilled outside the lock): still in the server.
        self._admitting = 0
        self._empty_batch()
        self._wake = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="labkit-serving-engine", daemon=True)

    def start(self) -> "Engine":
        self._thread.start()
        return self

    def submit(self, gen: Generation) -> None:
        """Queue ``gen``; QueueFull when ``max_batch + max_queue`` requests are already in the server."""
        with self._wake:
            if self._stopping:
                raise EngineStopped("the server is shutting down")
            in_server = len(self._waiting) + self._decoding() + self._admitting
            if in_server >= self.max_batch + self.max_queue:
                raise QueueFull("{} requests are in the server ({} decoded at once, {} may wait): try again "
                                "later".format(in_server, self.max_batch, self.max_queue))
            self._waiting.append(gen)
            self._wake.notify()

    def cancel(self, gen: Generation) -> None:
        """The client of ``gen`` went away: out of the queue now, or out of the batch before the next step."""
        gen.cancelled = True  # the engine drops it before its next step
        with self._wake:
            if gen in self._waiting:
                self._waiting.remove(gen)
                self._finish(gen, None, "cancelled")

    def load(self) -> Dict[str, int]:
        """How many requests are decoding and waiting now."""
        with self._wake:
            return {"running": self._decoding(), "waiting": len(self._waiting)}

    def _decoding(self) -> int:
        # a row whose answer is complete stays in the batch until the next step drops it; its client
        # has everything, so it no longer counts against max_queue (a 429 would refuse a free place)
        return sum(1 for gen in self._rows if gen.finished_at is None)

    def stop(self, timeout: float = 5.0) -> None:
        """Take no new request, end every pending one with an error, and join the thread."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    # -- the loop (engine thread only) ---------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._stopping and not self._waiting and not self._rows:
                    self._wake.wait()
                if self._stopping:
                    pending = list(self._waiting) + self._rows
                    self._waiting.clear()
                    break
                admit = []
                while self._waiting and len(self._rows) + len(admit) < self.max_batch:
                    admit.append(self._waiting.popleft())
                self._admitting = len(admit)
            try:
                for gen in admit:
                    joins = self._admit(gen)  # the prefill, outside the lock
                    with self._wake:  # joining the batch and leaving the admitting count are one step:
                        if joins:     # a request submitted in between would count it twice (a false 429)
                            self._rows.append(gen)
                        self._admitting -= 1
                self._drop_finished()
                if self._rows:
                    self._step()
                    self._drop_finished()
            except Exception as error:  # the model failed: fail what was in flight, keep serving
                with self._wake:
                    self._admitting = 0
                for gen in admit + self._rows:
                    self._finish(gen, None, "{}: {}".format(type(error).__name__, error))
                self._empty_batch()
        for gen in pending:
            self._finish(gen, None, "the server is shutting down")

    def _empty_batch(self) -> None:
        """No row decoding: the batch's requests, cache, mask, positions and last tokens all empty."""
        self._rows: List[Generation] = []
        self._cache: Cache = []
        self._mask = torch.zeros(0, 0, dtype=torch.long)
        self._positions: List[int] = []
        self._last: List[int] = []

    def _emit(self, gen: Generation, token: int, now: float, batch: int) -> None:
        """Record ``token`` for ``gen`` (or its end: the end-of-text token, or the length limit)."""
        if token == self.model.eos_id:  # not a completion token: it counts in no average
            self._finish(gen, "stop")
            return
        gen.batch_size_sum += batch
        if gen.first_token_at is None:
            gen.first_token_at = now
        gen.token_times.append(now)
        gen.events.put(("token", token))
        length = len(gen.prompt_ids) + gen.completion_tokens
        if gen.completion_tokens >= gen.max_tokens or length >= self.model.context_length:
            self._finish(gen, "length")

    def _finish(self, gen: Generation, reason: Optional[str], error: Optional[str] = None) -> None:
        if gen.finished_at is not None:
            return
        gen.finished_at = time.perf_counter()
        gen.finish_reason = reason
        gen.events.put(("error", error) if error is not None else ("done", reason))

    def _admit(self, gen: Generation) -> bool:
        """Prefill ``gen`` and make its place in the batch's cache; True when it goes on to decode, and
        the caller then adds it to the rows."""
        if gen.cancelled:
            self._finish(gen, None, "cancelled")
            return False
        gen.admitted_at = time.perf_counter()
        logits, cache = self.model.prefill(gen.prompt_ids)
        token = _sample(logits, gen, self.model.eos_id)
        self._emit(gen, token, time.perf_counter(), len(self._rows) + 1)
        if gen.finished_at is not None:
            return False
        mask = torch.ones(1, len(gen.prompt_ids), dtype=torch.long)
        if not self._rows:
            self._cache, self._mask = cache, mask
        else:
            length = max(self._mask.shape[1], mask.shape[1])
            old_cache, old_mask = _left_pad(self._cache, self._mask, length)
            cache, mask = _left_pad(cache, mask, length)
            self._cache = [(torch.cat([k0, k1]), torch.cat([v0, v1])) for (k0, v0), (k1, v1) in zip(old_cache, cache)]
            self._mask = torch.cat([old_mask, mask])
        self._positions.append(len(gen.prompt_ids))
        self._last.append(token)
        return True

    def _step(self) -> None:
        logits, self._cache = self.model.decode_step(
            torch.tensor(self._last, dtype=torch.long), torch.tensor(self._positions, dtype=torch.long),
            self._cache, self._mask)
        self._mask = torch.cat([self._mask, torch.ones_like(self._mask[:, :1])], dim=1)
        now = time.perf_counter()
        batch = len(self._rows)
        for i, gen in enumerate(self._rows):
            self._positions[i] += 1
            token = _sample(logits[i], gen, self.model.eos_id)
            self._last[i] = token
            if not gen.cancelled:
                self._emit(gen, token, now, batch)

    def _drop_finished(self) -> None:
        """Rows whose request ended or was cancelled leave the batch; all-padding columns go too."""
        for gen in self._rows:
            if gen.cancelled:
                self._finish(gen, None, "cancelled")
        keep = [i for i, gen in enumerate(self._rows) if gen.finished_at is None]
        if len(keep) == len(self._rows):
            return
        if not keep:
            self._empty_batch()
            return
        index = torch.tensor(keep, dtype=torch.long)
        mask = self._mask.index_select(0, index)
        start = int((mask.sum(0) > 0).nonzero()[0])  # leading columns that are padding in every row
        self._mask = mask[:, start:]
        self._cache = [(k.index_select(0, index)[:, :, start:], v.index_select(0, index)[:, :, start:])
                       for k, v in self._cache]
        self._rows = [self._rows[i] for i in keep]
        self._positions = [self._positions[i] for i in keep]
        self._last = [self._last[i] for i in keep]
