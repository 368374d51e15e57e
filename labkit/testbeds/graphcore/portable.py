"""The MNIST exercise's portable backend: labkit's PyTorch loop on CUDA, MPS or CPU.

Phases (:mod:`labkit.interrupts`): setup, ``epoch N/M`` (epoch 1's first step is the warm-up), testing. An
interrupt after the first step keeps the steps, the finished epochs and, in testing, the
accuracy over the test batches seen (:func:`partial`).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import numpy as np
import torch

from labkit import devices, interrupts
from labkit.accelerator import TESTBED_PRECISION
from labkit.params import Config
from labkit.progress import bar
from labkit.testbeds.graphcore import train as training
from labkit.testbeds.graphcore.placement import choose_precision
from labkit.testbeds.graphcore.training_bars import progress_callbacks
from labkit.testbeds.graphcore.record import MnistResult, cut_test_pass, finish_run

__all__ = ["run", "partial"]


def run(config: Config, device: Any, train_images: np.ndarray, train_labels: np.ndarray,
        test_images: np.ndarray, test_labels: np.ndarray, say: Callable[[str], None],
        measured: Optional[Dict[str, Any]] = None) -> MnistResult:
    """Train and test; ``measured`` (a dict) is filled as the run goes, for :func:`partial`."""
    measured = {} if measured is None else measured
    precision = choose_precision(config.precision, device)
    measured["precision"] = precision.name
    say("Training on {} ({}) with labkit's portable PyTorch path (an IPU run uses PopTorch).".format(
        device, devices.device_name(device)))
    if device.type != "cpu" or config.precision != "auto":
        say("Precision: {}; the IPU trains in {}.".format(precision.why, TESTBED_PRECISION["ipu"]))
    model = training.build_model(config.seed, device)
    say(repr(model))
    x_train = training.to_tensor(train_images, device)
    y_train = torch.from_numpy(train_labels).to(device)
    x_test = training.to_tensor(test_images, device)
    y_test = torch.from_numpy(test_labels).to(device)
    steps_per_epoch = len(train_labels) // (config.batch_size * config.device_iterations)
    on_step, on_epoch, close = progress_callbacks(config, steps_per_epoch, say)
    measured.update(model=model, steps=[], epoch_seconds=[], tested=[], steps_per_epoch=steps_per_epoch)

    def step_done(record: Any) -> None:
        measured["steps"].append(record)
        interrupts.phase("epoch {}/{}".format(record.epoch, config.epochs), check=False)
        on_step(record)

    def epoch_done(epoch: int, seconds: float) -> None:
        measured["epoch_seconds"].append(seconds)
        if epoch < config.epochs:
            interrupts.phase("epoch {}/{}".format(epoch + 1, config.epochs), check=False)
        on_epoch(epoch, seconds)

    # the phase first: an interrupt that finds the run measuring finds it in epoch 1 (it keeps the warm-up step)
    interrupts.phase("epoch 1/{}".format(config.epochs), check=False)
    measured["training"] = True
    try:
        with interrupts.graceful() as stop:
            history = training.train(
                model, x_train, y_train, epochs=config.epochs, batch_size=config.batch_size,
                device_iterations=config.device_iterations, learning_rate=config.learning_rate,
                seed=config.seed, on_step=step_done, on_epoch=epoch_done, stop=stop,
                precision=precision)
    finally:
        close()
    measured["history"] = history
    if history.interrupted:  # the student asked to stop: no test pass, the partial run as measured
        run = finish_run(config, device, history, None, float("nan"), "warmup_time", history.warmup_seconds,
                         source="portable", extra_env=_how_it_ran(config, device, history), precision=precision.name)
        return MnistResult(run=run, model=model.model, history=history)
    interrupts.phase("testing")
    measured["test_batches"] = len(y_test) // config.test_batch_size
    test_bar = bar(total=measured["test_batches"], desc="Testing", leave=False, unit="batch")

    def tested(accuracy: float) -> None:
        measured["tested"].append(accuracy)
        test_bar.update(1)
        interrupts.check()  # an interrupt ends the test pass at this batch

    try:
        accuracy, test_throughput = training.evaluate(model, x_test, y_test, config.test_batch_size, on_batch=tested)
    finally:
        test_bar.close()
    interrupts.phase("summary")
    say("Training throughput: {:.0f} samples/s after a warm-up step of {:.2f} s (reported separately); "
        "test throughput: {:.0f} samples/s.".format(history.throughput, history.warmup_seconds, test_throughput))
    run = finish_run(config, device, history, accuracy, test_throughput, "warmup_time",
                     history.warmup_seconds, source="portable", extra_env=_how_it_ran(config, device, history),
                     precision=precision.name)
    measured["result"] = MnistResult(run=run, model=model.model, history=history)
    return measured["result"]


def partial(config: Config, device: Any, measured: Dict[str, Any]) -> Optional[MnistResult]:
    """What :func:`run` measured before an interrupt outside its training loop; None before the first step."""
    if "result" in measured:  # interrupted in the summary: everything was measured
        return measured["result"]
    history = measured.get("history")
    if history is None:  # interrupted inside training (a second interrupt): the steps the callbacks saw
        steps = measured.get("steps") or []
        if not steps:
            return None
        history = training.TrainHistory(steps=list(steps), epoch_seconds=list(measured.get("epoch_seconds") or []),
                                        steps_per_epoch=measured["steps_per_epoch"])
    model = measured.get("model")
    if model is not None:
        model.train()  # the test pass was cut short in eval mode
    tested = measured.get("tested") or []
    accuracy = sum(tested) / len(tested) if tested else None
    run = finish_run(config, device, history, accuracy, float("nan"), "warmup_time", history.warmup_seconds,
                     source="portable", extra_env=_how_it_ran(config, device, history),
                     precision=measured.get("precision", "fp32"))
    cut_test_pass(run, tested, measured.get("test_batches") or 0, config.test_batch_size)
    return MnistResult(run=run, model=getattr(model, "model", None), history=history)


def _how_it_ran(config: Config, device: Any, history: Any) -> Dict[str, Any]:
    """How the steps ran, for the run's environment: micro-batch and accumulation (an IPU's semantics:
    one update per micro-batch, none accumulated), the launch mode, the GPU's peak memory."""
    how: Dict[str, Any] = {"micro_batch": config.batch_size, "accumulation": 1, "launch": history.launch}
    if history.launch_error:  # the policy chose a CUDA graph and the capture failed: say why it runs eager
        how["launch_error"] = history.launch_error
    if device.type == "cuda":
        how["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated(device))
    return how
