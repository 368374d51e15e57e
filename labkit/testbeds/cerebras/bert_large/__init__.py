"""Cerebras BERT-Large (the 2024 course): pre-training with the modelzoo on a CS-2, or the portable BERT anywhere.

Notebook: ``notebooks/cerebras/bert_large.ipynb``. From a shell:

    papermill notebooks/cerebras/bert_large.ipynb out.ipynb                      # on a Cerebras user node
    papermill notebooks/cerebras/bert_large.ipynb out.ipynb -p model_size tiny -p batch_size 16 -p max_steps 50 -p log_steps 10
    papermill notebooks/cerebras/bert_large.ipynb out.ipynb -p log_path mytest.log   # read a CS-2 log

From Python:

    from labkit.testbeds.cerebras import bert_large
    config = bert_large.SPEC.validate({"model_size": "micro", "batch_size": 8, "max_steps": 20, "log_steps": 10})
    bert_large.plan(config)                     # where it will run, and why
    run = bert_large.run_exercise(config)       # a labkit.results.Run
    bert_large.show(run)                        # metrics, notes, the loss curve

Three ways to a run, all giving the same metrics (``samples_per_sec`` = the last GlobalRate,
``time_per_sample``, ``final_loss``, ``total_samples``, ``total_time``):

- ``target="CSX"`` (or ``"auto"`` on a Cerebras user node, where the modelzoo checkout and
  ``cerebras_pytorch`` are importable): :func:`write_params_yaml` writes the course's params
  file with the chosen batch size and steps, :func:`modelzoo_command` builds the course's
  ``python run.py CSX ...`` command, :func:`labkit.testbeds.cerebras.stream.stream_command` runs
  it and streams its log into the notebook (and a file), and :func:`read_log` reads the metrics
  from that log. Verified only on the testbed; here it is tested against a fake ``run.py`` that
  prints the real log format.
- ``cuda`` / ``mps`` / ``cpu`` (or ``"auto"`` elsewhere): :mod:`labkit.bert` trains the same
  model on synthetic masked-LM + next-sentence batches and prints the modelzoo's own log
  lines, so the same reader and analysis apply.
- ``log_path``: read a log of a run made on the testbed.

The package, one concern a module (this file only gathers the names notebooks and users call):

- ``spec``: :data:`SPEC`, its defaults and checks, the course's params file, ``CEREBRAS_HELP``.
- ``host``: what of the Cerebras stack is here (:func:`cerebras_stack`), the params YAML a CS-2 run starts from.
- ``exercise``: the plan and run steps (:func:`plan`, :func:`run_exercise`) and the homework's
  :func:`compare`.
- ``modelzoo``: the CS-2 path: params YAML, ``run.py CSX`` command, :func:`run_modelzoo`.
- ``portable``: :func:`run_portable`, the portable BERT printing modelzoo log lines; its body is the
  training loop, top to bottom.
- ``log``: :func:`read_log`, a CS-2 log under the exercise's metric names (the reader itself,
  shared with the 2025 exercise, is :mod:`labkit.testbeds.cerebras.log`).
- ``metrics``: :data:`METRICS`, the exercise's metric names from every path.
- ``report``: the show step (:func:`show`), tables and plots (:func:`metrics_table`,
  :func:`format_table`, :func:`comparison_table`, :func:`plot_comparison`, :func:`plot_loss`).
"""

from __future__ import annotations

from labkit.testbeds.cerebras.bert_large.exercise import compare, plan, run_exercise
from labkit.testbeds.cerebras.bert_large.host import cerebras_stack
from labkit.testbeds.cerebras.bert_large.log import read_log
from labkit.testbeds.cerebras.bert_large.metrics import METRICS
from labkit.testbeds.cerebras.bert_large.modelzoo import modelzoo_command, run_modelzoo, write_params_yaml
from labkit.testbeds.cerebras.bert_large.portable import run_portable
from labkit.testbeds.cerebras.bert_large.report import (comparison_table, format_table, metrics_table, plot_comparison,
                                                        plot_loss, show)
from labkit.testbeds.cerebras.bert_large.spec import EXERCISE, SPEC

__all__ = ["SPEC", "METRICS", "EXERCISE", "plan", "run_exercise", "show", "compare", "comparison_table",
           "format_table", "plot_comparison", "metrics_table", "plot_loss", "read_log", "run_portable", "run_modelzoo",
           "write_params_yaml", "modelzoo_command", "cerebras_stack"]
