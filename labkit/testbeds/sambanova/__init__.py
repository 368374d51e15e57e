"""SambaNova BERT-Large: compile with SambaFlow, train under Slurm with ``--ntasks`` ranks.

    from labkit.testbeds import sambanova
    config = sambanova.SPEC.validate({"ntasks": 2, "model_size": "micro", "steps": 5})
    sambanova.plan(config)               # where it will run, and why; the sbatch request
    run = sambanova.run_exercise(config) # testbed job, portable torch.distributed run, or a log
    sambanova.show(run)
    sambanova.throughput_table([run, ...]);  sambanova.plot_throughput(table)

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

The code, one concern a module: ``spec`` (parameters, sbatch request), ``host`` (where it can
run), ``exercise`` (the notebook's plan, run and show steps), ``runs`` (run and the homework's runs), ``portable`` and ``launch`` (the torch.distributed
ranks), ``script`` and ``testbed`` (the SambaFlow scripts, the Slurm job, reading its log),
``log`` (the log reader labkit.logs uses), ``report`` (tables and plots).
"""

from labkit.testbeds.sambanova.exercise import plan, run_exercise, show
from labkit.testbeds.sambanova.host import SambaFlow, resolve_target, sambanova_host
from labkit.testbeds.sambanova.portable import TooBigForMemory, run_portable, sequences_per_second, tokens_per_second
from labkit.testbeds.sambanova.report import (format_throughput, metrics_table, plot_loss, plot_throughput,
                                              throughput_table)
from labkit.testbeds.sambanova.runs import homework_runs, run
from labkit.testbeds.sambanova.script import compile_script, run_script
from labkit.testbeds.sambanova.spec import SPEC, BERT_SPEC, MODEL_SIZES, describe_request, slurm_request
from labkit.testbeds.sambanova.testbed import read_log, run_testbed

__all__ = ["SPEC", "BERT_SPEC", "plan", "run_exercise", "show", "run", "run_portable", "run_testbed", "read_log",
           "slurm_request", "SambaFlow",
           "compile_script", "run_script", "sambanova_host", "resolve_target", "throughput_table",
           "plot_throughput", "sequences_per_second", "tokens_per_second", "MODEL_SIZES", "TooBigForMemory",
           # the notebook's cells use these too (they were public, though not listed, before the split)
           "describe_request", "metrics_table", "plot_loss", "homework_runs", "format_throughput"]
