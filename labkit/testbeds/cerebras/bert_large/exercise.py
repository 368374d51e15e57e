"""The notebook's plan and run steps (:func:`plan`, :func:`run_exercise`) and the homework's :func:`compare`.

A plan decides, it never trains: ``target="CSX"`` without the Cerebras stack, or a portable run
that would take hours, is refused here (see ``allow_long_run``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, List, Optional, Sequence

from labkit import bert, devices, interrupts
from labkit.interrupts import run_step
from labkit.params import Config, ParameterError
from labkit.plans import RunPlan, device_why
from labkit.results import Run
from labkit.testbeds.cerebras import in_words, time_lines
from labkit.testbeds.cerebras.bert_large.cs3 import bert_dir, check_cs3_template, cs3_missing, run_on_cs3
from labkit.testbeds.cerebras.bert_large.metrics import read_log
from labkit.testbeds.cerebras.bert_large.modelzoo import (CerebrasStack, cerebras_stack, check_template,
                                                          run_modelzoo)
from labkit.testbeds.cerebras.bert_large.portable import run_portable, step_plan
from labkit.testbeds.cerebras.bert_large.spec import CEREBRAS_HELP, EXERCISE, LONG_RUN_SECONDS
from labkit.testbeds.cerebras.cluster import cluster_lines
from labkit.testbeds.cerebras.release import release_lines

__all__ = ["BertLargePlan", "plan", "run_exercise", "compare"]


@dataclass(repr=False)
class BertLargePlan(RunPlan):
    """A :class:`labkit.plans.RunPlan` whose ``path`` is "log", "cs3" (``cszoo fit`` on a CS-3), "modelzoo" (the
    2024 course's run.py on a CS-2, with its ``stack``) or "portable" (with the ``steps`` :mod:`labkit.accelerator` chose and this machine's measured time)."""

    stack: Optional[CerebrasStack] = None
    steps: Optional[bert.StepPlan] = None


def plan(config: Config) -> BertLargePlan:
    """Decide where ``config`` runs, before anything runs: :class:`labkit.devices.DeviceError` for a CS-2 or
    GPU asked for and absent, ParameterError for a portable run that would take hours."""
    return _plan_for(config, None)


def _plan_for(config: Config, sizes: Optional[Sequence[int]]) -> BertLargePlan:
    """:func:`plan` for the batch sizes that will train (``None``: ``batch_size`` and ``compare_batch_sizes``)."""
    if config.log_path:
        return BertLargePlan("log", "reads the log at {} (a CS-2 run; nothing is trained)".format(config.log_path),
                             "log_path is set: the run is read from that log")
    why = ""
    if config.target in ("CSX", "auto"):
        missing = cs3_missing(config.modelzoo_dir)
        if not missing:
            check_cs3_template(config)
            root, folder = bert_dir(config.modelzoo_dir)
            where = "the CS-3{}, with ALCF's `cszoo fit configs/bert_large_MSL128_sampleds.yaml` in {}".format(
                "" if config.num_csx == 1 else " x {} (data parallel)".format(config.num_csx), folder)
            why = "target={!r}, and cszoo and the modelzoo's BERT are here".format(config.target)
            return BertLargePlan("cs3", where, why, device="CSX",
                                 more=release_lines(root) + cluster_lines(config, config.batch_size))
        stack = cerebras_stack(config.modelzoo_dir)
        if not stack.missing:
            check_template(config, stack)
            why = ("target={!r}, no cszoo, and the 2024 stack is here (cerebras_pytorch and the modelzoo's "
                   "run.py)".format(config.target))
            return BertLargePlan("modelzoo", "the CS-2 (the 2024 course's way), with `python run.py CSX` in {}".format(
                stack.bert_dir), why, stack=stack, more=release_lines(stack.modelzoo_dir) + cluster_lines(
                    config, config.batch_size))
        if config.target == "CSX":
            raise devices.DeviceError("target='CSX' was asked for, but neither Cerebras path is here: for the CS-3, "
                                      "{}; for the 2024 run.py, {}. {}".format(
                                          "; ".join(missing), "; ".join(stack.missing), CEREBRAS_HELP))
        why = "no CS-3 here ({}); ".format("; ".join(missing))
    device = devices.torch_device("auto" if config.target in ("CSX", "auto") else config.target)
    steps = step_plan(config, device)
    seconds = _check_cost(config, device, sizes, steps)
    why += device_why("target", config.target, device)
    where = "the portable BERT on {} ({})".format(device, devices.device_name(device))
    if device.type != "cpu" or config.precision != "auto" or steps.micro_batch.accumulation > 1:
        where += " in " + steps.precision.name  # the default on a CPU needs no word
        why += "; " + steps.why()
    more = time_lines(device, seconds, config.max_steps, steps.measured)
    return BertLargePlan("portable", where, why, device=device, more=more, steps=steps)


@run_step
def run_exercise(config: Config, plan: Optional[BertLargePlan] = None) -> Run:
    """The notebook's run step: read the log, train on the CS-3 or CS-2 or train the portable BERT, where ``plan``
    (default: :func:`plan` now) says; the run's record."""
    chosen = plan if plan is not None else _plan_for(config, None)
    if chosen.path == "log":
        run = read_log(config.log_path, config)
        for line in (run.notes or []):
            print("Note: " + line)
        return run
    if chosen.path == "cs3":
        return run_on_cs3(config)
    if chosen.path == "modelzoo":
        return run_modelzoo(config, chosen.stack)
    return run_portable(config, chosen.device, steps=chosen.steps)


