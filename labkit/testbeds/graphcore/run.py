"""The MNIST exercise's run step: train and test here (IPU or portable backend), or read a testbed log.

    from labkit.testbeds import graphcore
    from labkit.testbeds.graphcore.run import run_mnist
    result = run_mnist(graphcore.SPEC.validate({"epochs": 1}))     # the MnistResult; run_exercise gives its Run

``device="auto"`` takes an IPU when PopTorch is importable and an IPU is attached, else CUDA,
else Apple MPS, else the CPU. The IPU path follows the course's ``mnist_poptorch.py`` and
PopTorch's documented API; it is verified only against a fake written from PopTorch's source
(PopTorch ships only inside Graphcore's Poplar SDK; the path has not yet run on a real IPU).
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import numpy as np

from labkit import interrupts, logs
from labkit.data import load_mnist
from labkit.interrupts import run_step
from labkit.params import Config
from labkit.results import Run
from labkit.testbeds.graphcore.placement import choose_device
from labkit.testbeds.graphcore.record import MnistResult
from labkit.testbeds.graphcore.spec import EXERCISE
from labkit.testbeds.graphcore.verdict import judge

__all__ = ["run_mnist"]


def _say(text: str) -> None:
    print(text)
    sys.stdout.flush()


def _limit(images: np.ndarray, labels: np.ndarray, limit: Optional[int]):
    return (images, labels) if limit is None else (images[:limit], labels[:limit])


@run_step
def run_mnist(config: Config, verbose: bool = True, device: Any = None) -> MnistResult:
    """Train and test the tutorial's network as ``config`` says, or read ``config.log_path``.

    ``device`` is where to train, as :func:`choose_device` chose it (None: choose now).

    An interrupt (Kernel -> Interrupt) ends training at the next step and returns the partial
    run, status ``interrupted``.
    """
    if config.log_path:
        return _from_log(config)
    device = choose_device(config.device) if device is None else device
    data = load_mnist(config.data_dir)
    notes = list(data.notes)
    say = _say if verbose else (lambda text: None)
    for note in notes:
        say(note)
    say(data.describe())
    train_images, train_labels = _limit(data.train_images, data.train_labels, config.max_train_samples)
    test_images, test_labels = _limit(data.test_images, data.test_labels, config.max_test_samples)
    step = config.batch_size * config.device_iterations
    if len(train_labels) < step:
        raise ValueError("The training set here has {} samples, fewer than one step of batch_size x "
                         "device_iterations = {}: lower batch_size or device_iterations.".format(len(train_labels), step))
    if len(test_labels) < config.test_batch_size:
        raise ValueError("The test set here has {} samples, fewer than test_batch_size = {}.".format(
            len(test_labels), config.test_batch_size))
    # PyTorch (and PopTorch for an IPU) load only here: reading a testbed log needs neither
    if device == "ipu":
        from labkit.testbeds.graphcore import ipu as backend
    else:
        from labkit.testbeds.graphcore import portable as backend
    sizes = {"data_source": data.source, "train_samples": int(len(train_labels)), "test_samples": int(len(test_labels))}
    measured: dict = {}  # an interrupt after the first step keeps what the backend measured
    interrupts.keep(lambda: _kept(backend.partial(config, device, measured), notes, sizes),
                    measuring=lambda: "training" in measured)
    result = backend.run(config, device, train_images, train_labels, test_images, test_labels, say, measured)
    # an interrupt in the summary ends the run here, kept (one in training already ended it)
    interrupts.phase(interrupts.DONE, check=result.run.status != "interrupted")
    _finish(result, notes, sizes)
    if result.run.status == "interrupted":
        say(result.history.interrupted)
    elif "test_accuracy" in result.run.metrics:  # absent when there was no test pass (a note says why)
        say("Accuracy on test set: {:0.2f}%".format(result.test_accuracy))
    for note in result.run.notes[len(notes):]:
        if not note.startswith("Interrupted "):  # said above, in one line
            say("Note: " + note)
    return result


def _finish(result: MnistResult, notes: list, sizes: dict) -> MnistResult:
    """The record's data notes and sizes, and the divergence verdict."""
    run = result.run
    run.notes[:0] = notes
    run.params.update(sizes)
    _judge(run)
    return result


def _kept(result: Optional[MnistResult], notes: list, sizes: dict) -> Optional[MnistResult]:
    return _finish(result, notes, sizes) if result is not None else None


def _judge(run: Run) -> None:
    """Diverged by the one rule (labkit.divergence), or complete with a note when near chance."""
    steps, per_step, epochs = (run.metrics.get("steps_per_epoch"), run.params.get("device_iterations"),
                               run.params.get("epochs"))
    updates = steps * per_step * epochs if all(isinstance(v, int) for v in (steps, per_step, epochs)) else None
    judge(run, updates=updates, learning_rate=run.params.get("learning_rate"), where="step")


def _from_log(config: Config) -> MnistResult:
    report = logs.read(config.log_path)
    runs = [r for r in report.runs if r.exercise == EXERCISE] or list(report.runs)
    if not runs:
        raise ValueError("log_path = {!r}: no run found in this log ({}).".format(
            config.log_path, "; ".join(report.notes) or "unrecognised format"))
    if len(runs) > 1:
        _say("This log holds {} runs; showing the last. labkit.logs.read(log_path).runs has them all.".format(len(runs)))
    run = runs[-1]
    _say("Read a {} run from {} ({} format).".format(run.exercise, config.log_path, report.format))
    if "test_accuracy" in run.metrics:
        _say("Accuracy on test set: {:0.2f}%".format(run.metrics["test_accuracy"]))
    for note in run.notes:
        _say("Note: " + note)
    return MnistResult(run=run)
