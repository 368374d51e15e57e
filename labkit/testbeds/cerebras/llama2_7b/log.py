"""Read a CS-3 LLaMA-2-7B log (``cszoo fit ... |& tee mytest.log``) into the exercise's run.

    from labkit.testbeds.cerebras.llama2_7b.log import read_log
    run = read_log("mytest.log", config)     # a labkit.results.Run of exercise cerebras/llama2_7b

The testbed's reader (:mod:`labkit.testbeds.cerebras.log`, through :func:`labkit.logs.read`)
gives the modelzoo's numbers; this adds what the exercise reports beside them:
``tokens_per_s`` = GlobalRate x sequence length, with the sequence length from the log when it
prints one, else from the params file the run was written with, else from ``config`` (and the
note says which), and the parameters a batch-size study groups by.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import labkit.logs
from labkit.params import existing_file
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.metrics import add_tokens_per_s
from labkit.testbeds.cerebras.llama2_7b.spec import EXERCISE

__all__ = ["read_log"]

_NO_LENGTH = "The log does not give the sequence length"


def read_log(path: str, config: Optional[Any] = None, sequence_length: Optional[int] = None) -> Run:
    """The last LLaMA-2-7B run in the modelzoo log at ``path``, with ``tokens_per_s`` when the sequence length is known.

    ``sequence_length``: the one the run's params file gave (the CS-3 path passes it);
    ``config`` (with ``batch_size``, ``sequence_length``...) fills what the log does not print.
    """
    problem = existing_file(path)
    if problem:
        raise FileNotFoundError("log_path = {!r}: {}".format(path, problem))
    report = labkit.logs.read(path, format="cerebras")
    if not report.runs:
        raise labkit.logs.NoRunError("log_path = {!r}: no Cerebras run in this log. {}".format(
            path, " ".join(report.notes)))
    runs = [r for r in report.runs if r.exercise == EXERCISE] or list(report.runs)
    run = runs[-1]
    if len(report.runs) > 1:
        run.notes.append("This log holds {} runs; this is the last {}. labkit.logs.read(log_path).runs has them "
                         "all.".format(len(report.runs), "LLaMA run" if run.exercise == EXERCISE else "one"))
    if run.exercise != EXERCISE:
        run.notes.append("The log does not name the model ({}); it is read as LLaMA-2-7B because it was given as "
                         "this exercise's log.".format(run.exercise))
        run.exercise = EXERCISE
    run.environment.setdefault("log_path", os.path.abspath(path))
    _sequence_length(run, config, sequence_length)
    if config is not None and "batch_size" not in run.params and getattr(config, "batch_size", None):
        run.params["batch_size"] = config.batch_size
        run.notes.append("batch_size = {} is the config's: the log gives neither a batch size nor the samples to "
                         "work it out from.".format(config.batch_size))
    run.params["log_path"] = path
    return run


def _sequence_length(run: Run, config: Optional[Any], from_params: Optional[int]) -> None:
    logged = run.params.get("sequence_length")
    length, where = logged, "the log"
    if length is None and from_params:
        length, where = int(from_params), "the run's params file"
    if length is None and config is not None and getattr(config, "sequence_length", None):
        length, where = int(config.sequence_length), "the config"
    if length is None:
        if not any(note.startswith(_NO_LENGTH) for note in run.notes):
            run.notes.append(_NO_LENGTH + ", so tokens/s (GlobalRate x sequence length) cannot be given; pass a "
                                          "config with sequence_length.")
        return
    run.params["sequence_length"] = length
    run.notes[:] = [note for note in run.notes if not note.startswith(_NO_LENGTH)]
    if add_tokens_per_s(run, length) and where != "the log":
        run.notes.append("tokens_per_s = GlobalRate x {} tokens, the sequence length of {} (the log does not print "
                         "it).".format(length, where))
