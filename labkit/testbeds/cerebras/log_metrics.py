"""The metrics the modelzoo log reader gives, whatever the model: both Cerebras exercises' tables hold them.

    add_log_metric(run, "global_rate", 33.1)       # run.add_metric("global_rate", 33.1, "samples/s")
"""

from __future__ import annotations

from typing import Any, Tuple

from labkit.metrics import Metric, MetricTable
from labkit.results import Run

__all__ = ["LOG_METRICS", "TOKENS_PER_S_UNIT", "add_log_metric"]

#: The log reader's metrics, in the order the tables list them.
LOG_METRICS: Tuple[Metric, ...] = (
    Metric("global_rate", "samples/s", "the modelzoo's GlobalRate at the last logged step: samples per second "
                                       "averaged since the first step", timing=True),
    Metric("last_rate", "samples/s", "the modelzoo's Rate at the last logged step: over the last interval only",
           timing=True),
    Metric("min_rate", "samples/s", "the lowest Rate logged", timing=True),
    Metric("max_rate", "samples/s", "the highest Rate logged", timing=True),
    Metric("samples_per_s", "samples/s", "samples / train_seconds of the 'Processed' line", timing=True),
    Metric("samples", "samples", "samples trained on, from 'Processed N (training) sample(s) in T seconds'"),
    Metric("train_seconds", "s", "seconds the 'Processed' line gives; when they exceed the steps' own span (CS-3 "
                                 "logs: set-up and checkpoint saves), a note says so", timing=True),
    Metric("steps", "", "training steps run (the last step logged)"),
    Metric("final_loss", "", "training loss at the last logged step"),
    Metric("compile_estimated_rate", "samples/s", "the compiler's own estimate of the run's speed ('Compile estimated "
                                                  "performance: N samples/sec', a fresh compile only): a prediction, "
                                                  "shown beside the measured GlobalRate", timing=True),
    Metric("compile_s", "s", "seconds the compile job took, cluster queue excluded (absent when the compile was "
                             "cached and no compile time was measured)", timing=True),
    Metric("compile_queue_s", "s", "seconds the compile job waited in the cluster's queue", timing=True),
    Metric("compile_cached", "", "True when the compile reused earlier artifacts (short, no floorplan search)"),
    Metric("execute_queue_s", "s", "seconds the execute job waited in the cluster's queue", timing=True),
    Metric("setup_s", "s", "seconds from the program's start to the run's start (log time stamps)", timing=True),
    Metric("staging_s", "s", "seconds the appliance spent staging (weights, data workers) before the first step, "
                             "from the log's time stamps", timing=True),
    Metric("checkpoint_s", "s", "seconds spent saving checkpoints (log time stamps); never counted as training",
           timing=True),
    Metric("run_wall_s", "s", "seconds from the run's start to its end (log time stamps)", timing=True),
    Metric("wall_s", "s", "seconds between the log's first and last time stamps, queues included", timing=True),
)

#: The unit of ``tokens_per_s`` (GlobalRate x sequence length), which the reader gives a LLaMA run whose log
#: prints its sequence length; the LLaMA table (llama2_7b/metrics.py) holds the metric, in this unit.
TOKENS_PER_S_UNIT = "tokens/s"

#: The log reader's metrics as a table: its ``add`` gives each metric its unit (KeyError for another name).
_TABLE = MetricTable(("the Cerebras log reader",), *LOG_METRICS)


def add_log_metric(run: Run, name: str, value: Any) -> None:
    """``run.add_metric(name, value, unit)`` with the unit of :data:`LOG_METRICS` (KeyError for another name)."""
    _TABLE.add(run, name, value)
