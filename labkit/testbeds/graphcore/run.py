"""Graphcore: the PopTorch MNIST exercise, on an IPU or anywhere PyTorch runs.

Notebook: ``notebooks/graphcore/mnist.ipynb``. From a shell:

    papermill notebooks/graphcore/mnist.ipynb out.ipynb -p epochs 20
    srun --ipus=1 papermill notebooks/graphcore/mnist.ipynb out.ipynb    # on the testbed

From Python:

    from labkit.testbeds import graphcore
    result = graphcore.run_mnist(graphcore.MNIST_SPEC.validate({"epochs": 1}))

``device="auto"`` takes an IPU when PopTorch is importable and an IPU is attached, else CUDA,
else Apple MPS, else the CPU. The IPU path follows the course's ``mnist_poptorch.py`` and
PopTorch's documented API; it was verified only on the testbed (PopTorch ships only inside
Graphcore's Poplar SDK), and is tested here against a fake that speaks the same API.
"""

from __future__ import annotations

import sys

from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

from labkit import devices
from labkit.interrupts import run_step
from labkit.params import PATH, Config, Param, Spec, existing_file, usable_directory
from labkit.progress import bar, style
from labkit.results import Run

__all__ = ["MNIST_SPEC", "PRIMARY_METRICS", "MnistResult", "run_mnist", "choose_device", "model_summary", "POPTORCH_HELP"]

EXERCISE = "graphcore/mnist"
#: What a sweep's summary leads with: test accuracy, steady training throughput, steady epoch time.
PRIMARY_METRICS = ("test_accuracy", "train_throughput", "epoch_time")


def _fits_one_step(config: Config):
    step = config.batch_size * config.device_iterations
    if config.max_train_samples is not None and config.max_train_samples < step:
        return ("max_train_samples",
                "fewer samples than one step of batch_size x device_iterations = {} x {} = {}; "
                "allowed: at least {}, or lower batch_size or device_iterations".format(
                    config.batch_size, config.device_iterations, step, step))
    return None


def _fits_one_test_batch(config: Config):
    if config.max_test_samples is not None and config.max_test_samples < config.test_batch_size:
        return ("max_test_samples", "fewer samples than one test batch (test_batch_size = {}); allowed: at least {}".format(
            config.test_batch_size, config.test_batch_size))
    return None


MNIST_SPEC = Spec(
    EXERCISE,
    Param("learning_rate", float, 0.03, "SGD learning rate (no momentum)", min=0, min_exclusive=True, max=100),
    Param("epochs", int, 10, "passes over the training set", min=1, max=1000),
    Param("batch_size", int, 8, "micro-batch size: samples per weight update", min=1, max=60000),
    Param("test_batch_size", int, 80, "samples per test batch", min=1, max=10000),
    Param("device_iterations", int, 50, "micro-batches per step (PopTorch deviceIterations)", min=1, max=60000),
    Param("device", str, "auto", "where to train", choices=("auto", "ipu", "cuda", "mps", "cpu")),
    Param("seed", int, 0, "seeds weights, shuffling and dropout", min=0, max=2**32 - 1),
    Param("max_train_samples", int, None, "use only this many training samples", optional=True, min=1),
    Param("max_test_samples", int, None, "use only this many test samples", optional=True, min=1),
    Param("data_dir", PATH, None, "where MNIST is staged or cached", optional=True, check=usable_directory),
    Param("log_path", PATH, None, "read this testbed log instead of training", optional=True, check=existing_file),
    checks=[_fits_one_step, _fits_one_test_batch],
)

POPTORCH_HELP = (
    "PopTorch is not importable here. It ships only inside Graphcore's Poplar SDK: on a Graphcore "
    "testbed node, enable the SDK (`source <poplar_sdk>/enable`), create a virtual environment, "
    "`pip install <poplar_sdk>/poptorch-*.whl`, then `pip install -e <labkit checkout>` in it. "
    "Run the notebook as a job that owns an IPU: `srun --ipus=1 papermill notebooks/graphcore/mnist.ipynb out.ipynb`. "
    "Elsewhere use device='auto' (CUDA, Apple MPS or CPU)."
)


def _ipu_available() -> bool:
    if not devices.module_available("poptorch"):
        return False
    import poptorch

    return bool(poptorch.ipuHardwareIsAvailable())


def choose_device(requested: str) -> Any:
    """'ipu', or a torch device; see the module docstring for the order."""
    if requested == "ipu":
        if not devices.module_available("poptorch"):
            raise devices.DeviceError("device='ipu' was asked for, but " + POPTORCH_HELP)
        if not _ipu_available():
            raise devices.DeviceError(
                "device='ipu': PopTorch is installed but no IPU is attached to this process. On the "
                "Graphcore testbed, run the job under Slurm with `srun --ipus=1 papermill ...`.")
        return "ipu"
    if requested == "auto" and _ipu_available():
        return "ipu"
    return devices.torch_device(requested)


