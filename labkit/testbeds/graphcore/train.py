"""The MNIST exercise's training run: the data, the network, the epochs, the test pass, the record.

One loop for both places it trains. On an IPU, PopTorch runs each step (:class:`~labkit.testbeds.
graphcore.ipu.Ipu`: its Options, DataLoader, trainingModel and inferenceModel); anywhere else,
:class:`Portable` runs it on plain PyTorch (CUDA, Apple MPS or CPU) with the IPU run's semantics:
plain SGD, one weight update per micro-batch of ``batch_size``, and one *step* per ``device_iterations``
micro-batches, the unit the host sees and logs (so a default epoch shows the same 150 steps as an
IPU log). The last incomplete step is dropped, as the tutorial's ``drop_last=True`` does.

Why the portable step is fast on a CPU, and what it does on a GPU: docs/graphcore.md (Speed, On a GPU).

Phases (:mod:`labkit.interrupts`): setup, ``epoch N/M`` (on plain PyTorch epoch 1's first step is the
warm-up), testing, summary. An interrupt after the first step keeps the steps, the finished epochs and,
in testing, the accuracy over the test batches seen.
"""

from __future__ import annotations

import contextlib
import functools
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np
import torch

from labkit import devices, interrupts
from labkit.accelerator import TESTBED_PRECISION, CapturedStep, Precision
from labkit.data import load_mnist
from labkit.data.mnist import MEAN, STD
from labkit.params import Config
from labkit.progress import bar, style
from labkit.results import Run
from labkit.testbeds.graphcore.model import TrainingModelWithLoss, build_model
from labkit.testbeds.graphcore.placement import choose_precision
from labkit.testbeds.graphcore.record import (MnistResult, StepRecord, TrainHistory, cut_test_pass, finish,
                                              finish_run)

__all__ = ["train", "Portable", "step_function", "to_tensor"]


