"""A CS-2 modelzoo log read into the exercise's run, under the exercise's metric names.

    from labkit.testbeds.cerebras.bert_large.log import read_log
    run = read_log("bert_log_bs_1024.txt")     # a modelzoo log -> labkit.results.Run of cerebras/bert_large

The testbed's reader (:class:`labkit.testbeds.cerebras.log.CerebrasReader`, through
:func:`labkit.logs.read`) gives the modelzoo's numbers; :func:`standardize` adds the exercise's
names for them (:data:`labkit.testbeds.cerebras.bert_large.metrics.METRICS`), so a log's run and a
portable run line up in one table. The exercise's names and the log reader's name the same numbers
twice: ``samples_per_sec`` is ``global_rate``, ``total_samples`` is ``samples``, ``total_time`` is
``train_seconds``, ``compile_time`` is ``compile_s``. Both are kept, as records have always held them.
"""

from __future__ import annotations

import os
from typing import Optional

import labkit.logs
from labkit.params import Config, existing_file
from labkit.results import Run
from labkit.testbeds.cerebras.bert_large.metrics import METRICS
from labkit.testbeds.cerebras.bert_large.spec import EXERCISE

__all__ = ["read_log", "standardize"]


def standardize(run: Run) -> Run:
    """Add the exercise's metric names to a run read from a log (the reader's names stay; the module says
    which is which); ``time_per_sample`` is ``total_time`` / ``total_samples``."""
    m = run.metrics
    add = METRICS.add
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
