"""The notebook's run step: a CS-3 log read, ``cszoo fit`` on a CS-3, or the portable LLaMA.

    from labkit.testbeds.cerebras import llama2_7b
    llama2_7b.plan(config)
    run = llama2_7b.run_exercise(config)
    llama2_7b.show(run)
"""

from __future__ import annotations

import importlib
from typing import Optional

from labkit.interrupts import run_step
from labkit.params import Config
from labkit.plans import RunPlan
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.plan import plan
from labkit.testbeds.cerebras.llama2_7b.portable import run_portable

__all__ = ["run_exercise"]


def _vendor(module: str):
    return importlib.import_module("labkit.testbeds.cerebras.llama2_7b." + module)


@run_step
def run_exercise(config: Config, plan_: Optional[RunPlan] = None) -> Run:
    """Run the exercise where ``plan_`` (default: :func:`plan` now) says and return its record."""
    chosen = plan_ or plan(config)
    if chosen.path == "log":
        run = _vendor("log").read_log(config.log_path, config)
        for line in run.notes or []:
            print("Note: " + line)
        return run
    if chosen.path == "cs3":
        return _vendor("testbed").run_on_cs3(config)
    return run_portable(config, chosen.device)
