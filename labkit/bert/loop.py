"""The measured step loop that :func:`labkit.bert.train` and :func:`labkit.llm.train` share.

Both loops do, each step: take the next batch (its ``input_ids`` shape fills the result's size
fields once), run one optimizer step whose loss stays a detached tensor on the device, count
the batch's samples in the :class:`~labkit.bert.rates.RateTracker`, and read the losses back
(a device sync) only at step 1 and at each log step (every ``log_steps`` and the last). They
record every step's time, the first step's time alone (their warm-up), and at each log step a
report entry with the modelzoo's Rate, GlobalRate and elapsed time, passed to ``on_log``. Beside
those they keep the steady figures: the samples of the steps after the first and the time they
took, both between two device syncs (the end of step 1 and the last log step), so a GPU's queued
work is inside the time and the first step's allocation, kernel choice or compile is not. They
stop on a non-finite loss or on a :class:`labkit.interrupts.StopRequest`'s interrupt (a second
interrupt drops the step in progress), then read the losses not read yet and say where an
interrupt ended the run. What differs is passed in: the step, the report entry's class, the
name of the first-step field and of the size fields.

    result = TrainResult(...)
    run_steps(result, batches, steps, log_steps, lambda batch: train_step(model, batch, ...),
              LogEntry, device, RateTracker(), first_step_field="warmup_time")
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator, List, Mapping, Optional, Sequence

from labkit.bert.rates import RateTracker
from labkit.interrupts import where

__all__ = ["run_steps", "sync"]


def sync(device: Any) -> None:
    """Wait for the device's queued work (CUDA, MPS); nothing on the CPU."""
    import torch

    kind = getattr(device, "type", str(device))
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "mps" and hasattr(torch, "mps"):
        torch.mps.synchronize()


def _read_losses(pending: List[Any], device: Any, losses: List[float]) -> None:
    import torch

    sync(device)
    losses.extend(float(x) for x in torch.stack(pending).cpu().tolist())


def run_steps(result: Any, batches: Iterator[Mapping[str, Any]], steps: int, log_steps: int,
              step: Callable[[Mapping[str, Any]], Any], entry: Callable[[int, float, float, float, float], Any],
              device: Any, tracker: RateTracker, first_step_field: str,
              size_fields: Sequence[str] = ("batch_size",), on_log: Optional[Callable[[Any], None]] = None,
              progress: Any = None, close_progress: bool = False, stop: Any = None) -> Any:
    """Run ``steps`` steps of ``batches`` through ``step(batch)`` and fill ``result`` (returned).

    ``result`` has ``losses``, ``step_times``, ``logs``, ``total_samples``, ``total_time``,
    ``steady_samples``, ``steady_seconds``, ``interrupted``, ``first_step_field`` and
    ``size_fields`` (filled from the first batch's ``input_ids`` shape, one dimension each, e.g.
    ``("batch_size", "sequence_length")``).
    ``entry(step, loss, rate, global_rate, elapsed)`` builds a log step's report. ``tracker``
    was started where the run's time begins. ``progress``: anything with ``update(n)``, or None;
    ``close_progress`` closes it when the loop ends (a bar the caller made for this run).
    """
    pending: List[Any] = []  # losses still on the device, read at log steps
    last = tracker.clock()
    try:
        for number in range(1, steps + 1):
            batch = next(batches)
            dims = [int(n) for n in batch["input_ids"].shape]
            for name, n in zip(size_fields, dims):
                setattr(result, name, getattr(result, name) or n)
            size = dims[0]
            pending.append(step(batch))
            tracker.add(size)
            result.total_samples += size
            is_log = number % log_steps == 0 or number == steps
            if number == 1 or is_log:
                _read_losses(pending, device, result.losses)
                pending = []
            now = tracker.clock()
            result.step_times.append(now - last)
            last = now
            if number == 1:
                setattr(result, first_step_field, result.step_times[0])
                warm_count, warm_elapsed = tracker.count, tracker.elapsed(now)
            elif is_log:  # synced here, as at the end of step 1
                result.steady_samples = int(tracker.count - warm_count)
                result.steady_seconds = tracker.elapsed(now) - warm_elapsed
            if is_log:
                report = entry(number, result.losses[-1], tracker.rate(now), tracker.global_rate(now),
                               tracker.elapsed(now))
                result.logs.append(report)
                if on_log is not None:
                    on_log(report)
            if progress is not None:
                progress.update(1)
            if result.losses and not math.isfinite(result.losses[-1]):
                break
            if stop is not None and stop.requested and number < steps:
                break
    except KeyboardInterrupt as exc:  # a second interrupt: the step in progress is dropped
        if stop is None or not stop.interrupted_by(exc):
            raise
    finally:
        if close_progress and progress is not None:
            progress.close()
    result.total_time = tracker.elapsed()
    if pending:  # losses of the steps before an interrupt, not read yet
        _read_losses(pending, device, result.losses)
    if stop is not None and stop.requested and len(result.losses) < steps:
        result.interrupted = where(step=len(result.losses), steps=steps) if result.losses else where()
    return result
