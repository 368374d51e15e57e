"""Cerebras BERT-Large: pre-training with ``cszoo fit`` on a CS-3 (ALCF, Release 2.10), ``run.py`` on a CS-2 (the
2024 course), or the portable BERT anywhere.

Notebook: ``notebooks/cerebras/bert_large.ipynb``. Its paths to a run, all giving the same metrics
(``target="CSX"``: the CS-3 or the CS-2, a torch device, ``log_path``), what each has been verified on, and the modules:
docs/cerebras.md.
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
