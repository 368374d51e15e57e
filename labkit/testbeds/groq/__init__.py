"""The Groq exercise: BERT-tiny on SST-2 (spring) or MiniLM on STS-B (autumn), compiled for an
inference engine and compared with the CPU. Notebook: notebooks/groq/bert_tiny.ipynb.

How to run it, the backends, what each number means, what was verified where, and the modules: docs/groq.md.
"""

from labkit.testbeds.groq.exercise import build, evaluate, load_data, load_model, plan, run_exercise
from labkit.testbeds.groq.metrics import METRICS
from labkit.testbeds.groq.report import (custom, log_table, shape_lesson, show, show_latency, show_parity,
                                         table_from_runs)
from labkit.testbeds.groq.spec import SPEC

__all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show", "show_latency", "show_parity", "custom", "shape_lesson",
           "load_model", "load_data", "build", "evaluate", "log_table", "table_from_runs"]
