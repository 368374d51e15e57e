"""The MNIST exercise's IPU backend: PopTorch's documented API, in the order of the course's
``mnist_poptorch.py``; the loop around it is :func:`labkit.testbeds.graphcore.train.train`'s. Verified
only against a fake written from PopTorch's source (docs/graphcore.md, IPU).
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any, Callable, Iterator, Optional, Tuple

import numpy as np
import torch

from labkit.data.mnist import MEAN, STD
from labkit.params import Config
from labkit.results import Run
from labkit.testbeds.graphcore.model import build_model
from labkit.testbeds.graphcore.placement import poptorch_says, releasing
from labkit.testbeds.graphcore.record import TrainHistory, finish_run

__all__ = ["Ipu"]


def _dataset(images: np.ndarray, labels: np.ndarray) -> torch.utils.data.TensorDataset:
    x = torch.from_numpy(np.array(images, dtype=np.float32)).div_(255.0)
    x = x.sub_(MEAN).div_(STD).unsqueeze(1)
    return torch.utils.data.TensorDataset(x, torch.from_numpy(np.array(labels, dtype=np.int64)))


class Ipu:
    """Each step through PopTorch on an IPU: what :func:`~labkit.testbeds.graphcore.train.train` asks of where
    it trains (:class:`~labkit.testbeds.graphcore.train.Portable` answers the same on plain PyTorch)."""

    warms_up = False  # the training graph is compiled before the first step, and timed apart

    def __init__(self, config: Config, device: Any, train_images: np.ndarray, train_labels: np.ndarray,
                 test_images: np.ndarray, test_labels: np.ndarray, history: TrainHistory,
                 say: Callable[[str], None]) -> None:
        import poptorch

        self.poptorch, self.config = poptorch, config
        self.test_set = _dataset(test_images, test_labels)
        self.untested = ""  # why there is no test pass, when the inference model could not get an IPU
        self.test_compile_seconds = 0.0
        say("Training on an IPU with PopTorch {}.".format(getattr(poptorch, "__version__", "")))
        self.model = build_model(config.seed, torch.device("cpu")).to(memory_format=torch.contiguous_format)
        say(repr(self.model))
        opts = poptorch.Options().deviceIterations(config.device_iterations)
        opts.outputMode(poptorch.OutputMode.All)  # every micro-batch's loss and predictions come back
        opts.randomSeed(config.seed)
        self.train_loader = poptorch.DataLoader(opts, _dataset(train_images, train_labels),
                                                batch_size=config.batch_size, shuffle=True, drop_last=True)
        optimizer = torch.optim.SGD(self.model.model.parameters(), lr=config.learning_rate)
        self.training_model = poptorch.trainingModel(self.model, opts, optimizer=optimizer)
        # Compile explicitly so graph compilation is timed apart from training (a first epoch that
        # includes it is the classic misreading of IPU speed).
        first_x, first_y = next(iter(self.train_loader))
        start = time.perf_counter()
        self.training_model.compile(first_x, first_y)
        self.compile_seconds = time.perf_counter() - start
        self.environment = {"device": "ipu", "poptorch": getattr(poptorch, "__version__", None),
                            "micro_batch": config.batch_size, "accumulation": 1,
                            "launch": "device iterations ({} micro-batches a call)".format(config.device_iterations)}

    def batches(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        """One epoch of PopTorch's DataLoader: each step's ``device_iterations`` micro-batches, shuffled."""
        return iter(self.train_loader)

    def step(self, batch: Tuple[torch.Tensor, torch.Tensor]) -> Tuple[float, float]:
        """One call of the training model; (the mean of its micro-batches' losses, its accuracy in %)."""
        data, labels = batch
        predictions, losses = self.training_model(data, labels)
        with torch.no_grad():
            correct = (predictions.argmax(1) == labels[-predictions.size(0):]).float().mean().item()
            return torch.mean(losses).item(), 100.0 * correct

    def trained(self) -> None:
        """The weights back to the host, and the one IPU released before the inference model attaches."""
        self.training_model.copyWeightsToHost()
        self.training_model.detachFromDevice()

    @contextlib.contextmanager
    def testing(self) -> Iterator[Iterator[float]]:
        """The test batches' accuracies (%) from the inference model, which holds the IPU until the block
        ends (also when an interrupt ends it); none when it cannot compile or get an IPU (``untested``)."""
        test_opts = self.poptorch.Options()
        inference_model = self.poptorch.inferenceModel(self.model.model, test_opts)
        test_loader = self.poptorch.DataLoader(test_opts, self.test_set, batch_size=self.config.test_batch_size,
                                               shuffle=False, drop_last=True)
        test_x, _ = next(iter(test_loader))
        with releasing(inference_model):
            try:
                start = time.perf_counter()
                inference_model.compile(test_x)  # PopTorch acquires the IPU here
                self.test_compile_seconds = time.perf_counter() - start
            except self.poptorch.Error as error:  # the training is done and measured: keep it, say why there is no test
                self.untested = ("No test pass: PopTorch could not compile the inference model or attach it to an "
                                 "IPU ({}); the training figures are kept.".format(poptorch_says(error)))
                yield iter(())
                return
            yield self._tested(inference_model, test_loader)

    @staticmethod
    def _tested(inference_model: Any, test_loader: Any) -> Iterator[float]:
        with torch.no_grad():
            for data, labels in test_loader:
                yield (inference_model(data).argmax(1) == labels).float().mean().item() * 100.0

    def summary(self, history: TrainHistory, test_throughput: float) -> str:
        return ("Graph compilation: {:.1f} s for training and {:.1f} s for inference, reported separately. Training "
                "throughput: {:.0f} samples/s; test throughput: {:.0f} samples/s.".format(
                    self.compile_seconds, self.test_compile_seconds, history.throughput, test_throughput))

    def record(self, history: TrainHistory, accuracy: Optional[float], test_throughput: float) -> Run:
        run = finish_run(self.config, "ipu", history, accuracy, test_throughput, "train_compile_time",
                         self.compile_seconds, source="testbed", extra_env=self.environment)
        if not math.isnan(test_throughput):  # a test pass that ran to its end: its graph's compile time too
            run.add_metric("test_compile_time", round(self.test_compile_seconds, 4), "s")
        if self.untested:
            run.status = "incomplete"
            run.notes.append(self.untested)
        return run