def train(config: Config, device: Any, verbose: bool = True) -> Run:
    """Train and test the tutorial's network as ``config`` says on ``device`` ("ipu", or a torch device
    as :func:`~labkit.testbeds.graphcore.placement.choose_device` gives it); the Run, with the MnistResult (the
    trained model, its step history) as ``run.details``. An interrupt: see the module docstring."""
    say = functools.partial(print, flush=True) if verbose else (lambda text: None)
    (train_images, train_labels), (test_images, test_labels), notes, sizes = _data(config, say)
    samples_per_step = config.batch_size * config.device_iterations
    steps_per_epoch = len(train_labels) // samples_per_step
    test_batches = len(test_labels) // config.test_batch_size
    history = TrainHistory(steps_per_epoch=steps_per_epoch, samples_per_epoch=steps_per_epoch * samples_per_step)
    if device == "ipu":  # PopTorch loads only here: it ships only in the Poplar SDK
        from labkit.testbeds.graphcore.ipu import Ipu as Trainer
    else:
        Trainer = Portable
    trainer = Trainer(config, device, train_images, train_labels, test_images, test_labels, history, say)
    tested: List[float] = []  # each test batch's accuracy (%)
    done: Dict[str, MnistResult] = {}

    def kept() -> Optional[Run]:
        """What an interrupt outside the training loop keeps (in testing or the summary); None before the first step."""
        if "result" in done:
            return finish(done["result"], notes, sizes)
        if not history.steps:
            return None
        run = trainer.record(history, sum(tested) / len(tested) if tested else None, float("nan"))
        cut_test_pass(run, tested, test_batches, config.test_batch_size)
        return finish(MnistResult(run=run, model=trainer.model.model, history=history), notes, sizes)

    stop = interrupts.keep(kept, measuring=lambda: history.training)
    on_step, on_epoch, close = _progress_callbacks(config, steps_per_epoch, say)
    # the phase first: an interrupt that finds the run measuring finds it in epoch 1 (it keeps the warm-up step)
    stop.phase("epoch 1/{}".format(config.epochs), check=False)
    history.training = True
    try:
        for epoch in range(1, config.epochs + 1):
            epoch_start = time.perf_counter()
            for batch in trainer.batches():
                step_start = time.perf_counter()
                loss, step_accuracy = trainer.step(batch)
                elapsed = time.perf_counter() - step_start
                history.steps.append(StepRecord(epoch, len(history.steps) + 1, loss, step_accuracy))
                if len(history.steps) == 1 and trainer.warms_up:
                    history.warmup_seconds = elapsed
                else:
                    history.steady_seconds += elapsed
                    history.steady_samples += samples_per_step
                on_step(history.steps[-1])
                if stop.requested and len(history.steps) % steps_per_epoch:
                    break  # an interrupt: end at this step boundary (an epoch's end is reported below)
            else:
                history.epoch_seconds.append(time.perf_counter() - epoch_start)
                if epoch < config.epochs:
                    stop.phase("epoch {}/{}".format(epoch + 1, config.epochs), check=False)
                on_epoch(epoch, history.epoch_seconds[-1])
            if stop.requested:
                break
    except KeyboardInterrupt as exc:  # a second interrupt: the step in progress is dropped
        if not stop.interrupted_by(exc):
            raise
    finally:
        close()
    trainer.trained()

    accuracy, test_throughput = None, float("nan")  # no test pass: after an interrupt, or on an IPU it could not get
    if stop.requested:  # the student asked to stop: the partial run as measured
        last = history.steps[-1] if history.steps else None
        history.interrupted = stop.where(*((last.epoch, config.epochs, (last.step - 1) % steps_per_epoch + 1,
                                                  steps_per_epoch) if last else ()))
    else:
        stop.phase("testing")
        with trainer.testing() as batches, bar(total=test_batches, desc="Testing", leave=False, unit="batch") as shown:
            start = time.perf_counter()
            for batch_accuracy in batches:  # on plain PyTorch, or through the IPU's inference model
                tested.append(batch_accuracy)
                shown.update(1)
                stop.check()  # an interrupt ends the test pass at this batch
            test_seconds = time.perf_counter() - start
        if tested:  # else an IPU could not be had for the test pass: the record says why
            stop.phase("summary")
            accuracy, test_throughput = sum(tested) / len(tested), len(tested) * config.test_batch_size / test_seconds
            say(trainer.summary(history, test_throughput))
    result = MnistResult(run=trainer.record(history, accuracy, test_throughput), model=trainer.model.model,
                         history=history)
    done["result"] = result

    # an interrupt in the summary ends the run here, kept (one in training already ended it)
    stop.phase(interrupts.DONE, check=result.run.status != "interrupted")
    run = finish(result, notes, sizes)
    if run.status == "interrupted":
        say(history.interrupted)
    elif "test_accuracy" in run.metrics:  # absent when there was no test pass (a note says why)
        # the line `make lab` shows in a terminal: on the shipped sample it says so itself, not only a note
        on_sample = " (labkit's shipped sample of {:,} test digits: not comparable with full MNIST)".format(
            sizes["test_samples"]) if sizes["data_source"] == "sample" else ""
        say("Accuracy on test set: {:0.2f}%{}".format(result.test_accuracy, on_sample))
    for note in run.notes[len(notes):]:
        if not note.startswith("Interrupted "):  # said above, in one line
            say("Note: " + note)
    return run


def _data(config: Config, say: Callable[[str], None]):
    """The training and test (images, labels) as ``config`` limits them, the data's notes, and the sizes the
    record keeps; a set too small for one step or one test batch fails here, saying which."""
    data = load_mnist(config.data_dir)
    notes = list(data.notes)
    for note in notes:
        say(note)
    say(data.describe())
    limit, test_limit = config.max_train_samples, config.max_test_samples  # None: all
    train_images, train_labels = data.train_images[:limit], data.train_labels[:limit]
    test_images, test_labels = data.test_images[:test_limit], data.test_labels[:test_limit]
    samples_per_step = config.batch_size * config.device_iterations
    if len(train_labels) < samples_per_step:
        raise ValueError("The training set here has {} samples, fewer than one step of batch_size x "
                         "device_iterations = {}: lower batch_size or device_iterations.".format(
                             len(train_labels), samples_per_step))
    if len(test_labels) < config.test_batch_size:
        raise ValueError("The test set here has {} samples, fewer than test_batch_size = {}.".format(
            len(test_labels), config.test_batch_size))
    sizes = {"data_source": data.source, "train_samples": int(len(train_labels)), "test_samples": int(len(test_labels))}
    return (train_images, train_labels), (test_images, test_labels), notes, sizes


