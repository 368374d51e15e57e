"""The notebook's plan and run steps: a CS-3 log read, ``cszoo fit`` on a CS-3, or the portable LLaMA.

A portable run that would take hours, or not fit in memory (LLaMA-2-7B at the course's batch on
a laptop), is refused by the plan, in one line, with the estimated time and a run that fits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

from labkit import devices, llm
from labkit.interrupts import run_step
from labkit.params import Config, ParameterError
from labkit.plans import RunPlan, device_why
from labkit.results import Run
from labkit.testbeds.cerebras import in_words, time_lines
from labkit.testbeds.cerebras.cluster import cluster_lines
from labkit.testbeds.cerebras.llama2_7b.cszoo import CS3_HELP, cs3_node, modelzoo_root, run_on_cs3
from labkit.testbeds.cerebras.llama2_7b.metrics import read_log
from labkit.testbeds.cerebras.llama2_7b.spec import (COURSE, EXERCISE, LONG_RUN_SECONDS, PORTABLE_DEFAULTS,
                                                     PORTABLE_SIZE, effective)
from labkit.testbeds.cerebras.llama2_7b.train import VOCAB_SIZE, train
from labkit.testbeds.cerebras.release import release_lines

__all__ = ["LlamaPlan", "plan", "run_exercise", "estimated_seconds"]


@dataclass(repr=False)
class LlamaPlan(RunPlan):
    """A :class:`labkit.plans.RunPlan`; a portable one holds ``steps``: the preset, precision and
    checkpointing chosen for the device and its measured time a step (None where nothing was measured)."""

    steps: Optional[llm.LlamaStepPlan] = None


def estimated_seconds(model_size: str, batch_size: int, sequence_length: int, steps: int, device: Any) -> float:
    """A portable run's time where nothing was measured (a model that does not fit here): 6 x parameters
    x tokens of arithmetic (plus attention) at a nominal speed of the device."""
    per_token = llm.flops_per_token(model_size, _portable_vocab(model_size), sequence_length)
    kind = getattr(device, "type", str(device))
    flops = {"cuda": 5e13, "mps": 5e12}.get(kind, 2e10 * (os.cpu_count() or 1))
    return per_token * batch_size * sequence_length * steps / flops


def _portable_vocab(model_size: str) -> int:
    return llm.LLAMA2_VOCAB_SIZE if model_size == "7b" else 2048


def _step_plan(config: Config, device: Any) -> Optional[llm.LlamaStepPlan]:
    """The measured choice for a portable run among the presets to try, largest first: the one asked for;
    for "auto", every preset on a CUDA GPU, PORTABLE_SIZE on a CPU or MPS. None on a CPU or MPS when the
    preset does not fit its memory (the plan refuses it without building anything)."""
    values = effective(config, "portable")
    if config.model_size != "auto":
        candidates = [config.model_size]
    elif device.type == "cuda":
        candidates = sorted(llm.MODEL_SIZES, key=lambda size: -llm.parameter_count(size, VOCAB_SIZE))
    else:
        candidates = [PORTABLE_SIZE]
    if device.type != "cuda":
        memory = llm.available_memory_bytes()
        if memory is not None and llm.training_bytes(candidates[0], _portable_vocab(candidates[0])) > memory:
            return None
    budget = None if config.allow_long_run else LONG_RUN_SECONDS
    try:
        return llm.plan_llama(candidates, VOCAB_SIZE, values["batch_size"], values["sequence_length"],
                              values["steps"], device, config.precision, budget_s=budget)
    except llm.NothingFitsHere as exc:
        raise ParameterError(["model_size = {!r}, batch_size = {}, sequence_length = {}: {}".format(
            config.model_size, values["batch_size"], values["sequence_length"], exc)], EXERCISE) from None


def _check_cost(config: Config, device: Any, steps: Optional[llm.LlamaStepPlan] = None) -> float:
    values = effective(config, "portable")
    size = steps.model_size if steps is not None else values["model_size"]
    if steps is not None:
        seconds = steps.seconds(values["steps"])
    else:
        seconds = estimated_seconds(size, values["batch_size"], values["sequence_length"], values["steps"], device)
    needed = llm.training_bytes(size, _portable_vocab(size))
    memory = llm.available_memory_bytes()
    too_big = steps is None and memory is not None and needed > memory
    if config.allow_long_run and not too_big or seconds <= LONG_RUN_SECONDS and not too_big:
        return seconds
    memory_text = ", and needs about {:.0f} GiB of memory for {:.0f} GiB here".format(
        needed / 2**30, memory / 2**30) if too_big else ""
    raise ParameterError([
        "model_size = {!r}, batch_size = {}, sequence_length = {}, steps = {}: on {} this portable training would "
        "take about {}{} ({}); the CS-3 runs the course's 200 steps in about 2 hours. Allowed here: "
        "something smaller, e.g. model_size='small', batch_size={}, sequence_length={}, steps={}; or read a CS-3 log "
        "with log_path{}.".format(size, values["batch_size"], values["sequence_length"],
                                  values["steps"], device, in_words(seconds), memory_text,
                                  "measured here: " + steps.measured if steps is not None else
                                  "a rough estimate: not measured, as it does not fit here",
                                  PORTABLE_DEFAULTS["batch_size"], PORTABLE_DEFAULTS["sequence_length"],
                                  PORTABLE_DEFAULTS["steps"], "" if too_big else "; or set allow_long_run=True")],
        EXERCISE)


def plan(config: Config) -> LlamaPlan:
    """Decide where ``config`` runs, before anything runs: :class:`labkit.devices.DeviceError` for a CS-3
    asked for and absent, ParameterError for a portable run that cannot finish in reasonable time."""
    if config.log_path:
        return LlamaPlan("log", "reads the CS-3 log at {} (nothing is trained)".format(config.log_path),
                       "log_path is set: the run is read from that log")
    why = ""
    if config.device in ("CSX", "auto"):
        missing = cs3_node(config.modelzoo_dir)
        if not missing and config.model_size in ("auto", "7b"):
            more = release_lines(modelzoo_root(config.modelzoo_dir)) + cluster_lines(
                config, config.batch_size or COURSE["batch_size"])
            return LlamaPlan("cs3", "the CS-3{}, with the course's `cszoo fit configs/params_llama2_7b.yaml`".format(
                "" if config.num_csx == 1 else " x {} (data parallel)".format(config.num_csx)),
                "device={!r}, and cszoo and the modelzoo's LLaMA are here".format(config.device),
                device="CSX", more=more)
        if config.device == "CSX":
            problem = "; ".join(missing) or "model_size = {!r}: the CS-3 path trains the course's 7b".format(
                config.model_size)
            raise devices.DeviceError("device='CSX' was asked for, but {}. {}".format(problem, CS3_HELP))
        why = "no CS-3 here ({}); ".format("; ".join(missing)) if missing else "model_size={!r}; ".format(
            config.model_size)
    device = devices.torch_device("auto" if config.device in ("CSX", "auto") else config.device)
    steps = _step_plan(config, device)
    seconds = _check_cost(config, device, steps)
    values = effective(config, "portable")
    where = "portable PyTorch on {} ({}): LLaMA {} preset, batch {} x {} tokens, {} steps".format(
        device, devices.device_name(device), steps.model_size, values["batch_size"], values["sequence_length"],
        values["steps"])
    why += device_why("device", config.device, device)
    if device.type != "cpu" or config.precision != "auto":
        where += " in " + steps.precision.name  # the default on a CPU needs no word
        why += "; " + steps.why()
    if config.model_size == "auto" and device.type == "cuda":
        why += "; model_size='auto': the largest preset that fits {} and trains within 2 hours".format(
            devices.device_name(device))
    more = time_lines(device, seconds, values["steps"], steps.measured)
    return LlamaPlan("portable", where, why, device=device, more=more, steps=steps)


_plan_step = plan  # run_exercise's argument is called plan too


@run_step
def run_exercise(config: Config, plan: Optional[RunPlan] = None) -> Run:
    """Read the log, train on the CS-3 (:func:`~.cszoo.run_on_cs3`) or train the portable LLaMA
    (:func:`~.train.train`, whose body is the loop), as ``plan`` (default: :func:`plan` now) says; the run."""
    chosen = plan if plan is not None else _plan_step(config)
    if chosen.path == "log":
        # a log seldom prints its sequence length: None stands for the course's data set's (4096 tokens)
        if config.sequence_length is None:
            config = config.replace(sequence_length=COURSE["sequence_length"])
        run = read_log(config.log_path, config)
        for line in run.notes or []:
            print("Note: " + line)
        return run
    if chosen.path == "cs3":
        return run_on_cs3(config)  # None keeps the course's params file: only the student's changes are written
    return train(config, chosen.device, steps=getattr(chosen, "steps", None))
