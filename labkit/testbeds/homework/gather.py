"""The module's homework (notebooks/homework/ai_testbeds.ipynb): gather your runs, compare them.

    from labkit.testbeds import homework
    runs = homework.runs_for(config, "graphcore")       # logs/graphcore/ and runs/graphcore/
    homework.record_runs("graphcore", runs)             # records graphcore_1, graphcore_2, ...
    homework.show("graphcore", runs)                    # table + plot, or what to run when there is nothing
    homework.comparison("graphcore", runs)              # the table alone: one row per run
    homework.plot("graphcore", runs)                    # the plot alone (None without runs)

Three kinds of evidence count for each testbed, all read by labkit:

- **testbed logs** in ``logs/<testbed>/`` (the vendors' scripts run on the testbed), read with
  ``labkit.logs.read``; each record carries ``params['log']`` and ``params['log_run']``;
- **lab-book notebooks** executed by ``labkit run`` or ``labkit sweep`` into ``runs/<testbed>/``,
  on the testbed (the vendor path) or **portably** (CPU or GPU stand-ins); each record carries
  ``params['evidence']``, the executed notebook (see :mod:`labkit.testbeds.homework.evidence`).

The grader reads each source again with trusted code (``labkit.grading.recompute:from_evidence``)
and rejects a record whose numbers the source does not hold. Every table, plot and grade says
where each run ran (:func:`labkit.testbeds.homework.where.where_it_ran`): ``IPU``, ``CS-2``, ``SN30``,
``GroqChip``, or ``portable: CPU`` / ``portable: GPU``, a model of the exercise, not a
measurement of the testbed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

from labkit.testbeds.homework.where import HARDWARE, is_portable, where_it_ran
from labkit.params import PATH, Param, Spec
from labkit.results import Run, record

__all__ = ["HOMEWORK_SPEC", "TESTBEDS", "runs_for", "runs_from_logs", "runs_from_lab_book", "record_runs",
           "comparison", "plot", "show", "nothing_yet"]

HOMEWORK_SPEC = Spec(
    "homework/ai_testbeds",
    Param("logs_dir", PATH, "logs", "folder with one sub-folder of testbed logs per testbed: graphcore/, cerebras/, "
                                    "sambanova/, groq/"),
    Param("runs_dir", PATH, "runs", "folder with one sub-folder per testbed of lab-book notebooks executed by "
                                    "`labkit run` or `labkit sweep --out runs/<testbed>`"),
)


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


def _training_log(run: Run) -> bool:
    return run.source != "log" or run.params.get("log_kind") == "training"


# The portable commands were timed on labkit's shared 2-core machine (docs/grading.md).
TESTBEDS = {
    "graphcore": Exercise(
        "graphcore/mnist", ("learning_rate", "batch_size", "epochs"),
        ("test_accuracy", "epoch_time", "mean_epoch_time", "total_train_time", "train_compile_time"),
        ("test_accuracy",),
        "labkit sweep notebooks/graphcore/mnist.ipynb -p learning_rate 0.03,0.3,3 -p epochs 1 "
        "-p max_train_samples 4000 -p max_test_samples 1000 -p device cpu --out runs/graphcore",
        "`mnist_poptorch.py` (or the lab book's notebook with `device ipu`) on a Graphcore IPU node"),
    "cerebras": Exercise(
        "cerebras/bert_large", ("batch_size",), ("global_rate", "train_seconds", "final_loss"), ("global_rate",),
        "labkit sweep notebooks/cerebras/bert_large.ipynb -p batch_size 256,1024,2048 -p model_size micro "
        "-p max_steps 3 -p log_steps 1 -p max_seq_length 32 -p target cpu --out runs/cerebras",
        "the modelzoo's `run.py CSX --mode train` (or the lab book's notebook with `target CSX`) on the CS-2"),
    "sambanova": Exercise(
        "sambanova/bert_large", ("ntasks", "ntasks_per_node", "nodes"),
        ("e2e_train_time", "training_sequences_per_second", "final_loss"), ("training_sequences_per_second",),
        "labkit sweep notebooks/sambanova/bert_large.ipynb -p ntasks 1,2,4 -p ntasks_per_node 4 -p model_size micro "
        "-p batch_size 8 -p steps 40 -p max_seq_length 32 -p target portable -p device cpu --out runs/sambanova",
        "the course's BERT-Large Slurm script (`sbatch --ntasks N ...`) on the SN30", keep=_training_log),
    "groq": Exercise(
        "groq/bert_tiny", ("build_name", "max_seq_length"),
        ("groq_accuracy", "cpu_accuracy", "groq_e2e_latency_ms", "cpu_e2e_latency_ms", "cpu_e2e_ips", "build_cached"),
        ("groq_e2e_latency_ms", "cpu_e2e_latency_ms", "onnxruntime_e2e_latency_ms", "cuda_e2e_latency_ms"),
        "labkit run notebooks/groq/bert_tiny.ipynb runs/groq/seq128.ipynb -p num_samples 100 -p backends cpu,onnxruntime"
        "  # then again with -p max_seq_length 64 into runs/groq/seq64.ipynb",
        "`bert_tiny.py` with GroqFlow (or the lab book's notebook with `backends groq`) on a GroqChip node"),
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
    if verbose and runs:
        print("{}: {} run(s) of {} from testbed logs in {}".format(testbed, len(runs), exercise.exercise, folder))
    return runs


def runs_from_lab_book(runs_dir: str, testbed: str, verbose: bool = True) -> List[Run]:
    """Every run of the testbed's exercise in ``runs_dir/<testbed>/``: sweep folders and executed notebooks.

    A run that cannot count (a failed run, a results.csv that disagrees with its notebook, a
    notebook of another exercise) is listed with the reason and left out.
    """
    from labkit import sweep
    from labkit.testbeds.homework import evidence

    exercise = _testbed(testbed)
    folder = os.path.join(os.fspath(runs_dir), testbed)
    if not os.path.isdir(folder):
        return []
    found: List[Tuple[str, Any, str]] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if sweep.MANIFEST in files:  # a sweep folder: its results.csv, checked against its notebooks
            dirs[:] = []
            try:
                found.extend(evidence.sweep_runs(root))
            except evidence.EvidenceError as exc:
                found.append((root, None, str(exc)))
            continue
        for name in sorted(f for f in files if f.endswith(".ipynb") and not f.startswith(".")):
            path = os.path.join(root, name)
            try:
                found.append((path, evidence.notebook_run(path)[0], ""))
            except evidence.EvidenceError as exc:
                found.append((path, None, str(exc)))
    runs: List[Run] = []
    for path, run, problem in found:
        if run is not None and run.exercise != exercise.exercise:
            problem, run = "{}: a run of {}, not of {}".format(path, run.exercise, exercise.exercise), None
        if run is None:
            if verbose:
                print("not counted: {}".format(problem))
            continue
        run.params["evidence"] = path  # where the grader reads it again
        runs.append(run)
    if verbose and runs:
        print("{}: {} run(s) of {} from lab-book notebooks in {} ({})".format(
            testbed, len(runs), exercise.exercise, folder, ", ".join(sorted({where_it_ran(r) for r in runs}))))
    return runs


def runs_for(config: Any, testbed: str, verbose: bool = True) -> List[Run]:
    """The testbed's runs from every source: testbed logs first, then lab-book notebooks and sweeps."""
    return runs_from_logs(config.logs_dir, testbed, verbose) + runs_from_lab_book(config.runs_dir, testbed, verbose)


