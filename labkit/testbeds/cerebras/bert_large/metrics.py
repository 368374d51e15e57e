"""The BERT-Large exercise's table of metrics (the same names whichever path made the run), and a CS-2
log read under them.

The testbed's reader (:mod:`labkit.testbeds.cerebras.log`) gives the modelzoo's numbers;
:func:`standardize` adds the exercise's names for them, so a log's run and a portable run line up in
one table. Both names are kept, as records have always held them: ``samples_per_sec`` is
``global_rate``, ``total_samples`` is ``samples``, ``total_time`` is ``train_seconds``,
``compile_time`` is ``compile_s``.
"""

from __future__ import annotations

import os
from typing import Optional

import labkit.logs
from labkit.metrics import Metric, MetricTable
from labkit.params import Config, existing_file
from labkit.results import Run
from labkit.testbeds.cerebras.bert_large.spec import EXERCISE
from labkit.testbeds.cerebras.log import LOG_METRICS

__all__ = ["METRICS", "read_log", "standardize"]

#: Every metric of a modelzoo run: the exercise's (BERT-Large) and the other modelzoo logs the reader knows.
METRICS = MetricTable(
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
    Metric("steady_rate", "samples/s", "portable run: samples per second after the warm-up (the first step, "
                                       "warmup_time, left out): the later steps' samples over their time; "
                                       "model_tflops and mfu come from it", timing=True),
    Metric("setup_time", "s", "portable run: seconds building the model", timing=True),
    Metric("peak_memory_gb", "GB", "portable run on CUDA: torch.cuda.max_memory_allocated over the training"),
    Metric("model_tflops", "TFLOP/s", "portable run on CUDA: steady_rate x model FLOPs a sequence "
                                      "(6 x parameters x tokens + attention)", timing=True),
    Metric("mfu", "", "portable run on CUDA: model_tflops over the GPU's named bf16 dense peak", timing=True),
    # The log reader's names (labkit.logs gives a modelzoo log these), less the two above.
    *(m for m in LOG_METRICS if m.name not in ("steps", "final_loss")),
)


def standardize(run: Run) -> Run:
    """Add the exercise's metric names to a run read from a log (the reader's names stay)."""
    m = run.metrics
    add = METRICS.add
    rate = m.get("global_rate", m.get("samples_per_s"))
    if rate is not None:
        add(run, "samples_per_sec", rate)
    for name, logged in (("total_samples", "samples"), ("total_time", "train_seconds")):
        if m.get(logged) is not None:
            add(run, name, m[logged])
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
