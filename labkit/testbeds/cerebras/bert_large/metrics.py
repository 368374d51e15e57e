"""The exercise's metrics, under the same names whichever path made the run.

``samples_per_sec`` (the last GlobalRate), ``time_per_sample``, ``final_loss``,
``total_samples``, ``total_time``: :func:`standardize` adds them to a run read from a CS-2
log (the log reader's own names stay beside them), :func:`add_train_metrics` gives them, and
the reader's names, to a portable run, so tables of both line up. :data:`BERT_METRICS` is the
table of them all (name, unit, meaning, primary, timing); every metric here takes its unit from it.

    run = read_log("bert_log_bs_1024.txt")     # a modelzoo log -> labkit.results.Run
    BERT_METRICS.frame()                        # what each metric means

The exercise's names and the log reader's name the same numbers twice: ``samples_per_sec`` is
``global_rate``, ``total_samples`` is ``samples``, ``total_time`` is ``train_seconds``,
``compile_time`` is ``compile_s``. Both are kept, as records have always held them.
"""

from __future__ import annotations

import os
from typing import Optional

import labkit.logs
from labkit import bert
from labkit.metrics import Metric, MetricTable
from labkit.params import Config, existing_file
from labkit.results import Run
from labkit.testbeds.cerebras.log_metrics import LOG_METRICS
from labkit.testbeds.cerebras.spec import EXERCISE

__all__ = ["BERT_METRICS", "standardize", "read_log", "add_train_metrics"]

#: Every metric of a modelzoo run: the exercise's (BERT-Large) and the other modelzoo logs the reader knows.
BERT_METRICS = MetricTable(
    (EXERCISE, "cerebras/gpt2", "cerebras/gptj"),
    Metric("samples_per_sec", "samples/s", "the last GlobalRate: samples per second averaged since the first step",
           primary=True, timing=True),
    Metric("final_loss", "", "training loss at the last logged step (BERT: masked LM + next sentence)",
           primary=True),
    Metric("time_per_sample", "s", "total_time / total_samples (1 / samples_per_sec when the log lacks them)",
           timing=True),
    Metric("total_samples", "samples", "samples trained on, from 'Processed N sample(s) in T seconds'"),
    Metric("total_time", "s", "seconds of training, from 'Processed N sample(s) in T seconds' (compile excluded)",
           timing=True),
    Metric("steps", "", "training steps run (the last step logged)"),
    Metric("compile_time", "s", "seconds the CS-2 compile took, cluster queue excluded (compile_s)", timing=True),
    Metric("warmup_time", "s", "portable run: seconds of the first step (allocation, kernel selection); the "
                               "CS-2 compile has no portable analogue", timing=True),
    Metric("setup_time", "s", "portable run: seconds building the model", timing=True),
    # The log reader's names (labkit.logs gives a modelzoo log these), less the two above.
    *(m for m in LOG_METRICS if m.name not in ("steps", "final_loss")),
)


def standardize(run: Run) -> Run:
    """Add the exercise's metric names to a run read from a log (the reader's names stay).

    ``samples_per_sec`` is the last GlobalRate (the modelzoo's average since the first step),
    ``total_samples`` / ``total_time`` come from "Processed N sample(s) in T seconds", and
    ``time_per_sample`` is their ratio.
    """
    m = run.metrics
    add = BERT_METRICS.add
    rate = m.get("global_rate", m.get("samples_per_s"))
    if rate is not None:
        add(run, "samples_per_sec", rate)
    if m.get("samples") is not None:
        add(run, "total_samples", m["samples"])
    if m.get("train_seconds") is not None:
        add(run, "total_time", m["train_seconds"])
    if m.get("samples") and m.get("train_seconds"):
        add(run, "time_per_sample", m["train_seconds"] / m["samples"])
    elif rate:
        add(run, "time_per_sample", 1.0 / rate)
    if "compile_s" in m:
        add(run, "compile_time", m["compile_s"])
    return run


def read_log(path: str, config: Optional[Config] = None) -> Run:
    """The run in a modelzoo log, with the exercise's metrics (see :func:`standardize`)."""
    problem = existing_file(path)
    if problem:
        raise FileNotFoundError("log_path = {!r}: {}".format(path, problem))
    report = labkit.logs.read(path, format="cerebras")
    run = standardize(report.run)
    run.exercise = EXERCISE
    run.environment.setdefault("log_path", os.path.abspath(path))
    if config is not None:
        logged = dict(run.params)
        run.params = {"batch_size": logged.get("batch_size", config.batch_size), "log_path": path}
        for key in ("params_file", "mode"):
            if key in logged:
                run.params[key] = logged[key]
    return run


def add_train_metrics(run: Run, result: bert.TrainResult) -> None:
    """The exercise's metrics, and the log reader's names for the same numbers."""
    last = result.logs[-1] if result.logs else None
    # The last GlobalRate, as a log gives it (at the last step; "Processed ... in T seconds"
    # is taken a moment later, so total_samples / total_time differs in the last digits).
    add = BERT_METRICS.add
    add(run, "samples_per_sec", round(last.global_rate if last else result.global_rate, 2))
    add(run, "time_per_sample", result.time_per_sample)
    add(run, "final_loss", round(result.final_loss, 5))
    add(run, "total_samples", result.total_samples)
    add(run, "total_time", result.total_time)
    add(run, "steps", len(result.losses))
    # The same numbers under the names labkit.logs gives a CS-2 log, so tables line up.
    add(run, "global_rate", round(last.global_rate, 2) if last else 0.0)
    add(run, "last_rate", round(last.rate, 2) if last else 0.0)
    add(run, "samples", result.total_samples)
    add(run, "train_seconds", result.total_time)
