"""The SambaNova notebook's plan and run steps (its show step is :func:`report.show`).

    from labkit.testbeds.sambanova import bert_large
    config = bert_large.SPEC.from_notebook(globals())
    bert_large.plan(config)                    # the Slurm job, the portable ranks or a log, and why
    run = bert_large.run_exercise(config)      # a labkit.results.Run
    bert_large.show(run)                       # the metrics with their meaning, the notes, the loss
    results.record(run)
"""

from __future__ import annotations

from typing import Optional

from labkit.params import Config
from labkit.plans import RunPlan
from labkit.results import Run
from labkit.testbeds.sambanova.bert_large.host import SambaFlow, resolve_target
from labkit.testbeds.sambanova.bert_large.runs import run as run_where
from labkit.testbeds.sambanova.bert_large.spec import describe_request

__all__ = ["plan", "run_exercise"]


def plan(config: Config) -> RunPlan:
    """Where the run will happen (:func:`resolve_target`: the testbed, portable ranks or a log) and
    why, with the ``sbatch`` request the course's BertLarge.sh makes for these parameters."""
    setup = SambaFlow()
    target = resolve_target(config, setup)
    asked = "target={!r}".format(config.target)
    if target == "log":
        where = "reads the log at {}".format(config.log_path)
        why = asked + (" and log_path is set" if config.target == "auto" else "") + ": nothing is trained"
    elif target == "testbed":
        where = "a Slurm job on the SN30: SambaFlow compiles (or reuses the PEF), then sbatch trains"
        if config.target == "auto":
            why = asked + " and this is a SambaNova node (sbatch and SambaFlow are here)"
        else:
            why = asked
    else:
        where = "{} portable data-parallel rank(s) here (torch.distributed), device={!r}".format(
            config.ntasks, config.device)
        why = asked + (" and this is not a SambaNova node (no sbatch, or no SambaFlow at {})".format(setup.root)
                       if config.target == "auto" else "")
    return RunPlan(target, where, why, more=["The course's Slurm request for these parameters:"]
                   + describe_request(config).splitlines())


def run_exercise(config: Config, plan: Optional[RunPlan] = None) -> Run:
    """The notebook's run step: the testbed job, the portable ranks, or the log, as ``plan`` (default:
    :func:`plan` now, as :func:`runs.run` resolves it) says. :func:`runs.run` is the run step itself
    (it takes the SambaFlow paths and the polling a test needs)."""
    return run_where(config, target=plan.path if plan is not None else None)
