"""Grids times repeats: run a notebook over many configurations, each several times.

    labkit sweep notebooks/graphcore/mnist.ipynb -p epochs 4,10 -p learning_rate 0.01,0.03 \\
        --repeats 3 --out runs/mnist-lr --workers 2
    labkit sweep NOTEBOOK ... --executor parsl --config docs/parsl/slurm_testbed.py
    labkit results runs/mnist-lr                 # the summary again
    labkit.sweep.collect("runs/mnist-lr")        # its table as a DataFrame, in a notebook

Each repeat runs with a different ``seed`` (the notebook's default seed, +1, +2, ...), so
the notebook must declare ``seed``. Every run is executed into its own notebook under
``OUT/runs/``; its row is saved next to it as ``<run>.json``, written atomically once the
run has ended, which is what makes a sweep resumable: started again with the same
arguments it skips runs that have a row and redoes the others. ``OUT/sweep.json`` holds
the arguments; an ``--out`` from a different sweep is refused. Tables and plots are made
by :mod:`labkit.sweep.report`.

Parallel runs never collide: kernels use private sockets (see :mod:`labkit.execute`), and
with GPUs present each worker's kernels see one GPU (``CUDA_VISIBLE_DEVICES``). Each worker's
kernels get ``cores // workers`` threads, and each run's row says whether its timings were
contended (:mod:`labkit.sweep.worker_share`).

The package, one module per concern: :mod:`~labkit.sweep.planning` (the checked grid x repeats
and the sweep folder), :mod:`~labkit.sweep.task` (one run and its row), :mod:`~labkit.sweep.dispatch`
(local worker threads, resume), :mod:`~labkit.sweep.parsl_executor`, :mod:`~labkit.sweep.worker_share`
(each worker's thread share), :mod:`~labkit.sweep.tables` (results.csv and the statistics per
configuration), :mod:`~labkit.sweep.plots`, :mod:`~labkit.sweep.report` (summary.md, writing all
three), :mod:`~labkit.stats` (confidence intervals, Welch's t-test) and :mod:`~labkit.sweep.cli`.
"""

from labkit.sweep.parsl_executor import load_parsl_config
from labkit.sweep.planning import MANIFEST, SweepError, SweepPlan, is_sweep, plan
from labkit.sweep.dispatch import run_sweep
from labkit.sweep.tables import collect
from labkit.sweep.task import execute_task

__all__ = ["SweepError", "SweepPlan", "plan", "run_sweep", "is_sweep", "collect", "MANIFEST", "execute_task", "load_parsl_config"]