def record_runs(testbed: str, runs: Sequence[Run]) -> List[str]:
    """Record each run in this notebook as ``<testbed>_1``, ``<testbed>_2``... and return the names."""
    names = []
    for number, run in enumerate(runs, 1):
        name = "{}_{}".format(testbed, number)
        record(run, name=name)
        names.append(name)
    return names


def _source_name(run: Run) -> str:
    path = run.params.get("log") or run.params.get("evidence") or ""
    return os.path.basename(str(path))


def comparison(testbed: str, runs: Sequence[Run]):
    """A pandas DataFrame comparing the runs: where each ran, its file, changed parameters, key metrics, status."""
    import pandas as pd

    exercise = _testbed(testbed)
    rows = []
    for number, run in enumerate(runs, 1):
        row = {"run": "{}_{}".format(testbed, number), "where it ran": where_it_ran(run), "from": _source_name(run)}
        row.update({p: run.params.get(p) for p in exercise.params})
        row.update({m: run.metrics.get(m) for m in exercise.metrics})
        row["status"] = run.status
        rows.append(row)
    columns = ["run", "where it ran", "from"] + list(exercise.params) + list(exercise.metrics) + ["status"]
    table = pd.DataFrame(rows, columns=columns)
    return table.dropna(axis=1, how="all") if rows else table


