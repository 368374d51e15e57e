"""The module's homework (notebooks/homework/ai_testbeds.ipynb): read your testbed logs, compare runs.

    from labkit.grading import homework
    runs = homework.runs_from_logs("logs", "graphcore")     # every MNIST run in logs/graphcore/
    homework.record_runs("graphcore", runs)                 # records graphcore_1, graphcore_2, ...
    homework.comparison("graphcore", runs)                  # a table: one row per run
    homework.plot("graphcore", runs)                        # the key metric per run

Students run each exercise on the testbed with the default and with changed parameters and
put the logs in ``logs/<testbed>/``; the notebook reads them with ``labkit.logs.read`` and
records one labkit run per training run. Each record carries the log it came from
(``params['log']``, ``params['log_run']``) so the grader can read the log again with trusted
code (``labkit.grading.recompute:from_log``) and reject a record whose numbers the log does
not hold.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

from labkit.params import PATH, Param, Spec
from labkit.results import Run, record

__all__ = ["HOMEWORK_SPEC", "TESTBEDS", "runs_from_logs", "record_runs", "comparison", "plot"]

HOMEWORK_SPEC = Spec(
    "homework/ai_testbeds",
    Param("logs_dir", PATH, "logs", "folder with one sub-folder of logs per testbed: graphcore/, cerebras/, "
                                    "sambanova/, groq/"),
)


@dataclass(frozen=True)
class Exercise:
    """What the homework compares for one testbed."""

    exercise: str
    params: Tuple[str, ...]  # the parameters students change
    metrics: Tuple[str, ...]  # the numbers the table shows, most important first
    keep: Any = None  # extra filter on runs (SambaNova: training logs only)


def _training_log(run: Run) -> bool:
    return run.params.get("log_kind") == "training"


TESTBEDS = {
    "graphcore": Exercise("graphcore/mnist", ("learning_rate", "batch_size", "epochs"),
                          ("test_accuracy", "mean_epoch_time", "total_train_time", "train_compile_time")),
    "cerebras": Exercise("cerebras/bert_large", ("batch_size",), ("global_rate", "train_seconds", "final_loss")),
    "sambanova": Exercise("sambanova/bert_large", ("ntasks", "ntasks_per_node", "nodes"),
                          ("e2e_train_time", "training_sequences_per_second", "final_loss"), _training_log),
    "groq": Exercise("groq/bert_tiny", ("build_name",),
                     ("groq_accuracy", "cpu_accuracy", "cpu_e2e_latency_ms", "cpu_e2e_ips", "build_cached")),
}


def _testbed(name: str) -> Exercise:
    if name not in TESTBEDS:
        raise ValueError("testbed: {!r} is not one of {}".format(name, ", ".join(TESTBEDS)))
    return TESTBEDS[name]


def runs_from_logs(logs_dir: str, testbed: str, verbose: bool = True) -> List[Run]:
    """Every run of the testbed's exercise in the logs under ``logs_dir/<testbed>/``, in file order."""
    import labkit.logs

    exercise = _testbed(testbed)
    folder = os.path.join(os.fspath(logs_dir), testbed)
    if not os.path.isdir(folder):
        if verbose:
            print("No folder {}: put the logs of your {} runs there (one file per run or job).".format(folder, testbed))
        return []
    runs: List[Run] = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith(".") or not os.path.isfile(path):
            continue
        report = labkit.logs.read(path)
        for index, run in enumerate(report.runs):
            if run.exercise != exercise.exercise or (exercise.keep is not None and not exercise.keep(run)):
                continue
            run.params["log"] = path  # where the grader reads it again
            run.params["log_run"] = index
            runs.append(run)
    if verbose:
        print("{}: {} run(s) of {} in {}".format(testbed, len(runs), exercise.exercise, folder))
    return runs


def record_runs(testbed: str, runs: Sequence[Run]) -> List[str]:
    """Record each run in this notebook as ``<testbed>_1``, ``<testbed>_2``... and return the names."""
    names = []
    for number, run in enumerate(runs, 1):
        name = "{}_{}".format(testbed, number)
        record(run, name=name)
        names.append(name)
    return names


def comparison(testbed: str, runs: Sequence[Run]):
    """A pandas DataFrame comparing the runs: log, changed parameters, key metrics, status."""
    import pandas as pd

    exercise = _testbed(testbed)
    rows = []
    for number, run in enumerate(runs, 1):
        row = {"run": "{}_{}".format(testbed, number), "log": os.path.basename(str(run.params.get("log", "")))}
        row.update({p: run.params.get(p) for p in exercise.params})
        row.update({m: run.metrics.get(m) for m in exercise.metrics})
        row["status"] = run.status
        rows.append(row)
    columns = ["run", "log"] + list(exercise.params) + list(exercise.metrics) + ["status"]
    table = pd.DataFrame(rows, columns=columns)
    return table.dropna(axis=1, how="all") if rows else table


def plot(testbed: str, runs: Sequence[Run]):
    """A bar chart of the testbed's key metric, one bar per run, labelled by the changed parameters."""
    import matplotlib.pyplot as plt

    exercise = _testbed(testbed)
    metric = exercise.metrics[0]
    shown = [r for r in runs if isinstance(r.metrics.get(metric), (int, float))]
    fig, ax = plt.subplots(figsize=(6, 2.8))
    labels = [", ".join("{}={}".format(p, r.params[p]) for p in exercise.params if p in r.params) or "run {}".format(i)
              for i, r in enumerate(shown, 1)]
    ax.bar(range(len(shown)), [float(r.metrics[metric]) for r in shown], color="#4c72b0")
    ax.set_xticks(range(len(shown)))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(metric)
    ax.set_title("{}: {} per run".format(exercise.exercise, metric))
    fig.tight_layout()
    plt.close(fig)  # the notebook shows the returned figure once
    return fig
