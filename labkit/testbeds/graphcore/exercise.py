"""The MNIST notebook's plan and run steps (its show step is in ``report.py``)."""

from __future__ import annotations

from typing import Optional

from labkit import devices
from labkit.interrupts import run_step
from labkit.params import Config
from labkit.plans import RunPlan, device_why
from labkit.results import Run
from labkit.testbeds import last_run
from labkit.testbeds.graphcore.placement import choose_device, choose_precision
from labkit.testbeds.graphcore.record import MnistResult
from labkit.testbeds.graphcore.spec import EXERCISE

__all__ = ["plan", "run_exercise"]


def plan(config: Config) -> RunPlan:
    """Where the run will train (an IPU, CUDA, MPS or the CPU) and why, or the log it will read.

    ``device='ipu'`` without PopTorch or an attached IPU fails here, saying what to do.
    """
    if config.log_path:
        return RunPlan("log", "reads the log at {}".format(config.log_path),
                       "log_path is set: the run is read from that testbed log, nothing is trained")
    device = choose_device(config.device)
    precision = choose_precision(config.precision, device)  # a precision this device lacks fails here
    if device == "ipu":
        why = "device='ipu' was asked for" if config.device == "ipu" else \
            "device='auto' takes an IPU when PopTorch sees one attached, and it does"
        return RunPlan("testbed", "a Graphcore IPU, through PopTorch", why, device)
    why = device_why("device", config.device, device)
    if config.device == "auto":
        reason = ("PopTorch is installed but no IPU is attached" if devices.module_available("poptorch")
                  else "PopTorch is not importable here (it ships only in Graphcore's Poplar SDK)")
        why = "no IPU: {}; {}".format(reason, why)
    where = "portable PyTorch on {}".format(device)
    if getattr(device, "type", "") == "cuda" or config.precision != "auto":  # a CPU at its defaults: fp32, as always
        where += " in {}".format(precision.name)
        why += "; " + precision.why
    if getattr(device, "type", "") == "cuda":
        where += ", each step of {} micro-batches captured once as a CUDA graph and replayed".format(
            config.device_iterations)
    return RunPlan("portable", where, why, device)


_plan_step = plan  # run_exercise's argument is called plan too


@run_step
def run_exercise(config: Config, plan: Optional[RunPlan] = None) -> Run:
    """Train and test (:func:`labkit.testbeds.graphcore.train.train`) or read the log, as the plan says; the
    Run, with the MnistResult (the trained model, its step history) as ``run.details``."""
    chosen = plan if plan is not None else _plan_step(config)
    if config.log_path:
        run, _ = last_run(config.log_path, EXERCISE)
        if "test_accuracy" in run.metrics:
            print("Accuracy on test set: {:0.2f}%".format(run.metrics["test_accuracy"]), flush=True)
        for note in run.notes:
            print("Note: " + note, flush=True)
        run.details = MnistResult(run=run)
        return run
    from labkit.testbeds.graphcore.train import train  # PyTorch loads only here: reading a log needs none

    return train(config, chosen.device)