def _bar_label(exercise: Exercise, number: int, run: Run) -> str:
    changed = ", ".join("{}={}".format(p, run.params[p]) for p in exercise.params if p in run.params)
    return "{}\n[{}]".format(changed or "run {}".format(number), where_it_ran(run))


def plot(testbed: str, runs: Sequence[Run]):
    """Bars of the testbed's key metric(s), one group per run, labelled with where it ran.

    Portable runs are drawn hatched and named "portable: ..." in the legend. Without a run to
    show it returns None: no empty figure.
    """
    import matplotlib.pyplot as plt

    exercise = _testbed(testbed)
    metrics = [m for m in exercise.plotted if any(isinstance(r.metrics.get(m), (int, float)) for r in runs)]
    shown = [r for r in runs if any(isinstance(r.metrics.get(m), (int, float)) for m in metrics)]
    if not shown:
        return None
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(shown) * len(metrics)), 3.4))
    width = 0.8 / len(metrics)
    colors = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"]
    legend = {}
    for m_index, metric in enumerate(metrics):
        for r_index, run in enumerate(shown):
            value = run.metrics.get(metric)
            if not isinstance(value, (int, float)):
                continue
            portable = is_portable(run)
            bar = ax.bar(r_index + (m_index - (len(metrics) - 1) / 2.0) * width, float(value), width,
                         color=colors[m_index % len(colors)], alpha=0.55 if portable else 1.0,
                         hatch="//" if portable else None, edgecolor="#333333")
            key = "{} ({})".format(metric, "portable: a model, not the {}".format(HARDWARE.get(testbed, testbed))
                                   if portable else "measured on the {}".format(where_it_ran(run)))
            legend.setdefault(key, bar)
    ax.set_xticks(range(len(shown)))
    ax.set_xticklabels([_bar_label(exercise, i, r) for i, r in enumerate(shown, 1)], fontsize=8)
    ax.set_ylabel(metrics[0] if len(metrics) == 1 else "value")
    ax.set_title("{}: {} per run".format(exercise.exercise, ", ".join(metrics)))
    ax.legend(list(legend.values()), list(legend), fontsize=7, loc="best")
    fig.tight_layout()
    plt.close(fig)  # the notebook shows the returned figure once
    return fig


def nothing_yet(testbed: str) -> str:
    """What to run, and where to put it, for a testbed with no runs yet."""
    exercise = _testbed(testbed)
    return ("No runs of {ex} yet, so there is nothing to compare. Either\n"
            "  - portably, on a laptop or a GPU node (about five minutes on 2 cores), from the lab book's folder:\n"
            "      {portable}\n"
            "    and put runs/{tb}/ beside this notebook; or\n"
            "  - on the testbed: run {testbed}, and copy the logs into logs/{tb}/ beside this notebook\n"
            "    (or run the lab book's notebook there with `labkit sweep ... --out runs/{tb}`).\n"
            "Then run this notebook again.").format(ex=exercise.exercise, portable=exercise.portable, tb=testbed,
                                                    testbed=exercise.testbed)


def show(testbed: str, runs: Sequence[Run]) -> None:
    """The comparison table and plot, with a warning about portable runs; or, without runs, what to run."""
    from IPython.display import display

    if not runs:
        print(nothing_yet(testbed))
        return
    display(comparison(testbed, runs))
    portable = sorted({where_it_ran(r) for r in runs if is_portable(r)})
    if portable:
        print("Runs marked {} ran the exercise's portable stand-in, not the {}: they model the exercise (same model, "
              "same parameters, same metrics); their times and speeds say nothing about the {}.".format(
                  " and ".join(portable), HARDWARE.get(testbed, testbed), HARDWARE.get(testbed, testbed)))
    fig = plot(testbed, runs)
    if fig is not None:
        display(fig)
