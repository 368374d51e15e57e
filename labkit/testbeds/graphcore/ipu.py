"""The MNIST exercise's IPU backend: PopTorch, as the course's ``mnist_poptorch.py`` uses it.

Verified only against a fake written from PopTorch's source (tests/fakes/poptorch): PopTorch
ships inside the Poplar SDK and cannot be installed elsewhere, and this path has not yet run on
a real IPU. Kept thin: every call below is PopTorch's documented API, in the tutorial's order.

    opts = poptorch.Options().deviceIterations(n); opts.outputMode(poptorch.OutputMode.All)
    poptorch.DataLoader(opts, dataset, batch_size=..., shuffle=True, drop_last=True)
    poptorch.trainingModel(model_with_loss, opts, optimizer=torch.optim.SGD(...))
    training_model.detachFromDevice(); poptorch.inferenceModel(model, test_opts)
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Optional

import numpy as np
import torch

from labkit import interrupts
from labkit.params import Config
from labkit.progress import bar
from labkit.data.mnist import MEAN, STD
from labkit.testbeds.graphcore import train as training
from labkit.testbeds.graphcore.placement import poptorch_says, releasing
from labkit.testbeds.graphcore.training_bars import progress_callbacks
from labkit.testbeds.graphcore.record import MnistResult, cut_test_pass, finish_run
from labkit.testbeds.graphcore.train import StepRecord, TrainHistory

__all__ = ["run", "partial"]


def _dataset(images: np.ndarray, labels: np.ndarray) -> torch.utils.data.TensorDataset:
    x = torch.from_numpy(np.array(images, dtype=np.float32)).div_(255.0)
    x = x.sub_(MEAN).div_(STD).unsqueeze(1)
    return torch.utils.data.TensorDataset(x, torch.from_numpy(np.array(labels, dtype=np.int64)))


def run(config: Config, device: Any, train_images: np.ndarray, train_labels: np.ndarray,
        test_images: np.ndarray, test_labels: np.ndarray, say: Callable[[str], None],
        measured: Optional[Dict[str, Any]] = None) -> MnistResult:
    """Train and test on an IPU; ``measured`` (a dict) is filled as the run goes, for :func:`partial`."""
    import poptorch

    measured = {} if measured is None else measured

    say("Training on an IPU with PopTorch {}.".format(getattr(poptorch, "__version__", "")))
    model = training.build_model(config.seed, torch.device("cpu"))
    model = model.to(memory_format=torch.contiguous_format)
    say(repr(model))

    opts = poptorch.Options().deviceIterations(config.device_iterations)
    opts.outputMode(poptorch.OutputMode.All)  # every micro-batch's loss and predictions come back
    opts.randomSeed(config.seed)
    train_loader = poptorch.DataLoader(opts, _dataset(train_images, train_labels),
                                       batch_size=config.batch_size, shuffle=True, drop_last=True)
    optimizer = torch.optim.SGD(model.model.parameters(), lr=config.learning_rate)
    training_model = poptorch.trainingModel(model, opts, optimizer=optimizer)

    # Compile explicitly so graph compilation is timed apart from training (a first epoch that
    # includes it is the classic misreading of IPU speed).
    first_x, first_y = next(iter(train_loader))
    start = time.perf_counter()
    training_model.compile(first_x, first_y)
    compile_seconds = time.perf_counter() - start

    steps_per_epoch = len(train_loader)
    samples_per_step = config.batch_size * config.device_iterations
    history = TrainHistory(steps_per_epoch=steps_per_epoch, samples_per_epoch=steps_per_epoch * samples_per_step)
    on_step, on_epoch, close = progress_callbacks(config, steps_per_epoch, say)
    measured.update(history=history, model=model, tested=[], compile_seconds=compile_seconds,
                    environment=_how_it_ran(config, poptorch))
    step = 0
    interrupts.phase("epoch 1/{}".format(config.epochs), check=False)
    measured["training"] = True  # from here an interrupt keeps the steps
    try:
        with interrupts.graceful() as stop:
            try:
                for epoch in range(1, config.epochs + 1):
                    interrupts.phase("epoch {}/{}".format(epoch, config.epochs), check=False)
                    epoch_start = time.perf_counter()
                    for data, labels in train_loader:
                        step_start = time.perf_counter()
                        predictions, losses = training_model(data, labels)
                        with torch.no_grad():
                            correct = (predictions.argmax(1) == labels[-predictions.size(0):]).float().mean().item()
                            record = StepRecord(epoch, step + 1, torch.mean(losses).item(), 100.0 * correct)
                        step += 1
                        history.steady_seconds += time.perf_counter() - step_start
                        history.steady_samples += samples_per_step
                        history.steps.append(record)
                        on_step(record)
                        if stop.requested and step % steps_per_epoch:
                            break
                    if step % steps_per_epoch == 0:
                        history.epoch_seconds.append(time.perf_counter() - epoch_start)
                        on_epoch(epoch, history.epoch_seconds[-1])
                    if stop.requested:
                        break
            except KeyboardInterrupt as exc:  # a second interrupt: the step in progress is dropped
                if not stop.interrupted_by(exc):
                    raise
    finally:
        close()
    training_model.copyWeightsToHost()
    training_model.detachFromDevice()  # one IPU: release it before the inference model attaches
    if stop.requested:  # the student asked to stop: no test pass, the partial run as measured
        last = history.steps[-1] if history.steps else None
        history.interrupted = interrupts.where(last.epoch, config.epochs, (last.step - 1) % steps_per_epoch + 1,
                                               steps_per_epoch) if last else interrupts.where()
        run = finish_run(config, "ipu", history, None, float("nan"), "train_compile_time", compile_seconds,
                         source="testbed", extra_env=_how_it_ran(config, poptorch))
        return MnistResult(run=run, model=model.model, history=history)

    interrupts.phase("testing")
    test_opts = poptorch.Options()
    inference_model = poptorch.inferenceModel(model.model, test_opts)
    test_loader = poptorch.DataLoader(test_opts, _dataset(test_images, test_labels),
                                      batch_size=config.test_batch_size, shuffle=False, drop_last=True)
    measured["test_batches"] = len(test_loader)
    test_x, _ = next(iter(test_loader))
    # An interrupt ends the test pass at a batch; the IPU is released either way, and only if the
    # inference model got it.
    with releasing(inference_model):
        try:
            start = time.perf_counter()
            inference_model.compile(test_x)  # PopTorch acquires the IPU here
            test_compile_seconds = time.perf_counter() - start
        except poptorch.Error as error:  # the training is done and measured: keep it, say why there is no test
            return _untested(config, history, model, compile_seconds, poptorch, error, measured)
        start = time.perf_counter()
        with torch.no_grad():
            for data, labels in bar(test_loader, total=len(test_loader), desc="Testing", leave=False, unit="batch"):
                output = inference_model(data)
                measured["tested"].append((output.argmax(1) == labels).float().mean().item() * 100.0)
                interrupts.check()
        test_seconds = time.perf_counter() - start
    interrupts.phase("summary")
    batches = len(measured["tested"])
    accuracy = sum(measured["tested"]) / batches
    test_throughput = batches * config.test_batch_size / test_seconds
    say("Graph compilation: {:.1f} s for training and {:.1f} s for inference, reported separately. Training "
        "throughput: {:.0f} samples/s; test throughput: {:.0f} samples/s.".format(
            compile_seconds, test_compile_seconds, history.throughput, test_throughput))
    run = finish_run(config, "ipu", history, accuracy, test_throughput, "train_compile_time", compile_seconds,
                     source="testbed", extra_env=_how_it_ran(config, poptorch))
    run.add_metric("test_compile_time", round(test_compile_seconds, 4), "s")
    measured["result"] = MnistResult(run=run, model=model.model, history=history)
    return measured["result"]


def _untested(config: Config, history: TrainHistory, model: Any, compile_seconds: float, poptorch: Any,
              error: BaseException, measured: Dict[str, Any]) -> MnistResult:
    """The run when the inference model could not compile or get an IPU: the training figures,
    status ``incomplete``, and one sentence saying why there is no test accuracy."""
    run = finish_run(config, "ipu", history, None, float("nan"), "train_compile_time", compile_seconds,
                     source="testbed", extra_env=_how_it_ran(config, poptorch))
    run.status = "incomplete"
    run.notes.append("No test pass: PopTorch could not compile the inference model or attach it to an IPU ({}); "
                     "the training figures are kept.".format(poptorch_says(error)))
    measured["result"] = MnistResult(run=run, model=model.model, history=history)
    return measured["result"]


def partial(config: Config, device: Any, measured: Dict[str, Any]) -> Optional[MnistResult]:
    """What :func:`run` measured before an interrupt outside its training loop (in testing or the
    summary); None before the first step."""
    if "result" in measured:
        return measured["result"]
    history = measured.get("history")
    if history is None or not history.steps:
        return None
    tested = measured.get("tested") or []
    run = finish_run(config, "ipu", history, sum(tested) / len(tested) if tested else None, float("nan"),
                     "train_compile_time", measured["compile_seconds"], source="testbed",
                     extra_env=measured["environment"])
    cut_test_pass(run, tested, measured.get("test_batches") or 0, config.test_batch_size)
    return MnistResult(run=run, model=measured["model"].model, history=history)


def _how_it_ran(config: Config, poptorch: Any) -> Dict[str, Any]:
    """The environment an IPU run records: PopTorch's version and how steps ran (the portable run's keys)."""
    return {"device": "ipu", "poptorch": getattr(poptorch, "__version__", None), "micro_batch": config.batch_size,
            "accumulation": 1, "launch": "device iterations ({} micro-batches a call)".format(config.device_iterations)}
