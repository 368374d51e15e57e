"""The exercise's metrics, under the same names whichever path made the run.

``samples_per_sec`` (the last GlobalRate), ``time_per_sample``, ``final_loss``,
``total_samples``, ``total_time``: :func:`standardize` adds them to a run read from a CS-2
log (the log reader's own names stay beside them), :func:`add_train_metrics` gives them, and
the reader's names, to a portable run, so tables of both line up.

    run = read_log("bert_log_bs_1024.txt")     # a modelzoo log -> labkit.results.Run
"""

from __future__ import annotations

import os
from typing import Optional

from labkit import bert
from labkit.params import Config, existing_file
from labkit.results import Run
from labkit.testbeds.cerebras.spec import EXERCISE

__all__ = ["standardize", "read_log", "add_train_metrics"]


def standardize(run: Run) -> Run:
    """Add the exercise's metric names to a run read from a log (the reader's names stay).

    ``samples_per_sec`` is the last GlobalRate (the modelzoo's average since the first step),
    ``total_samples`` / ``total_time`` come from "Processed N sample(s) in T seconds", and
    ``time_per_sample`` is their ratio.
    """
    m = run.metrics
    rate = m.get("global_rate", m.get("samples_per_s"))
    if rate is not None:
        run.add_metric("samples_per_sec", rate, "samples/s")
    if m.get("samples") is not None:
        run.add_metric("total_samples", m["samples"], "samples")
    if m.get("train_seconds") is not None:
        run.add_metric("total_time", m["train_seconds"], "s")
    if m.get("samples") and m.get("train_seconds"):
        run.add_metric("time_per_sample", m["train_seconds"] / m["samples"], "s")
    elif rate:
        run.add_metric("time_per_sample", 1.0 / rate, "s")
    if "compile_s" in m:
        run.add_metric("compile_time", m["compile_s"], "s")
    return run


def read_log(path: str, config: Optional[Config] = None) -> Run:
    """The run in a modelzoo log, with the exercise's metrics (see :func:`standardize`)."""
    import labkit.logs

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
    run.add_metric("samples_per_sec", round(last.global_rate if last else result.global_rate, 2), "samples/s")
    run.add_metric("time_per_sample", result.time_per_sample, "s")
    run.add_metric("final_loss", round(result.final_loss, 5))
    run.add_metric("total_samples", result.total_samples, "samples")
    run.add_metric("total_time", result.total_time, "s")
    run.add_metric("steps", len(result.losses))
    # The same numbers under the names labkit.logs gives a CS-2 log, so tables line up.
    run.add_metric("global_rate", round(last.global_rate, 2) if last else 0.0, "samples/s")
    run.add_metric("last_rate", round(last.rate, 2) if last else 0.0, "samples/s")
    run.add_metric("samples", result.total_samples, "samples")
    run.add_metric("train_seconds", result.total_time, "s")
