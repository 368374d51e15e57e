"""The homework notebook's plan and run steps: gather a student's runs from every source.

    runs = homework.runs_for(config, "graphcore")       # logs/graphcore/ and runs/graphcore/
    homework.record_runs("graphcore", run)              # records graphcore_1, ... from the homework's Run

The Run is the homework's overview (one count per testbed); the runs themselves, one list per
testbed, are its ``details``. Each run names its source for the grader: docs/grading.md (Testbed and
portable evidence).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import labkit.logs
from labkit import interrupts
from labkit.files import NotAFile, regular_file
from labkit.interrupts import run_step
from labkit.params import Config
from labkit.plans import RunPlan
from labkit.results import Run, record
from labkit.testbeds.homework.hardware import where_it_ran
from labkit.testbeds.homework.homeworks import homework_of, is_overview, runs_metric

__all__ = ["plan", "run_exercise", "runs_for", "runs_from_logs", "runs_from_lab_book", "record_runs",
           "runs_of"]


def _files_line(kind: str, folder: str) -> str:
    """How many files under ``folder`` can hold runs (no hidden ones; a lab book's: its notebooks)."""
    if not os.path.isdir(folder):
        return "no {} folder {}".format(kind, folder)
    count = 0
    for _root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        count += sum(1 for f in files if not f.startswith(".") and (kind != "lab-book" or f.endswith(".ipynb")))
    return "{} {} in {}".format(count, "notebook(s)" if kind == "lab-book" else "file(s)", folder)


def plan(config: Config) -> RunPlan:
    """Which testbed logs and lab-book notebooks there are for each testbed, and where (nothing is read yet).

    The testbeds are those of the homework whose spec made ``config`` (2024's or 2025's).
    """
    more = ["- {}: {}; {}".format(testbed, _files_line("log", os.path.join(config.logs_dir, testbed)),
                                  _files_line("lab-book", os.path.join(config.runs_dir, testbed)))
            for testbed in homework_of(config).testbeds]
    return RunPlan("log", "your runs in {}/ (testbed logs) and {}/ (lab-book notebooks and sweeps)".format(
        config.logs_dir, config.runs_dir), "the homework compares runs you made; it reads them, it trains nothing",
        more=more)


@run_step
def run_exercise(config: Config, plan: Optional[RunPlan] = None) -> Run:
    """Every testbed's runs, gathered (:func:`runs_for`): the overview Run, the runs as ``run.details``."""
    homework = homework_of(config)
    gathered: Dict[str, List[Run]] = {}
    # Phases: "gathering <testbed>", one per testbed. The homework reads runs, it measures nothing: an
    # interrupt stops it at once and records nothing (a partial overview would grade as a missing testbed).
    for testbed in homework.testbeds:
        interrupts.phase("gathering " + testbed)
        gathered[testbed] = runs_for(config, testbed)
    run = Run(homework.name, source="log", params=config.to_dict())
    for testbed, runs in gathered.items():
        homework.metrics.add(run, runs_metric(testbed), len(runs))
    missing = [testbed for testbed, runs in gathered.items() if not runs]
    if missing:
        run.notes.append("no runs yet for {}: each section says what to run".format(", ".join(missing)))
    run.details = gathered
    return run


def runs_from_logs(logs_dir: str, testbed: str, verbose: bool = True, homework: Any = None) -> List[Run]:
    """Every run of the testbed's exercise in the logs under ``logs_dir/<testbed>/``, in file order.

    ``homework``: whose section (default 2024's: :func:`labkit.testbeds.homework.homeworks.homework_of`).
    """
    section = homework_of(homework).section_for(testbed)
    folder = os.path.join(os.fspath(logs_dir), testbed)
    if not os.path.isdir(folder):
        return []
    runs: List[Run] = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith(".") or os.path.isdir(path):
            continue
        try:
            regular_file(path, "log")  # a FIFO, device or dangling link: said, never opened
        except (NotAFile, FileNotFoundError) as exc:
            if verbose:
                print("not read: {}".format(exc))
            continue
        report = labkit.logs.read(path)
        for index, run in enumerate(report.runs):
            if run.exercise != section.exercise or (section.keep is not None and not section.keep(run)):
                continue
            run.params["log"] = path  # where the grader reads it again
            run.params["log_run"] = index
            runs.append(run)
    if verbose and runs:
        print("{}: {} run(s) of {} from testbed logs in {}".format(testbed, len(runs), section.exercise, folder))
    return runs


def runs_from_lab_book(runs_dir: str, testbed: str, verbose: bool = True, homework: Any = None) -> List[Run]:
    """Every run of the testbed's exercise in ``runs_dir/<testbed>/``: sweep folders and executed notebooks.

    A run that cannot count (a failed run, a results.csv that disagrees with its notebook, a
    notebook of another exercise) is listed with the reason and left out.
    """
    from labkit import sweep
    from labkit.testbeds.homework import evidence

    section = homework_of(homework).section_for(testbed)
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
        if run is not None and run.exercise != section.exercise:
            problem, run = "{}: a run of {}, not of {}".format(path, run.exercise, section.exercise), None
        if run is None:
            if verbose:
                print("not counted: {}".format(problem))
            continue
        run.params["evidence"] = path  # where the grader reads it again
        runs.append(run)
    if verbose and runs:
        print("{}: {} run(s) of {} from lab-book notebooks in {} ({})".format(
            testbed, len(runs), section.exercise, folder, ", ".join(sorted({where_it_ran(r) for r in runs}))))
    return runs


def runs_for(config: Any, testbed: str, verbose: bool = True) -> List[Run]:
    """The testbed's runs from every source: testbed logs first, then lab-book notebooks and sweeps.

    The homework (2024's or 2025's) is the one whose spec made ``config``.
    """
    homework = homework_of(config)
    return (runs_from_logs(config.logs_dir, testbed, verbose, homework) +
            runs_from_lab_book(config.runs_dir, testbed, verbose, homework))


def runs_of(testbed: str, runs: Union[Run, Sequence[Run]]) -> List[Run]:
    """The testbed's runs: ``runs`` itself, or those the homework's Run gathered (its ``details``)."""
    if isinstance(runs, Run):
        if not is_overview(runs):  # a cell above reused the name: say so, never show nothing
            raise ValueError("this is a run of {}, not the homework's overview from homework.run_exercise(config): "
                             "a cell above gave the name `run` to something else; run the cell "
                             "`run = homework.run_exercise(config)` again, or name your own variables "
                             "differently".format(runs.exercise))
        return list((getattr(runs, "details", None) or {}).get(testbed, []))
    return list(runs)


def record_runs(testbed: str, runs: Union[Run, Sequence[Run]]) -> List[str]:
    """Record each run in this notebook as ``<testbed>_1``, ``<testbed>_2``... and return the names
    (``runs``: a list, or the homework's Run from :func:`labkit.testbeds.homework.run_exercise`)."""
    found = runs_of(testbed, runs)
    names = ["{}_{}".format(testbed, number) for number in range(1, len(found) + 1)]
    for run, name in zip(found, names):
        record(run, name=name)
    return names
