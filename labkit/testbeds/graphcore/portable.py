"""The MNIST exercise's portable backend: labkit's PyTorch loop on CUDA, MPS or CPU."""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np
import torch

from labkit import devices, interrupts
from labkit.accelerator import TESTBED_PRECISION
from labkit.params import Config
from labkit.progress import bar
from labkit.testbeds.graphcore import train as training
from labkit.testbeds.graphcore.device import choose_precision
from labkit.testbeds.graphcore.progress_bars import progress_callbacks
from labkit.testbeds.graphcore.result import MnistResult, finish_run

__all__ = ["run"]


def run(config: Config, device: Any, train_images: np.ndarray, train_labels: np.ndarray,
        test_images: np.ndarray, test_labels: np.ndarray, say: Callable[[str], None]) -> MnistResult:
    precision = choose_precision(config.precision, device)
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
    try:
        with interrupts.graceful() as stop:
            history = training.train(
                model, x_train, y_train, epochs=config.epochs, batch_size=config.batch_size,
                device_iterations=config.device_iterations, learning_rate=config.learning_rate,
                seed=config.seed, on_step=on_step, on_epoch=on_epoch, stop=stop, precision=precision)
    finally:
        close()
    if history.interrupted:  # the student asked to stop: no test pass, the partial run as measured
        run = finish_run(config, device, history, None, float("nan"), "warmup_time", history.warmup_seconds,
                         source="portable", extra_env=_how_it_ran(config, device, history), precision=precision.name)
        return MnistResult(run=run, model=model.model, history=history)
    test_bar = bar(total=len(y_test) // config.test_batch_size, desc="Testing", leave=False, unit="batch")
    try:
        accuracy, test_throughput = training.evaluate(
            model, x_test, y_test, config.test_batch_size, on_batch=lambda _acc: test_bar.update(1))
    finally:
        test_bar.close()
    say("Training throughput: {:.0f} samples/s after a warm-up step of {:.2f} s (reported separately); "
        "test throughput: {:.0f} samples/s.".format(history.throughput, history.warmup_seconds, test_throughput))
    run = finish_run(config, device, history, accuracy, test_throughput, "warmup_time",
                     history.warmup_seconds, source="portable", extra_env=_how_it_ran(config, device, history),
                     precision=precision.name)
    return MnistResult(run=run, model=model.model, history=history)


def _how_it_ran(config: Config, device: Any, history: Any) -> Dict[str, Any]:
    """How the steps ran, for the run's environment: micro-batch and accumulation (an IPU's semantics:
    one update per micro-batch, none accumulated), the launch mode, the GPU's peak memory."""
    how: Dict[str, Any] = {"micro_batch": config.batch_size, "accumulation": 1, "launch": history.launch}
    if device.type == "cuda":
        how["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated(device))
    return how
