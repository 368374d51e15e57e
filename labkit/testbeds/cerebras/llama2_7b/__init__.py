"""Cerebras: LLaMA-2-7B training with ``cszoo fit`` on a CS-3 (the 2025 course), or a small LLaMA anywhere.

Notebook: ``notebooks/cerebras/llama2_7b.ipynb`` (its parameters and a sweep: docs/cerebras.md).
From a parameter to the loop: ``SPEC.from_notebook`` -> ``exercise.run_exercise`` (or the log it reads,
or ``cszoo.run_on_cs3``: ``cszoo fit`` on the CS-3) -> ``train.train``, whose body is the portable loop:
the tokens, the model, the steps, the validation, the record. The modules: docs/cerebras.md, "Code".
"""

from __future__ import annotations

from labkit.testbeds.cerebras.llama2_7b.exercise import estimated_seconds, plan, run_exercise
from labkit.testbeds.cerebras.llama2_7b.cszoo import cs3_node
from labkit.testbeds.cerebras.llama2_7b.metrics import METRICS, read_log
from labkit.testbeds.cerebras.llama2_7b.report import (format_throughput, metrics_table, plot_loss, plot_throughput, show,
                                                       throughput_table, where_label)
from labkit.testbeds.cerebras.llama2_7b.spec import COURSE, EXERCISE, PORTABLE_DEFAULTS, SPEC, effective

__all__ = ["SPEC", "METRICS", "EXERCISE", "COURSE", "PORTABLE_DEFAULTS", "effective", "plan", "run_exercise", "show",
           "read_log", "cs3_node", "estimated_seconds", "metrics_table", "throughput_table",
           "format_throughput", "plot_loss", "plot_throughput", "where_label"]
