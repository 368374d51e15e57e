"""The 2024 homework (notebooks/homework/ai_testbeds.ipynb): gather your runs on four testbeds, compare them.

    from labkit.testbeds.homework import fall2024 as homework   # the 2024 notebook's import
    config = homework.SPEC.from_notebook(globals())
    homework.plan(config)                               # which logs and lab-book runs are where
    run = homework.run_exercise(config)                 # every testbed's runs: logs/<testbed>/, runs/<testbed>/
    homework.show(run)                                  # one row per testbed
    homework.record_runs("graphcore", run)              # records graphcore_1, graphcore_2, ...
    homework.show_testbed("graphcore", run)             # table + plot, or what to run when there is nothing

The whole 2024 offering: ``SPEC``, ``TESTBEDS`` (a :class:`.homeworks.Section` per testbed), ``METRICS``
and ``HOMEWORK``. Metric names are selected from each exercise's table, so a name the table lacks
fails at import.
"""

from __future__ import annotations

from labkit.params import PATH, Param, Spec, folder_path
from labkit.results import Run
from labkit.testbeds.cerebras.bert_large.metrics import METRICS as CEREBRAS
from labkit.testbeds.graphcore.metrics import METRICS as GRAPHCORE
from labkit.testbeds.groq.metrics import METRICS as GROQ
from labkit.testbeds.homework.exercise import plan, record_runs, run_exercise, runs_for, runs_of
from labkit.testbeds.homework.homeworks import Homework, Section, overview_table, register
from labkit.testbeds.homework.report import comparison, nothing_yet, overview, plot, show, show_testbed
from labkit.testbeds.sambanova.bert_large.metrics import METRICS as SAMBANOVA

__all__ = ["SPEC", "METRICS", "TESTBEDS", "HOMEWORK", "plan", "run_exercise", "show", "show_testbed", "record_runs",
           "runs_for", "runs_of", "comparison", "plot", "overview", "nothing_yet"]

SPEC = Spec(
    "homework/ai_testbeds",
    Param("logs_dir", PATH, "logs", "folder with one sub-folder of testbed logs per testbed: graphcore/, cerebras/, "
                                    "sambanova/, groq/", check=folder_path),
    Param("runs_dir", PATH, "runs", "folder with one sub-folder per testbed of lab-book notebooks executed by "
                                    "`labkit run` or `labkit sweep --out runs/<testbed>`", check=folder_path),
)


def _training_log(run: Run) -> bool:
    return run.source != "log" or run.params.get("log_kind") == "training"


# The portable commands were timed on labkit's shared 2-core machine (docs/grading.md).
TESTBEDS = {
    "graphcore": Section(
        "graphcore/mnist", ("learning_rate", "batch_size", "epochs"),
        GRAPHCORE.select("test_accuracy", "epoch_time", "mean_epoch_time", "total_train_time", "train_compile_time"),
        GRAPHCORE.select("test_accuracy"),
        "labkit sweep notebooks/graphcore/mnist.ipynb -p learning_rate 0.03,0.3,3 -p epochs 1 "
        "-p max_train_samples 4000 -p max_test_samples 1000 -p device cpu --out runs/graphcore",
        "`mnist_poptorch.py` (or the lab book's notebook with `device ipu`) on a Graphcore IPU node"),
    "cerebras": Section(
        "cerebras/bert_large", ("batch_size",), CEREBRAS.select("global_rate", "train_seconds", "final_loss"),
        CEREBRAS.select("global_rate"),
        "labkit sweep notebooks/cerebras/bert_large.ipynb -p batch_size 256,1024,2048 -p model_size micro "
        "-p max_steps 3 -p log_steps 1 -p max_seq_length 32 -p target cpu --out runs/cerebras",
        "the modelzoo's `run.py CSX --mode train` (or the lab book's notebook with `target CSX`) on the CS-2"),
    "sambanova": Section(
        "sambanova/bert_large", ("ntasks", "ntasks_per_node", "nodes"),
        SAMBANOVA.select("e2e_train_time", "training_sequences_per_second", "final_loss"),
        SAMBANOVA.select("training_sequences_per_second"),
        "labkit sweep notebooks/sambanova/bert_large.ipynb -p ntasks 1,2,4 -p ntasks_per_node 4 -p model_size micro "
        "-p batch_size 8 -p steps 40 -p max_seq_length 32 -p target portable -p device cpu --out runs/sambanova",
        "the course's BERT-Large Slurm script (`sbatch --ntasks N ...`) on the SN30", keep=_training_log),
    "groq": Section(
        "groq/bert_tiny", ("build_name", "max_seq_length"),
        GROQ.select("groq_accuracy", "cpu_accuracy", "groq_e2e_latency_ms", "cpu_e2e_latency_ms", "cpu_e2e_ips",
                    "build_cached"),
        GROQ.select("groq_e2e_latency_ms", "cpu_e2e_latency_ms", "onnxruntime_e2e_latency_ms", "cuda_e2e_latency_ms"),
        "labkit run notebooks/groq/bert_tiny.ipynb runs/groq/seq128.ipynb -p num_samples 100 -p backends cpu,onnxruntime"
        "  # then again with -p max_seq_length 64 into runs/groq/seq64.ipynb",
        "`bert_tiny.py` with GroqFlow (or the lab book's notebook with `backends groq`) on a GroqChip node"),
}

METRICS = overview_table(SPEC.name, TESTBEDS)

HOMEWORK = register(Homework(2024, SPEC, TESTBEDS, METRICS,
                             {"graphcore": "IPU", "cerebras": "CS-2", "sambanova": "SN30", "groq": "GroqChip"},
                             "notebooks/homework/ai_testbeds.ipynb"))
