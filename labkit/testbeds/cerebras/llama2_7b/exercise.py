"""The notebook's plan and run steps: a CS-3 log read, ``cszoo fit`` on a CS-3, or the portable LLaMA.

    from labkit.testbeds.cerebras import llama2_7b
    llama2_7b.plan(config)          # Where: ... / Why: ...   (a labkit.plans.RunPlan)
    run = llama2_7b.run_exercise(config)
    llama2_7b.show(run)

A portable run that would take hours, or not fit in memory (LLaMA-2-7B at the course's batch on
a laptop), is refused by the plan, in one line, with the estimated time and a run that fits.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from labkit import devices, llm
from labkit.interrupts import run_step
from labkit.params import Config, ParameterError
from labkit.plans import RunPlan, device_why
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.host import CS3_HELP, cs3_node
from labkit.testbeds.cerebras.llama2_7b.log import read_log
from labkit.testbeds.cerebras.llama2_7b.portable import run_portable
from labkit.testbeds.cerebras.llama2_7b.spec import COURSE, EXERCISE, LONG_RUN_SECONDS, PORTABLE_DEFAULTS, effective
from labkit.testbeds.cerebras.llama2_7b.testbed import run_on_cs3

__all__ = ["plan", "run_exercise", "estimated_seconds"]


def estimated_seconds(model_size: str, batch_size: int, sequence_length: int, steps: int, device: Any) -> float:
    """A rough, deliberately optimistic time for a portable run: 6 x parameters x tokens of
    arithmetic (plus attention), at a speed typical of the device."""
    config = llm.model_config(model_size, _portable_vocab(model_size))
    per_token = 6 * llm.parameter_count(model_size, config.vocab_size) + \
        12 * config.num_hidden_layers * config.hidden_size * sequence_length
    kind = getattr(device, "type", str(device))
    flops = {"cuda": 5e13, "mps": 5e12}.get(kind, 2e10 * (os.cpu_count() or 1))
    return per_token * batch_size * sequence_length * steps / flops


def _portable_vocab(model_size: str) -> int:
    """The vocabulary a portable run of ``model_size`` trains with (the 7B keeps LLaMA-2's)."""
    return llm.LLAMA2_VOCAB_SIZE if model_size == "7b" else 2048


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            return "{:.0f} {}".format(seconds / size, unit)
    return "{:.0f} seconds".format(seconds)


def _check_cost(config: Config, device: Any) -> None:
    values = effective(config, "portable")
    seconds = estimated_seconds(values["model_size"], values["batch_size"], values["sequence_length"],
                                values["steps"], device)
    needed = llm.training_bytes(values["model_size"], _portable_vocab(values["model_size"]))
    memory = llm.available_memory_bytes()
    too_big = memory is not None and needed > memory
    if config.allow_long_run and not too_big or seconds <= LONG_RUN_SECONDS and not too_big:
        return
    memory_text = ", and needs about {:.0f} GiB of memory for {:.0f} GiB here".format(
        needed / 2**30, memory / 2**30) if too_big else ""
    raise ParameterError([
        "model_size = {!r}, batch_size = {}, sequence_length = {}, steps = {}: on {} this portable training would "
        "take about {}{} (a rough estimate); the CS-3 runs the course's 200 steps in about 2 hours. Allowed here: "
        "something smaller, e.g. model_size='small', batch_size={}, sequence_length={}, steps={}; or read a CS-3 log "
        "with log_path{}.".format(values["model_size"], values["batch_size"], values["sequence_length"],
                                  values["steps"], device, _duration(seconds), memory_text,
                                  PORTABLE_DEFAULTS["batch_size"], PORTABLE_DEFAULTS["sequence_length"],
                                  PORTABLE_DEFAULTS["steps"], "" if too_big else "; or set allow_long_run=True")],
        EXERCISE)


def plan(config: Config) -> RunPlan:
    """Decide where ``config`` runs, before anything runs.

    ``device='CSX'`` without ``cszoo`` and the modelzoo raises :class:`labkit.devices.DeviceError`
    saying what is missing; a portable run that cannot finish in reasonable time raises
    ParameterError."""
    if config.log_path:
        return RunPlan("log", "reads the CS-3 log at {} (nothing is trained)".format(config.log_path),
                       "log_path is set: the run is read from that log")
    why = ""
    if config.device in ("CSX", "auto"):
        missing = cs3_node(config.modelzoo_dir)
        if not missing and config.model_size in ("auto", "7b"):
            return RunPlan("cs3", "the CS-3, with the course's `cszoo fit configs/params_llama2_7b.yaml`",
                           "device={!r}, and cszoo and the modelzoo's LLaMA are here".format(config.device),
                           device="CSX")
        if config.device == "CSX":
            problem = "; ".join(missing) or "model_size = {!r}: the CS-3 path trains the course's 7b".format(
                config.model_size)
            raise devices.DeviceError("device='CSX' was asked for, but {}. {}".format(problem, CS3_HELP))
        why = "no CS-3 here ({}); ".format("; ".join(missing)) if missing else "model_size={!r}; ".format(
            config.model_size)
    device = devices.torch_device("auto" if config.device in ("CSX", "auto") else config.device)
    _check_cost(config, device)
    values = effective(config, "portable")
    where = "portable PyTorch on {} ({}): LLaMA {} preset, batch {} x {} tokens, {} steps".format(
        device, devices.device_name(device), values["model_size"], values["batch_size"], values["sequence_length"],
        values["steps"])
    return RunPlan("portable", where, why + device_why("device", config.device, device), device=device)


_plan_step = plan  # run_exercise's argument is called plan too


def _with_course_length(config: Config) -> Config:
    """A log seldom prints its sequence length: None stands for the course's data set's (4096 tokens)."""
    if config.sequence_length is not None:
        return config
    return config.replace(sequence_length=COURSE["sequence_length"])


@run_step
def run_exercise(config: Config, plan: Optional[RunPlan] = None) -> Run:
    """Run the exercise where ``plan`` (default: :func:`plan` now) says and return its record."""
    chosen = plan if plan is not None else _plan_step(config)
    if chosen.path == "log":
        run = read_log(config.log_path, _with_course_length(config))
        for line in run.notes or []:
            print("Note: " + line)
        return run
    if chosen.path == "cs3":
        return run_on_cs3(config)  # None keeps the course's params file: only the student's changes are written
    return run_portable(config, chosen.device)
