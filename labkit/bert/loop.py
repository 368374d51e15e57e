"""What a step loop measures (:class:`StepMeter`), for :func:`labkit.bert.train` and the LLaMA loop, and
samples/s as the Cerebras modelzoo reports them (:class:`RateTracker`; ``tests/bert`` checks it against
the rates printed in real CS-2 logs). The steady figures: docs/performance.md, "The steady rate". The
losses stay on the device and are read back (a device sync) only at step 1 and at each log step.

    meter = StepMeter(result, steps, log_steps, device, RateTracker(), "warmup_time", LogEntry)
    for number in range(1, steps + 1):
        report = meter.add(number, batch_size, train_step(model, next(batches), optimizer, device))
        if meter.diverged or stop.requested:
            break
    meter.end(stop)
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, List, Optional

from labkit.accelerator.launch import sync
from labkit.divergence import divergence_note, loss_divergence
from labkit.interrupts import where

__all__ = ["RateTracker", "StepMeter", "record_steps", "add_gpu_metrics"]


class RateTracker:
    """The modelzoo's ``RateTracker`` (inherited from torch_xla): ``add(n)`` after each step;
    ``rate()`` at each log step gives the window's rate smoothed with the previous report,
    ``(1 - s) * window + s * previous`` with ``s = 0.4``;
    ``global_rate()`` is every sample since ``start()`` over the time since then.
    ``clock`` is injectable for tests; ``now`` lets several readings share one instant.
    """

    def __init__(self, smoothing: float = 0.4, clock: Callable[[], float] = time.perf_counter):
        self.smoothing = smoothing
        self.clock = clock
        self.start()

    def start(self) -> None:
        self._start = self.clock()
        self._window_start = self._start
        self._window_count = 0.0
        self._done_count = 0.0
        self._last_rate: Optional[float] = None

    def add(self, count: float) -> None:
        self._window_count += count

    @property
    def count(self) -> float:
        return self._done_count + self._window_count

    def elapsed(self, now: Optional[float] = None) -> float:
        return (self.clock() if now is None else now) - self._start

    def rate(self, now: Optional[float] = None) -> float:
        """The smoothed rate of the window since the last call (ends the window)."""
        now = self.clock() if now is None else now
        delta = now - self._window_start
        if delta <= 0:
            return self._last_rate or 0.0
        current = self._window_count / delta
        smoothed = current if self._last_rate is None else (
            (1 - self.smoothing) * current + self.smoothing * self._last_rate)
        self._done_count += self._window_count
        self._window_count = 0.0
        self._window_start = now
        self._last_rate = smoothed
        return smoothed

    def global_rate(self, now: Optional[float] = None) -> float:
        delta = self.elapsed(now)
        return self.count / delta if delta > 0 else 0.0


def _read_losses(pending: List[Any], device: Any, losses: List[float]) -> None:
    import torch

    sync(device)
    losses.extend(float(x) for x in torch.stack(pending).cpu().tolist())


class StepMeter:
    """What a step loop measures, step by step: the loop runs the step, then hands its loss to :meth:`add`.

    ``result`` has ``losses``, ``step_times``, ``logs``, ``total_samples``, ``total_time``,
    ``steady_samples``, ``steady_seconds``, ``interrupted`` and ``first_step_field``.
    ``entry(step, loss, rate, global_rate, elapsed)`` builds a log step's report. ``tracker`` was
    started where the run's time begins; the meter's clock starts when it is made.
    """

    def __init__(self, result: Any, steps: int, log_steps: int, device: Any, tracker: RateTracker,
                 first_step_field: str, entry: Callable[[int, float, float, float, float], Any]) -> None:
        self.result, self.steps, self.log_steps, self.device = result, steps, log_steps, device
        self.tracker, self.first_step_field, self.entry = tracker, first_step_field, entry
        self.pending: List[Any] = []  # losses still on the device, read at log steps
        self.last = tracker.clock()
        self.warm_count = self.warm_elapsed = 0.0

    def add(self, number: int, size: int, loss: Any) -> Any:
        """Step ``number`` ran ``size`` samples to ``loss`` (a tensor on the device): count it, read the losses
        at step 1 and at each log step, and return that log step's report (None between log steps)."""
        result, tracker = self.result, self.tracker
        self.pending.append(loss)
        tracker.add(size)
        result.total_samples += size
        is_log = number % self.log_steps == 0 or number == self.steps
        if number == 1 or is_log:
            _read_losses(self.pending, self.device, result.losses)
            self.pending = []
        now = tracker.clock()
        result.step_times.append(now - self.last)
        self.last = now
        if number == 1:
            setattr(result, self.first_step_field, result.step_times[0])
            self.warm_count, self.warm_elapsed = tracker.count, tracker.elapsed(now)
        elif is_log:  # synced here, as at the end of step 1
            result.steady_samples = int(tracker.count - self.warm_count)
            result.steady_seconds = tracker.elapsed(now) - self.warm_elapsed
        if not is_log:
            return None
        report = self.entry(number, result.losses[-1], tracker.rate(now), tracker.global_rate(now),
                            tracker.elapsed(now))
        result.logs.append(report)
        return report

    @property
    def diverged(self) -> bool:
        """The last loss read is not finite: the loop ends here."""
        return bool(self.result.losses) and not math.isfinite(self.result.losses[-1])

    def end(self, stop: Any = None) -> Any:
        """The loop ended: the total time, the losses not read yet, and where an interrupt (``stop``, a
        :class:`labkit.interrupts.StopRequest`) ended it; returns ``result``."""
        result = self.result
        result.total_time = self.tracker.elapsed()
        if self.pending:  # losses of the steps before an interrupt, not read yet
            _read_losses(self.pending, self.device, result.losses)
            self.pending = []
        if stop is not None and stop.requested and len(result.losses) < self.steps:
            result.interrupted = where(step=len(result.losses), steps=self.steps) if result.losses else where()
        return result


def record_steps(run: Any, result: Any) -> None:
    """A measured loop's ``result`` in its exercise's ``run``: interrupted or diverged (the loop stops
    early only on a non-finite loss), and the loss and rate series."""
    if result.interrupted:
        run.mark_interrupted(result.interrupted, "its metrics cover only the steps before the interrupt.")
    elif loss_divergence(result.losses):
        run.status = "diverged"
        run.notes.append(divergence_note(result.losses, where="step", advice="Lower learning_rate."))
    run.add_series("loss", list(range(1, len(result.losses) + 1)), result.losses)
    run.add_series("rate", [e.step for e in result.logs], [e.rate for e in result.logs])
    run.add_series("global_rate", [e.step for e in result.logs], [e.global_rate for e in result.logs])


def add_gpu_metrics(run: Any, metrics: Any, peak_memory_bytes: int, flops_per_sample: float,
                    device: Any) -> None:
    """Peak memory, model TFLOP/s and MFU (against the GPU's named bf16 peak) of a CUDA run, from its
    steady rate: GlobalRate counts the first step's allocation, kernel choice or compile."""
    from labkit import accelerator

    metrics.add(run, "peak_memory_gb", round(peak_memory_bytes / 1e9, 2))
    if "steady_rate" not in run.metrics:  # one step: nothing after the warm-up to measure
        return
    flops = run.metrics["steady_rate"] * flops_per_sample
    figures, note = accelerator.utilisation(flops, accelerator.describe(device))
    for name, value in figures.items():
        metrics.add(run, name, value)
    if note:
        run.notes.append(note)
