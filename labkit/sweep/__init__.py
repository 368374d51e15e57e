"""Grids times repeats: run a notebook over many configurations, each several times.

    labkit sweep notebooks/graphcore/mnist.ipynb -p epochs 4,10 -p learning_rate 0.01,0.03 \\
        --repeats 3 --out runs/mnist-lr --workers 2
    labkit sweep NOTEBOOK ... --executor parsl --config docs/parsl/slurm_testbed.py
    labkit results runs/mnist-lr                 # the summary again
    labkit.sweep.collect("runs/mnist-lr")        # its table as a DataFrame, in a notebook

Each repeat runs with its own ``seed`` (so the notebook must declare one); each run's row is
saved atomically once it ended, so the same command again resumes. docs/sweeps.md tells the rest;
docs/architecture.md lists the modules.
"""

from labkit.sweep.parsl_executor import load_parsl_config
from labkit.sweep.planning import MANIFEST, SweepError, SweepPlan, is_sweep, plan
from labkit.sweep.dispatch import run_sweep
from labkit.sweep.report import ReportNotWritten
from labkit.sweep.tables import collect
from labkit.sweep.task import execute_task

__all__ = ["SweepError", "SweepPlan", "plan", "run_sweep", "is_sweep", "collect", "MANIFEST", "execute_task",
           "load_parsl_config", "ReportNotWritten"]
