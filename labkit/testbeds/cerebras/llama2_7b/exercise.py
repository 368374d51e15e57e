"""The notebook's run step: a CS-3 log read, ``cszoo fit`` on a CS-3, or the portable LLaMA.

    from labkit.testbeds.cerebras import llama2_7b
    llama2_7b.plan(config)
    run = llama2_7b.run_exercise(config)
    llama2_7b.show(run)
"""

from __future__ import annotations

from typing import Optional

from labkit.interrupts import run_step
from labkit.params import Config
from labkit.plans import RunPlan
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.host import plan
from labkit.testbeds.cerebras.llama2_7b.log import read_log
from labkit.testbeds.cerebras.llama2_7b.portable import run_portable
from labkit.testbeds.cerebras.llama2_7b.spec import COURSE
from labkit.testbeds.cerebras.llama2_7b.testbed import run_on_cs3

__all__ = ["run_exercise"]


def _with_course_length(config: Config) -> Config:
    """A log seldom prints its sequence length: None stands for the course's data set's (4096 tokens)."""
    if config.sequence_length is not None:
        return config
    return config.replace(sequence_length=COURSE["sequence_length"])


@run_step
def run_exercise(config: Config, plan_: Optional[RunPlan] = None) -> Run:
    """Run the exercise where ``plan_`` (default: :func:`plan` now) says and return its record."""
    chosen = plan_ or plan(config)
    if chosen.path == "log":
        run = read_log(config.log_path, _with_course_length(config))
        for line in run.notes or []:
            print("Note: " + line)
        return run
    if chosen.path == "cs3":
        return run_on_cs3(config)  # None keeps the course's params file: only the student's changes are written
    return run_portable(config, chosen.device)