def _progress_callbacks(config: Config, steps_per_epoch: int, say):
    """Progress for both backends: in JupyterLab an epochs bar over a steps bar; as text (papermill,
    a terminal) one bar per epoch that stays, so the executed notebook reads like a log."""
    nested = style() == "widget"
    epochs_bar = bar(total=config.epochs, desc="Epochs", unit="epoch") if nested else None
    state = {"steps": None}

    def on_step(record) -> None:
        if state["steps"] is None:
            state["steps"] = bar(total=steps_per_epoch, desc="Epoch {}/{}".format(record.epoch, config.epochs),
                                 leave=not nested, unit="step")
        state["steps"].set_postfix_str("loss {:.4f} | accuracy {:.2f}%".format(record.loss, record.accuracy), refresh=False)
        state["steps"].update(1)

    def on_epoch(epoch: int, seconds: float) -> None:
        if state["steps"] is not None:
            state["steps"].close()
            state["steps"] = None
        if epochs_bar is not None:
            epochs_bar.update(1)
        say("Epoch {}/{}: {:.1f} s{}".format(epoch, config.epochs, seconds, " (includes warm-up)" if epoch == 1 else ""))

    def close() -> None:
        if state["steps"] is not None:
            state["steps"].close()
        if epochs_bar is not None:
            epochs_bar.close()

    return on_step, on_epoch, close


