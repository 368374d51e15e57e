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
from labkit.testbeds.cerebras import cszoo
from labkit.testbeds.cerebras.llama2_7b.host import plan
from labkit.testbeds.cerebras.llama2_7b.log import read_log
from labkit.testbeds.cerebras.llama2_7b.portable import run_portable
from labkit.testbeds.cerebras.llama2_7b.spec import COURSE
from labkit.testbeds.cerebras.llama2_7b.testbed import run_on_cs3

__all__ = ["run_exercise", "cs3_config"]


def cs3_config(config: Config) -> Config:
    """``config`` for ``cszoo fit``: a ``batch_size`` or ``steps`` left at None takes the value the
    course's params file already has, so the file is written with the student's changes only."""
    missing = [name for name in ("batch_size", "steps") if config[name] is None]
    if not missing:
        return config
    with open(cszoo.course_params_file(config.modelzoo_dir)) as f:
        found = cszoo.params_values(f.read())
    return config.replace(**{name: found[name] for name in missing if found.get(name) is not None})


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
        return run_on_cs3(cs3_config(config), modelzoo_dir=config.modelzoo_dir)
    return run_portable(config, chosen.device)
