"""SambaNova BERT-Large (the 2024 course): compile with SambaFlow, train under Slurm with ``--ntasks`` ranks.

    from labkit.testbeds.sambanova import bert_large
    config = bert_large.SPEC.validate({"ntasks": 2, "model_size": "micro", "steps": 5})
    bert_large.plan(config)               # where it will run, and why; the sbatch request
    run = bert_large.run_exercise(config) # testbed job, portable torch.distributed run, or a log
    bert_large.show(run)
    bert_large.throughput_table([run, ...]);  bert_large.plot_throughput(table)

    papermill notebooks/sambanova/bert_large.ipynb out.ipynb -p ntasks 2 -p model_size micro

Three ways to get a run (``target``):

- ``"testbed"`` on a SambaNova node (``sbatch`` and SambaFlow under ``/opt/sambaflow``):
  labkit writes the compile script and the batch script the course's ``BertLarge.sh`` and
  ``BertLarge_run.sh`` are, from the parameters; runs the compile; submits the training job
  with the validated ``sbatch`` request; follows it; finds the training log through the
  ``Using DIR/BertLarge.out for output`` line of ``slurm-<id>.out``; reads it with
  :func:`labkit.logs.read`. Verified only against a real Slurm with SambaFlow replaced by a
  script that writes SambaFlow's log lines (tests/slurm/test_sambanova_job.py): no SambaFlow
  could be installed here.
- ``"portable"`` anywhere else: ``ntasks`` ranks of data-parallel training through
  ``torch.distributed`` (gloo on CPU, NCCL with one GPU per rank), each rank running
  ``steps`` steps of :mod:`labkit.bert` at ``batch_size``.
- ``"log"``: read ``log_path``, a training log (or ``slurm-<id>.out`` pointer) from a testbed.

Metrics use SambaNova's definitions: ``e2e_train_time`` is the wall time of the ``steps``
steps, and ``training_sequences_per_second = ntasks x batch_size x steps x max_seq_length /
e2e_train_time``, which counts TOKENS per second despite its name; ``sequences_per_second``
is the true figure, the same without ``max_seq_length``.

The code, one concern a module: ``spec`` (parameters, sbatch request), ``metrics`` (the metric
table), ``host`` (where it can run; the portable ranks' device and whether they fit), ``exercise``
(the notebook's plan and run steps: the log, the testbed or the portable ranks, as ``target``
says; the homework's runs), ``portable`` (the torch.distributed ranks: the host's side, then the
loop each rank runs), ``script`` and ``testbed`` (the SambaFlow scripts, the Slurm job, reading its
log), ``log`` (the log reader labkit.logs uses), ``report`` (the show step, tables and plots).
"""

from labkit.testbeds.sambanova.bert_large.exercise import homework_runs, plan, run_exercise
from labkit.testbeds.sambanova.bert_large.host import SambaFlow, resolve_target
from labkit.testbeds.sambanova.bert_large.metrics import METRICS
from labkit.testbeds.sambanova.bert_large.portable import run_portable
from labkit.testbeds.sambanova.bert_large.report import (format_throughput, metrics_table, plot_loss, plot_throughput,
                                                         show, throughput_table)
from labkit.testbeds.sambanova.bert_large.spec import SPEC, MODEL_SIZES, describe_request, slurm_request
from labkit.testbeds.sambanova.bert_large.testbed import read_log, run_testbed

__all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show",
           # the notebook's homework cells
           "homework_runs", "throughput_table", "format_throughput", "plot_throughput",
           # the run step's paths, with the SambaFlow paths, polling and ranks a test or a script passes
           "run_portable", "run_testbed", "read_log", "SambaFlow", "resolve_target", "slurm_request",
           "describe_request", "metrics_table", "plot_loss", "MODEL_SIZES"]
