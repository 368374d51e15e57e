"""Which target a configuration resolves to, the SambaNova notebook's plan and run steps (its show
step is :func:`report.show`), and the homework's runs.
"""

from __future__ import annotations

import os
from typing import List, Optional

from labkit.devices import DeviceError
from labkit.interrupts import run_step
from labkit.params import Config, ParameterError
from labkit.plans import RunPlan
from labkit.results import Run
from labkit.testbeds.sambanova.bert_large.portable import run_portable
from labkit.testbeds.sambanova.bert_large.spec import EXERCISE, describe_request
from labkit.testbeds.sambanova.bert_large.testbed import SambaFlow, read_log, run_testbed, sambanova_host

__all__ = ["AT_ALCF", "resolve_target", "plan", "run_exercise", "homework_runs"]

#: Where this exercise stands at ALCF, from ALCF's user guide (argonne-lcf/user-guides): the SN30
#: pages were removed on 2026-04-09 (its tag ``pre-sn-removal`` is the guide before), and what
#: remains of SambaNova is the SN40L inference service (docs/ai-testbed/sn40l_inference/).
AT_ALCF = ("ALCF no longer has the SN30: its pages left ALCF's user guide on 2026-04-09, and ALCF's SambaNova "
           "system is now the SN40L cluster Metis, which serves inference only (notebooks/sambanova/inference.ipynb). "
           "This exercise still runs portably, reads the training logs of 2024 SN30 runs, and submits its Slurm job "
           "only on a node of an SN30 system that has SambaFlow.")


def resolve_target(config: Config, setup: SambaFlow = SambaFlow()) -> str:
    """'testbed', 'portable' or 'log', saying why when the asked-for target is impossible."""
    target = config.target
    if target == "auto":
        if config.log_path is not None:
            return "log"
        return "testbed" if sambanova_host(setup) else "portable"
    if target == "log" and config.log_path is None:
        raise ParameterError(["target = 'log': give log_path, the training log (BertLarge.out) to read"], EXERCISE)
    if target == "testbed":
        if not sambanova_host(setup):
            raise DeviceError("target='testbed' needs a node of an SN30 system (sbatch on PATH and SambaFlow at {}); "
                              "none is here. {} Use target='portable' (or 'auto') to run torch.distributed ranks on "
                              "this machine, or target='log' with a BertLarge.out from a 2024 SN30 run.".format(
                                  setup.root, AT_ALCF))
        if config.model_size != "large":
            raise ParameterError(["model_size = {!r}: SambaFlow's compile configs in the course are for BERT-Large "
                                  "only; use model_size='large' on the testbed".format(config.model_size)], EXERCISE)
    return target


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
        where = "a Slurm job on this SN30 system: SambaFlow compiles (or reuses the PEF), then sbatch trains"
        why = asked + (" and this is a SambaNova node (sbatch and SambaFlow are here)"
                       if config.target == "auto" else "")
    else:
        where = "{} portable data-parallel rank(s) here (torch.distributed), device={!r}".format(
            config.ntasks, config.device)
        why = asked + (" and this is not a SambaNova node (no sbatch, or no SambaFlow at {})".format(setup.root)
                       if config.target == "auto" else "")
    return RunPlan(target, where, why, more=[AT_ALCF, "The 2024 course's Slurm request for these parameters:"]
                   + describe_request(config).splitlines())


@run_step
def run_exercise(config: Config, plan: Optional[RunPlan] = None) -> Run:
    """The notebook's run step: read the log, run the Slurm job on the testbed or the portable ranks
    here, where ``plan`` (default: :func:`resolve_target` now, as :func:`plan` decides) says."""
    target = plan.path if plan is not None else resolve_target(config)
    if target == "log":
        return read_log(config.log_path)
    if target == "testbed":
        return run_testbed(config)
    return run_portable(config)


def homework_runs(config: Config, first: Run) -> List[Run]:
    """``first``, one more run per ``config.sweep_ntasks`` value (same target and parameters, each a run step
    of its own), and the runs in ``config.compare_logs``."""
    runs = [first]
    for n in config.sweep_ntasks:
        changed = config.replace(ntasks=n, log_path=None,
                                 target="testbed" if first.source == "testbed" else "portable")
        runs.append(run_exercise(changed))
        if runs[-1].status == "interrupted":  # the student stopped it: no more runs
            break
    runs.extend(read_log(os.path.expanduser(p)) for p in config.compare_logs)
    return runs
