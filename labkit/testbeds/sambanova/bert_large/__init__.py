"""SambaNova BERT-Large (the 2024 course): compile with SambaFlow, train under Slurm with ``--ntasks`` ranks.

``target`` chooses the run: ``"testbed"`` (the course's scripts, compiled and submitted with
``sbatch`` on a SambaNova node), ``"portable"`` (``ntasks`` torch.distributed ranks of
:mod:`labkit.bert` here) or ``"log"`` (a testbed's log). docs/sambanova.md has the modules, one
concern each, and the metrics (``training_sequences_per_second`` counts tokens).
"""

from labkit.testbeds.sambanova.bert_large.exercise import homework_runs, plan, resolve_target, run_exercise
from labkit.testbeds.sambanova.bert_large.metrics import METRICS
from labkit.testbeds.sambanova.bert_large.portable import run_portable
from labkit.testbeds.sambanova.bert_large.report import (format_throughput, metrics_table, plot_loss, plot_throughput,
                                                         show, throughput_table)
from labkit.testbeds.sambanova.bert_large.spec import SPEC, MODEL_SIZES, describe_request, slurm_request
from labkit.testbeds.sambanova.bert_large.testbed import SambaFlow, read_log, run_testbed

__all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show",
           # the notebook's homework cells
           "homework_runs", "throughput_table", "format_throughput", "plot_throughput",
           # the run step's paths, with the SambaFlow paths, polling and ranks a test or a script passes
           "run_portable", "run_testbed", "read_log", "SambaFlow", "resolve_target", "slurm_request",
           "describe_request", "metrics_table", "plot_loss", "MODEL_SIZES"]
