"""The whole exercise: the notebook's run step (:func:`run_exercise`, :func:`run_bert`) and the
homework's :func:`compare`.

    from labkit.testbeds import cerebras
    cerebras.plan(config)                          # the CS-2, the portable BERT, or a log, and why
    run = cerebras.run_exercise(config)            # a log read, the CS-2, or the portable BERT
    cerebras.show(run)
    runs = cerebras.compare(config, runs=[run])    # plus compare_logs and compare_batch_sizes
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from labkit.interrupts import run_step
from labkit.params import Config
from labkit.results import Run
from labkit.testbeds.cerebras.host import Plan, plan
from labkit.testbeds.cerebras.metrics import read_log
from labkit.testbeds.cerebras.modelzoo import run_modelzoo
from labkit.testbeds.cerebras.portable import run_portable

__all__ = ["run_exercise", "run_bert", "compare"]


@run_step
def run_bert(config: Config, chosen: Optional[Plan] = None, workdir: str = ".", log_path: Optional[str] = None) -> Run:
    """Run the exercise as ``config`` says (see :func:`plan`) and return its record."""
    chosen = chosen or plan(config)
    if chosen.path == "log":
        run = read_log(config.log_path, config)
        for line in (run.notes or []):
            print("Note: " + line)
        return run
    if chosen.path == "modelzoo":
        return run_modelzoo(config, chosen.stack, workdir)
    return run_portable(config, chosen.device, log_path=log_path)


@run_step
def run_exercise(config: Config, plan: Optional[Plan] = None) -> Run:
    """The notebook's run step: :func:`run_bert` where ``plan`` (default: :func:`plan` now) says."""
    return run_bert(config, plan)


@run_step
def compare(config: Config, chosen: Optional[Plan] = None, runs: Sequence[Run] = (), workdir: str = ".") -> List[Run]:
    """The homework's runs: ``runs`` already made, the ``compare_logs`` read, and one run per
    ``compare_batch_sizes`` entry trained here (on the CS-2 or the portable path); a batch size
    already trained in ``runs`` is not trained again."""
    found = list(runs)
    for path in config.compare_logs:
        found.append(read_log(path, config))
    trained_here = {run.params.get("batch_size") for run in runs if run.source != "log"}
    sizes = [size for size in config.compare_batch_sizes if size not in trained_here]
    if sizes:
        chosen = chosen or plan(config)
        if chosen.path == "log":  # the main run was read; where do the comparison runs train?
            chosen = plan(config.replace(log_path=None, compare_batch_sizes=[]), sizes=sizes)
        for size in sizes:
            if chosen.path == "modelzoo":
                found.append(run_modelzoo(config.replace(batch_size=size), chosen.stack, workdir))
            else:
                found.append(run_portable(config.replace(batch_size=size), chosen.device))
            if found[-1].status == "interrupted":  # the student stopped it: no more runs
                break
    return found
