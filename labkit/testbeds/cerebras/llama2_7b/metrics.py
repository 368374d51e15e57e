"""The LLaMA-2-7B exercise's metrics, under the same names from a CS-3 log and from a portable run, and a
CS-3 log (``cszoo fit ... |& tee mytest.log``) read under them, with ``tokens_per_s`` beside the reader's
numbers (where the sequence length comes from: docs/cerebras.md, "On a CS-3 user node").
"""

from __future__ import annotations

import os
from typing import Any, Optional

import labkit.logs
from labkit.metrics import Metric, MetricTable
from labkit.params import existing_file
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.spec import EXERCISE
from labkit.testbeds.cerebras.log import LOG_METRICS

__all__ = ["METRICS", "add_tokens_per_s", "read_log"]

_NO_LENGTH = "The log does not give the sequence length"

_OWN = (
    Metric("global_rate", "samples/s", "the modelzoo's GlobalRate at the last logged step: samples (sequences) per "
                                       "second averaged since the first step", primary=True, timing=True),
    Metric("tokens_per_s", "tokens/s", "global_rate x sequence length: tokens trained on per second",
           primary=True, timing=True),
    Metric("final_loss", "", "training loss (next-token cross-entropy) at the last logged step", primary=True),
)

#: What only a portable run measures.
_PORTABLE = (
    Metric("first_step_s", "s", "portable: seconds of the first step alone (allocation, kernel choice); part of "
                                "train_seconds and the GlobalRate", timing=True),
    Metric("steady_rate", "samples/s", "portable: samples (sequences) per second after the warm-up (the first step, "
                                       "first_step_s, left out): the later steps' samples over their time; "
                                       "model_tflops and mfu come from it", timing=True),
    Metric("build_s", "s", "portable: seconds to load the corpus and build the tokenizer and model (not training)",
           timing=True),
    Metric("validation_loss", "", "portable: mean loss on held-out text after training (the corpus's validation "
                                  "split)"),
    Metric("parameters", "", "portable: the model's parameters (LLaMA-2-7B has 6.74 billion)"),
    Metric("peak_memory_gb", "GB", "portable on CUDA: torch.cuda.max_memory_allocated over the training"),
    Metric("model_tflops", "TFLOP/s", "portable on CUDA: steady_rate x sequence length x (6 x parameters + "
                                      "attention) FLOPs a token", timing=True),
    Metric("mfu", "", "portable on CUDA: model_tflops over the GPU's named bf16 dense peak", timing=True),
)

#: Every metric of a LLaMA-2-7B run: a CS-3 log's (``cszoo fit``) and a portable run's.
METRICS = MetricTable(
    (EXERCISE,),
    *(_OWN + tuple(m for m in LOG_METRICS if m.name not in {o.name for o in _OWN}) + _PORTABLE),
)


def add_tokens_per_s(run: Run, sequence_length: Optional[int]) -> bool:
    """Add ``tokens_per_s`` = ``global_rate`` x ``sequence_length``; False (and nothing added) when either is missing."""
    rate = run.metrics.get("global_rate")
    if rate is None or not sequence_length:
        return False
    METRICS.add(run, "tokens_per_s", round(float(rate) * int(sequence_length), 1))
    return True


def read_log(path: str, config: Optional[Any] = None, sequence_length: Optional[int] = None) -> Run:
    """The last LLaMA-2-7B run in the modelzoo log at ``path``, with ``tokens_per_s`` when the sequence
    length is known; ``sequence_length`` (its params file's) and ``config`` fill what the log does not print."""
    problem = existing_file(path)
    if problem:
        raise FileNotFoundError("log_path = {!r}: {}".format(path, problem))
    report = labkit.logs.read(path, format="cerebras")
    if not report.runs:
        raise labkit.logs.NoRunError("log_path = {!r}: no Cerebras run in this log. {}".format(
            path, " ".join(report.notes)))
    run = ([r for r in report.runs if r.exercise == EXERCISE] or report.runs)[-1]
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
    length, where = run.params.get("sequence_length"), "the log"
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