class Portable:
    """Each step on plain PyTorch, on the device as one tensor; what :func:`train` asks of where it trains
    (the IPU's :class:`~labkit.testbeds.graphcore.ipu.Ipu` answers the same)."""

    warms_up = True  # the first step allocates and selects kernels (on a GPU it is captured): kept apart

    def __init__(self, config: Config, device: torch.device, train_images: np.ndarray, train_labels: np.ndarray,
                 test_images: np.ndarray, test_labels: np.ndarray, history: TrainHistory,
                 say: Callable[[str], None]) -> None:
        self.config, self.device, self.history = config, device, history
        self.precision = choose_precision(config.precision, device)
        say("Training on {} ({}) with labkit's portable PyTorch path (an IPU run uses PopTorch).".format(
            device, devices.device_name(device)))
        if device.type != "cpu" or config.precision != "auto":
            say("Precision: {}; the IPU trains in {}.".format(self.precision.why, TESTBED_PRECISION["ipu"]))
        self.model = build_model(config.seed, device)
        say(repr(self.model))
        self.x_train, self.y_train = to_tensor(train_images, device), torch.from_numpy(train_labels).to(device)
        self.x_test, self.y_test = to_tensor(test_images, device), torch.from_numpy(test_labels).to(device)
        self.shuffle = torch.Generator().manual_seed(config.seed)
        params = [p for p in self.model.model.parameters() if p.requires_grad]
        self.model.train()
        self.step_once = step_function(self.model, self.x_train, self.y_train, params, config.batch_size,
                                       config.device_iterations, config.learning_rate, self.precision)
        self.captured: Optional[CapturedStep] = None

    def batches(self) -> Iterator[torch.Tensor]:
        """One epoch: each step's sample indices, in a fresh seeded shuffle."""
        per_step = self.config.batch_size * self.config.device_iterations
        order = torch.randperm(len(self.y_train), generator=self.shuffle).to(self.device)
        for step in range(self.history.steps_per_epoch):
            yield order[step * per_step: (step + 1) * per_step]

    def step(self, chosen: torch.Tensor) -> Tuple[float, float]:
        """One step; (its mean loss, its accuracy in %). The first call captures it (on a GPU: a CUDA graph)."""
        if self.captured is None:
            self.captured = CapturedStep(self.step_once, (chosen,), self.device, "auto", keep=(self.model,))
            self.history.launch, self.history.launch_why = self.captured.mode, self.captured.why
            self.history.launch_error = self.captured.capture_error
        loss, correct = self.captured(chosen)
        # One host read per step, as an IPU returns a step's outputs (.item() also syncs CUDA,
        # so the step's time is honest).
        return loss.item(), 100.0 * int(correct.item()) / len(chosen)

    def trained(self) -> None:
        """Nothing to hand back: the weights are where the test pass reads them."""

    @contextlib.contextmanager
    def testing(self) -> Iterator[Iterator[float]]:
        """The test batches' accuracies (%), as the tutorial computes them (the last partial batch dropped)."""
        network = self.model.model
        network.eval()
        try:
            yield self._tested(network)
        finally:
            network.train()  # also when an interrupt cut the test pass short

    def _tested(self, network: torch.nn.Module) -> Iterator[float]:
        size = self.config.test_batch_size
        for b in range(len(self.y_test) // size):
            with torch.no_grad():
                predicted = network(self.x_test[b * size:(b + 1) * size]).argmax(1)
                yield (predicted == self.y_test[b * size:(b + 1) * size]).float().mean().item() * 100.0

    def summary(self, history: TrainHistory, test_throughput: float) -> str:
        return ("Training throughput: {:.0f} samples/s after a warm-up step of {:.2f} s (reported separately); "
                "test throughput: {:.0f} samples/s.".format(history.throughput, history.warmup_seconds, test_throughput))

    def record(self, history: TrainHistory, accuracy: Optional[float], test_throughput: float) -> Run:
        # How the steps ran: micro-batch and accumulation (an IPU's semantics: one update per micro-batch,
        # none accumulated), the launch mode, the GPU's peak memory.
        how: Dict[str, Any] = {"micro_batch": self.config.batch_size, "accumulation": 1, "launch": history.launch}
        if history.launch_error:  # the policy chose a CUDA graph and the capture failed: say why it runs eager
            how["launch_error"] = history.launch_error
        if self.device.type == "cuda":
            how["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated(self.device))
        return finish_run(self.config, self.device, history, accuracy, test_throughput, "warmup_time",
                          history.warmup_seconds, source="portable", extra_env=how, precision=self.precision.name)


def to_tensor(images: np.ndarray, device: torch.device) -> torch.Tensor:
    """uint8 images -> normalised float N x 1 x 28 x 28, as ToTensor() + Normalize() compute it."""
    x = torch.from_numpy(np.array(images, dtype=np.float32)).div_(255.0)  # a copy: the arrays are read-only
    x = x.sub_(MEAN).div_(STD).unsqueeze(1)
    if device.type == "cpu":
        x = x.contiguous(memory_format=torch.channels_last)
    return x.to(device)


def step_function(model: TrainingModelWithLoss, images: torch.Tensor, labels: torch.Tensor, params: List[Any],
                  batch_size: int, device_iterations: int, learning_rate: float,
                  precision: Precision) -> Callable[[torch.Tensor], Tuple[torch.Tensor, torch.Tensor]]:
    """One step: ``device_iterations`` micro-batches of ``batch_size``, each a forward, a backward and a
    plain SGD update, for the sample indices ``chosen``; returns (mean loss, correct predictions) as
    tensors on the device, so the host reads them once per step (and a CUDA graph can capture it)."""
    device = images.device

    def step(chosen: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        outputs, losses = [], []
        with precision.step():
            for micro in range(device_iterations):
                idx = chosen[micro * batch_size: (micro + 1) * batch_size]
                with precision.autocast(device):
                    output, loss = model(images[idx], labels[idx])
                for p in params:
                    p.grad = None
                loss.backward()
                # Plain SGD, as torch.optim.SGD(lr=...) with no momentum computes it (p -= lr * grad), done
                # in one fused call: for micro-batches of 8 the optimizer's per-step Python bookkeeping
                # costs more than the update itself. A test checks the weights against torch.optim.SGD.
                with torch.no_grad():
                    torch._foreach_add_(params, [p.grad for p in params], alpha=-learning_rate)
                outputs.append(output.detach())
                losses.append(loss.detach())
        correct = (torch.cat(outputs).argmax(1) == labels[chosen]).sum()
        return torch.stack(losses).float().mean(), correct

    return step
