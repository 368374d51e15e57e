"""The scaling study's plan and run steps (its show step is in ``report.py``).

The published study (``study.load_reference``) and the side-by-side speed-up tables are the
notebook's further sections; they take the local rows from ``run.details``.
"""

from __future__ import annotations

import os
from typing import Optional

from labkit import interrupts
from labkit.accelerator import describe, resolve_precision
from labkit.devices import torch_device
from labkit.interrupts import run_step
from labkit.params import Config
from labkit.plans import RunPlan
from labkit.results import Run
from labkit.testbeds.comparison.replicas import ipu_obstacle
from labkit.testbeds.comparison.study import allowed_replicas, as_run, resolve_device, study

__all__ = ["plan", "run_exercise"]


def plan(config: Config) -> RunPlan:
    """The device the replicas run on, which replica counts fit this machine, and why."""
    device = resolve_device(config.device)
    usable = allowed_replicas(config.replicas, device)
    if config.device != "auto":
        why = "device={!r} was asked for".format(config.device)
    else:
        why = "device='auto' takes IPUs when PopTorch sees one, else CUDA GPUs (NCCL), else CPU processes (gloo)"
    room = {"ipu": "IPUs", "cuda": "GPUs"}.get(device, "CPU cores ({})".format(os.cpu_count() or 1))
    more = ["Replicas: {} ({} configurations with micro-batches {})".format(
        usable, len(usable) * len(config.micro_batch_sizes), list(config.micro_batch_sizes))]
    skipped = [r for r in config.replicas if r not in usable]
    if device == "cuda":
        info = describe(torch_device("cuda"))
        why += "; " + resolve_precision("auto", info).why
        more.append("Each epoch is sized for the {} so that a timed epoch lasts at least 1 s ({} images would take "
                    "milliseconds); the images per epoch are recorded.".format(info.name, config.images_per_epoch))
        if info.count == 1:
            room = "GPUs (1: one replica is one GPU, as one IPU is one replica; NCCL runs one process per GPU " \
                   "where there are several)"
    if skipped:
        more.append("Skipped: replicas {}, more than this machine's {}.".format(skipped, room))
    if device == "ipu":  # what PopTorch cannot run, said before the run (their rows say it again)
        status = {(r, m): (ipu_obstacle(r, m, config.images_per_epoch) or ("",))[0]
                  for r in usable for m in config.micro_batch_sizes}
        refused = sorted({r for (r, m), said in status.items() if said == "cannot run"})
        too_big = ["{} x {}".format(r, m) for (r, m), said in status.items() if said == "too few images"]
        if refused:
            more.append("Replicas {}: not a power of 2, which PopTorch refuses to compile; their rows say so.".format(
                refused))
        if too_big:
            more.append("Replicas x micro-batch {}: more images a step than the {:,} per epoch, so PopTorch's "
                        "DataLoader gives no batch; their rows say so, nothing is compiled for them.".format(
                            ", ".join(too_big), config.images_per_epoch))
    where = "{} replica(s) of the {} model on {}".format(
        "/".join(str(r) for r in usable) or "no", config.model, device)
    return RunPlan("testbed" if device == "ipu" else "portable", where, why, device, more)


_plan_step = plan  # run_exercise's argument is called plan too


@run_step
def run_exercise(config: Config, plan: Optional[RunPlan] = None) -> Run:
    """Measure every configuration the plan allows: the Run of the local measurements, with the
    measurements themselves (a DataFrame, one row per configuration) as ``run.details``."""
    chosen = plan if plan is not None else _plan_step(config)
    # Phases: setup, configurations (the study lets the one in progress finish), summary. An interrupt
    # keeps the configurations measured; before the first one ends it keeps nothing.
    stop = interrupts.keep(lambda: None)
    stop.phase("configurations", check=False)
    local = study(config.replicas, config.micro_batch_sizes, config.images_per_epoch, config.epochs,
                  config.learning_rate, config.seed, chosen.device, config.model)
    stop.phase("summary", check=len(local) == 0)
    run = as_run(local, config)
    run.details = local
    return run