@run_step
def compare(config: Config, chosen: Optional[BertLargePlan] = None, runs: Sequence[Run] = ()) -> List[Run]:
    """The homework's runs: ``runs`` already made, the ``compare_logs`` read, and one run per
    ``compare_batch_sizes`` entry trained here (on the CS-2 or the portable path), each a run step of
    its own; a batch size already trained in ``runs`` is not trained again."""
    found = list(runs)
    interrupts.keep(lambda: found or None)  # an interrupt keeps the runs made so far (each run keeps its own steps)
    for path in config.compare_logs:
        found.append(read_log(path, config))
    trained_here = {run.params.get("batch_size") for run in runs if run.source != "log"}
    sizes = [size for size in config.compare_batch_sizes if size not in trained_here]
    if sizes:
        chosen = chosen or plan(config)
        if chosen.path == "log":  # the main run was read; where do the comparison runs train?
            chosen = _plan_for(config.replace(log_path=None, compare_batch_sizes=[]), sizes)
        each = replace(chosen, steps=None)  # a portable run plans its own micro-batch for its batch size
        for size in sizes:
            found.append(run_exercise(config.replace(batch_size=size), each))
            if found[-1].status == "interrupted":  # the student stopped it: no more runs
                break
    return found


def _check_cost(config: Config, device: Any, sizes: Optional[Sequence[int]], steps: bert.StepPlan) -> float:
    """The measured estimate for every batch size that will train; refuses one over LONG_RUN_SECONDS
    (unless allow_long_run). The main batch's ``steps`` times the others' samples: the same time a sample."""
    if sizes is None:
        sizes = [config.batch_size] + list(config.compare_batch_sizes)
    seconds = sum(steps.seconds(b * config.max_steps) for b in sizes)
    if seconds > LONG_RUN_SECONDS and not config.allow_long_run:
        raise ParameterError([
            "model_size = {!r}, {}, max_steps = {}: on {} this portable training would take about {} "
            "(measured here: {}); the CS-2 does it in minutes. Allowed here: something smaller, e.g. model_size='tiny', "
            "batch_size=32, max_steps=100, log_steps=10; or read a CS-2 log with log_path; or set "
            "allow_long_run=True.".format(config.model_size, "batch_size = {}".format(sizes[0]) if len(sizes) == 1 else
                                          "batch sizes {}".format(list(sizes)), config.max_steps,
                                          device, in_words(seconds), steps.measured)], EXERCISE)
    return seconds

