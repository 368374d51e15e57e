"""Cerebras BERT-Large (the 2024 course): pre-training with the modelzoo on a CS-2, or the portable BERT anywhere.

Notebook: ``notebooks/cerebras/bert_large.ipynb``; docs/cerebras.md shows it from a shell and from Python.
Three ways to a run, all giving the same metrics: ``target="CSX"`` (the modelzoo's ``run.py CSX`` on
a CS-2; verified only on the testbed, tested here against a fake ``run.py``), a torch device (the
portable BERT of :mod:`labkit.bert`, printing the modelzoo's log lines), or ``log_path`` (a log of a
run made on the testbed). The modules: docs/cerebras.md, "Code".
"""

from __future__ import annotations

from labkit.testbeds.cerebras.bert_large.exercise import compare, plan, run_exercise
from labkit.testbeds.cerebras.bert_large.metrics import METRICS, read_log
from labkit.testbeds.cerebras.bert_large.modelzoo import (cerebras_stack, modelzoo_command, run_modelzoo,
                                                          write_params_yaml)
from labkit.testbeds.cerebras.bert_large.portable import run_portable
from labkit.testbeds.cerebras.bert_large.report import (comparison_table, format_table, metrics_table, plot_comparison,
                                                        plot_loss, show)
from labkit.testbeds.cerebras.bert_large.spec import EXERCISE, SPEC

__all__ = ["SPEC", "METRICS", "EXERCISE", "plan", "run_exercise", "show", "compare", "comparison_table",
           "format_table", "plot_comparison", "metrics_table", "plot_loss", "read_log", "run_portable", "run_modelzoo",
           "write_params_yaml", "modelzoo_command", "cerebras_stack"]
