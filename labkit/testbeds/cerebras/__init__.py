"""Cerebras: BERT-Large pre-training with the modelzoo on a CS-2, or the portable BERT anywhere.

Notebook: ``notebooks/cerebras/bert_large.ipynb``. From a shell:

    papermill notebooks/cerebras/bert_large.ipynb out.ipynb                      # on a Cerebras user node
    papermill notebooks/cerebras/bert_large.ipynb out.ipynb -p model_size tiny -p batch_size 16 -p max_steps 50 -p log_steps 10
    papermill notebooks/cerebras/bert_large.ipynb out.ipynb -p log_path mytest.log   # read a CS-2 log

From Python:

    from labkit.testbeds import cerebras
    config = cerebras.SPEC.validate({"model_size": "micro", "batch_size": 8, "max_steps": 20, "log_steps": 10})
    cerebras.plan(config)                     # where it will run, and why
    run = cerebras.run_exercise(config)       # a labkit.results.Run
    cerebras.show(run)                        # metrics, notes, the loss curve

Three ways to a run, all giving the same metrics (``samples_per_sec`` = the last GlobalRate,
``time_per_sample``, ``final_loss``, ``total_samples``, ``total_time``):

- ``target="CSX"`` (or ``"auto"`` on a Cerebras user node, where the modelzoo checkout and
  ``cerebras_pytorch`` are importable): :func:`write_params_yaml` writes the course's params
  file with the chosen batch size and steps, :func:`modelzoo_command` builds the course's
  ``python run.py CSX ...`` command, :func:`stream_command` runs it and streams its log into
  the notebook (and a file), and :mod:`labkit.logs` reads the metrics from that log.
  Verified only on the testbed; here it is tested against a fake ``run.py`` that prints the
  real log format.
- ``cuda`` / ``mps`` / ``cpu`` (or ``"auto"`` elsewhere): :mod:`labkit.bert` trains the same
  model on synthetic masked-LM + next-sentence batches and prints the modelzoo's own log
  lines, so the same reader and analysis apply.
- ``log_path``: read a log of a run made on the testbed.

The package, one concern a module (this file only gathers their public names):

- ``spec``: :data:`BERT_SPEC`, its defaults and checks, :data:`CEREBRAS_HELP`.
- ``host``: what of the Cerebras stack is here (:func:`cerebras_stack`), and :func:`plan`.
- ``modelzoo``: the CS-2 path: params YAML, ``run.py CSX`` command, :func:`run_modelzoo`.
- ``stream``: :func:`stream_command`, a child's output streamed to the notebook and a log.
- ``portable``: :func:`run_portable`, the portable BERT printing modelzoo log lines (``loglines``).
- ``log``: the reader of modelzoo logs (``labkit.logs.read(..., format="cerebras")``).
- ``metrics``: the exercise's metric names from every path; :func:`read_log`.
- ``exercise``: the run step (:func:`run_exercise`, :func:`run_bert`) and the homework's :func:`compare`.
- ``report``: the show step (:func:`show`), tables and plots (:func:`metrics_table`,
  :func:`format_table`, :func:`plot_comparison`, ...).
"""

from __future__ import annotations

# Names outside __all__ (CerebrasStack, MAX_STEPS, ...) stay reachable as they were before the split.
from labkit.testbeds.cerebras.exercise import compare, run_bert, run_exercise
from labkit.testbeds.cerebras.host import CerebrasStack, Plan, cerebras_stack, estimated_seconds, plan  # noqa: F401
from labkit.testbeds.cerebras.loglines import processed_line, train_line
from labkit.testbeds.cerebras.metrics import read_log, standardize
from labkit.testbeds.cerebras.modelzoo import modelzoo_command, run_modelzoo, write_params_yaml
from labkit.testbeds.cerebras.portable import run_portable
from labkit.testbeds.cerebras.report import (SHOWN_METRICS, TABLE_UNITS, comparison_table, metrics_table,
                                             format_table, plot_comparison, plot_loss, show)  # noqa: F401
from labkit.testbeds.cerebras.spec import (SPEC, BERT_SPEC, CEREBRAS_HELP, DEFAULT_TEMPLATE, EXERCISE, LONG_RUN_SECONDS,
                                           MAX_STEPS)  # noqa: F401
from labkit.testbeds.cerebras.stream import stream_command

__all__ = [
    "SPEC", "BERT_SPEC", "EXERCISE", "Plan", "plan", "run_exercise", "run_bert", "run_portable", "run_modelzoo",
    "read_log",
    "cerebras_stack", "write_params_yaml", "modelzoo_command", "stream_command", "train_line",
    "processed_line", "standardize", "compare", "comparison_table", "plot_comparison", "metrics_table", "plot_loss",
    "show", "format_table", "CEREBRAS_HELP",
    "DEFAULT_TEMPLATE",
]
