"""What the homework compares: its notebook's parameters and, for each testbed, the exercise, the
parameters students change, the metrics shown and plotted, and the commands that make the runs.

    from labkit.testbeds.homework import spec
    spec.exercise_for("graphcore").metrics     # ('test_accuracy', 'epoch_time', ...)
    spec.HOMEWORK_2024.testbeds                # the 2024 homework's sections (TESTBEDS)

One :class:`Homework` per offering of the course: this module holds the 2024 homework
(notebooks/homework/ai_testbeds.ipynb); :mod:`labkit.testbeds.homework.spec_2025` the 2025 one.

The metrics shown and plotted are chosen from each exercise's table of metrics
(``labkit/testbeds/<exercise>/metrics.py``): a name the table lacks fails at import, so the
homework cannot ask for a metric no run records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Tuple

from labkit.params import PATH, Param, Spec
from labkit.results import Run
from labkit.testbeds.cerebras.bert_large.metrics import METRICS as CEREBRAS
from labkit.testbeds.graphcore.metrics import METRICS as GRAPHCORE
from labkit.testbeds.groq.metrics import METRICS as GROQ
from labkit.testbeds.sambanova.bert_large.metrics import METRICS as SAMBANOVA

__all__ = ["SPEC", "HOMEWORK_SPEC", "Exercise", "Homework", "TESTBEDS", "HOMEWORK_2024", "exercise_for"]

HOMEWORK_SPEC = Spec(
    "homework/ai_testbeds",
    Param("logs_dir", PATH, "logs", "folder with one sub-folder of testbed logs per testbed: graphcore/, cerebras/, "
                                    "sambanova/, groq/"),
    Param("runs_dir", PATH, "runs", "folder with one sub-folder per testbed of lab-book notebooks executed by "
                                    "`labkit run` or `labkit sweep --out runs/<testbed>`"),
)

#: The exercise's spec under the name every exercise uses (``HOMEWORK_SPEC`` is its older name).
SPEC = HOMEWORK_SPEC


@dataclass(frozen=True)
class Exercise:
    """What the homework compares for one testbed, and how a student produces it."""

    exercise: str
    params: Tuple[str, ...]  # the parameters students change
    metrics: Tuple[str, ...]  # the numbers the table shows, most important first
    plotted: Tuple[str, ...]  # the metrics the plot shows (those a run has)
    portable: str  # the command that makes the runs portably (about five minutes on a 2-core laptop)
    testbed: str  # what to run on the testbed
    keep: Any = None  # extra filter on runs (SambaNova: training logs only)
    against: str = ""  # plot the metrics against this parameter (a line per place it ran), not as bars
    detail_table: Any = None  # runs -> a table shown under the comparison (2025 inference: per endpoint)
    detail_plot: Any = None  # (runs, hardware) -> the section's plot instead of the bars


def _training_log(run: Run) -> bool:
    return run.source != "log" or run.params.get("log_kind") == "training"


# The portable commands were timed on labkit's shared 2-core machine (docs/grading.md).
TESTBEDS = {
    "graphcore": Exercise(
        "graphcore/mnist", ("learning_rate", "batch_size", "epochs"),
        GRAPHCORE.select("test_accuracy", "epoch_time", "mean_epoch_time", "total_train_time", "train_compile_time"),
        GRAPHCORE.select("test_accuracy"),
        "labkit sweep notebooks/graphcore/mnist.ipynb -p learning_rate 0.03,0.3,3 -p epochs 1 "
        "-p max_train_samples 4000 -p max_test_samples 1000 -p device cpu --out runs/graphcore",
        "`mnist_poptorch.py` (or the lab book's notebook with `device ipu`) on a Graphcore IPU node"),
    "cerebras": Exercise(
        "cerebras/bert_large", ("batch_size",), CEREBRAS.select("global_rate", "train_seconds", "final_loss"),
        CEREBRAS.select("global_rate"),
        "labkit sweep notebooks/cerebras/bert_large.ipynb -p batch_size 256,1024,2048 -p model_size micro "
        "-p max_steps 3 -p log_steps 1 -p max_seq_length 32 -p target cpu --out runs/cerebras",
        "the modelzoo's `run.py CSX --mode train` (or the lab book's notebook with `target CSX`) on the CS-2"),
    "sambanova": Exercise(
        "sambanova/bert_large", ("ntasks", "ntasks_per_node", "nodes"),
        SAMBANOVA.select("e2e_train_time", "training_sequences_per_second", "final_loss"),
        SAMBANOVA.select("training_sequences_per_second"),
        "labkit sweep notebooks/sambanova/bert_large.ipynb -p ntasks 1,2,4 -p ntasks_per_node 4 -p model_size micro "
        "-p batch_size 8 -p steps 40 -p max_seq_length 32 -p target portable -p device cpu --out runs/sambanova",
        "the course's BERT-Large Slurm script (`sbatch --ntasks N ...`) on the SN30", keep=_training_log),
    "groq": Exercise(
        "groq/bert_tiny", ("build_name", "max_seq_length"),
        GROQ.select("groq_accuracy", "cpu_accuracy", "groq_e2e_latency_ms", "cpu_e2e_latency_ms", "cpu_e2e_ips",
                    "build_cached"),
        GROQ.select("groq_e2e_latency_ms", "cpu_e2e_latency_ms", "onnxruntime_e2e_latency_ms", "cuda_e2e_latency_ms"),
        "labkit run notebooks/groq/bert_tiny.ipynb runs/groq/seq128.ipynb -p num_samples 100 -p backends cpu,onnxruntime"
        "  # then again with -p max_seq_length 64 into runs/groq/seq64.ipynb",
        "`bert_tiny.py` with GroqFlow (or the lab book's notebook with `backends groq`) on a GroqChip node"),
}


@dataclass(frozen=True)
class Homework:
    """One offering's homework: its notebook's spec (whose name is its overview record's exercise),
    its sections by testbed, and the hardware each section's testbed runs are measured on."""

    year: int
    spec: Spec
    testbeds: Dict[str, Exercise]
    hardware: Dict[str, str]  # testbed -> what its testbed runs ran on ("CS-2", "CS-3", ...)
    notebook: str  # the lab book's notebook of this homework
    run_notes: bool = False  # each section prints its runs' own notes (what the numbers do and do not say)

    @property
    def name(self) -> str:
        return self.spec.name

    def exercise_for(self, testbed: str) -> Exercise:
        """The :class:`Exercise` of ``testbed``'s section; a ValueError names the sections there are."""
        if testbed not in self.testbeds:
            raise ValueError("testbed: {!r} is not one of {} (the {} homework's sections)".format(
                testbed, ", ".join(self.testbeds), self.year))
        return self.testbeds[testbed]


HOMEWORK_2024 = Homework(2024, HOMEWORK_SPEC, TESTBEDS,
                         {"graphcore": "IPU", "cerebras": "CS-2", "sambanova": "SN30", "groq": "GroqChip"},
                         "notebooks/homework/ai_testbeds.ipynb")


def exercise_for(testbed: str) -> Exercise:
    """The 2024 homework's :class:`Exercise` for ``testbed``; a ValueError names the testbeds there are."""
    return HOMEWORK_2024.exercise_for(testbed)
