"""Gather a student's homework runs from every source: testbed logs and lab-book notebooks.

    runs = homework.runs_for(config, "graphcore")       # logs/graphcore/ and runs/graphcore/
    homework.record_runs("graphcore", run)              # records graphcore_1, ... from the homework's Run

Testbed logs in ``logs/<testbed>/`` carry ``params['log']`` and ``params['log_run']``; notebooks
executed by ``labkit run``/``labkit sweep`` into ``runs/<testbed>/`` (on the testbed or portably)
carry ``params['evidence']`` (:mod:`.evidence`). The grader reads each source again with trusted
code and rejects a record whose numbers the source does not hold.
"""

from __future__ import annotations

import os
from typing import Any, List, Sequence, Tuple, Union

import labkit.logs
from labkit.results import Run, record
from labkit.testbeds.homework.hardware import where_it_ran
from labkit.testbeds.homework.homeworks import homework_of, is_overview

__all__ = ["runs_for", "runs_from_logs", "runs_from_lab_book", "record_runs", "runs_of"]


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
        if name.startswith(".") or not os.path.isfile(path):
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
    names = []
    for number, run in enumerate(runs_of(testbed, runs), 1):
        name = "{}_{}".format(testbed, number)
        record(run, name=name)
        names.append(name)
    return names