@dataclass
class MnistResult:
    """A finished run: its record, and for a local run the trained model and step history."""

    run: Run
    model: Any = None
    history: Any = None

    @property
    def test_accuracy(self) -> float:
        return float(self.run.metrics.get("test_accuracy", float("nan")))

    def table(self):
        """The metrics as a table with units."""
        return self.run.table()


def model_summary():
    """The tutorial's network, layer by layer, as a table (the total is the last row)."""
    import pandas as pd

    from labkit.testbeds.graphcore.model import Network, summary

    rows = summary(Network())
    rows.append({"layer": "total", "type": "", "output shape": "", "parameters": sum(r["parameters"] for r in rows)})
    return pd.DataFrame(rows).set_index("layer")


def _say(text: str) -> None:
    print(text)
    sys.stdout.flush()


def _limit(images: np.ndarray, labels: np.ndarray, limit: Optional[int]):
    return (images, labels) if limit is None else (images[:limit], labels[:limit])


@run_step
def run_mnist(config: Config, verbose: bool = True) -> MnistResult:
    """Train and test the tutorial's network as ``config`` says, or read ``config.log_path``.

    An interrupt (Kernel -> Interrupt) ends training at the next step and returns the partial
    run, status ``interrupted``.
    """
    if config.log_path:
        return _from_log(config)
    from labkit.data import load_mnist

    device = choose_device(config.device)
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
    if device == "ipu":
        from labkit.testbeds.graphcore import ipu as backend
    else:
        from labkit.testbeds.graphcore import portable as backend
    result = backend.run(config, device, train_images, train_labels, test_images, test_labels, say)
    run = result.run
    run.notes[:0] = notes
    run.params.update({"data_source": data.source, "train_samples": int(len(train_labels)),
                       "test_samples": int(len(test_labels))})
    _judge(run)
    if run.status == "interrupted":
        say(result.history.interrupted)
    else:
        say("Accuracy on test set: {:0.2f}%".format(result.test_accuracy))
    for note in run.notes[len(notes):]:
        if not note.startswith("Interrupted "):  # said above, in one line
            say("Note: " + note)
    return result


def _judge(run: Run) -> None:
    """Diverged by the one rule (labkit.divergence), or complete with a note when near chance."""
    from labkit.testbeds.graphcore.verdict import judge

    steps, per_step, epochs = (run.metrics.get("steps_per_epoch"), run.params.get("device_iterations"),
                               run.params.get("epochs"))
    updates = steps * per_step * epochs if all(isinstance(v, int) for v in (steps, per_step, epochs)) else None
    judge(run, updates=updates, learning_rate=run.params.get("learning_rate"), where="step")


def finish_run(config: Config, device: Any, history: Any, test_accuracy: Optional[float], test_throughput: float,
               warmup_key: str, warmup_seconds: float, source: str, extra_env: Optional[Dict[str, Any]] = None) -> Run:
    """The record both backends produce, so their runs sit in one table (``test_accuracy`` None:
    no test pass, as after an interrupt)."""
    run = Run(exercise=EXERCISE, source=source, params=config.to_dict())
    run.params["device"] = str(device)
    run.params["requested_device"] = config.device
    run.environment = devices.environment(None if device == "ipu" else device, extra_env)
    if getattr(history, "interrupted", ""):  # stopped by the student: what was measured so far
        run.mark_interrupted(history.interrupted, "its metrics cover only the steps before the interrupt, and there "
                                                  "was no test pass.")
        if not history.steps:
            return run
    last_epoch = [s for s in history.steps if s.epoch == history.steps[-1].epoch]
    steady_epoch = history.samples_per_epoch / history.throughput if history.throughput > 0 else float("nan")
    if test_accuracy is not None:
        run.add_metric("test_accuracy", round(test_accuracy, 4), "%")
    run.add_metric("final_loss", round(history.steps[-1].loss, 6))
    run.add_metric("train_accuracy", round(sum(s.accuracy for s in last_epoch) / len(last_epoch), 4), "%")
    run.add_metric("train_throughput", round(history.throughput, 2), "samples/s")
    if test_accuracy is not None:
        run.add_metric("test_throughput", round(test_throughput, 2), "samples/s")
    run.add_metric(warmup_key, round(warmup_seconds, 4), "s")
    run.add_metric("epoch_time", round(steady_epoch, 4), "s")
    if history.epoch_seconds:
        run.add_metric("first_epoch_time", round(history.epoch_seconds[0], 4), "s")
        run.add_metric("total_train_time", round(sum(history.epoch_seconds), 4), "s")
    run.add_metric("steps_per_epoch", history.steps_per_epoch)
    run.add_series("loss", [s.step for s in history.steps], [s.loss for s in history.steps])
    run.add_series("accuracy", [s.step for s in history.steps], [s.accuracy for s in history.steps])
    run.add_series("epoch_time", list(range(1, len(history.epoch_seconds) + 1)), history.epoch_seconds, x_label="epoch")
    return run


def progress_callbacks(config: Config, steps_per_epoch: int, say):
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


def _from_log(config: Config) -> MnistResult:
    from labkit import logs

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


