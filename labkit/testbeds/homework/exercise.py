"""The homework notebook's plan and run steps: which logs and lab-book runs there are, and where.

The Run is the homework's overview (one count per testbed); the runs themselves, one list per
testbed, are its ``details``, and each section records them as ``graphcore_1``, ``graphcore_2``...
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from labkit import interrupts
from labkit.interrupts import run_step
from labkit.params import Config
from labkit.plans import RunPlan
from labkit.results import Run
from labkit.testbeds.homework.gather import runs_for
from labkit.testbeds.homework.homeworks import homework_of
from labkit.testbeds.homework.metrics import runs_metric

__all__ = ["plan", "run_exercise"]


def _files_line(kind: str, folder: str) -> str:
    """How many files under ``folder`` can hold runs (no hidden ones; a lab book's: its notebooks)."""
    if not os.path.isdir(folder):
        return "no {} folder {}".format(kind, folder)
    count = 0
    for _root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        wanted = [f for f in files if not f.startswith(".") and (kind != "lab-book" or f.endswith(".ipynb"))]
        count += len(wanted)
    return "{} {} in {}".format(count, "notebook(s)" if kind == "lab-book" else "file(s)", folder)


def plan(config: Config) -> RunPlan:
    """Which testbed logs and lab-book notebooks there are for each testbed, and where (nothing is read yet).

    The testbeds are those of the homework whose spec made ``config`` (2024's or 2025's).
    """
    more = []
    for testbed in homework_of(config).testbeds:
        logs = os.path.join(os.fspath(config.logs_dir), testbed)
        runs = os.path.join(os.fspath(config.runs_dir), testbed)
        more.append("- {}: {}; {}".format(testbed, _files_line("log", logs), _files_line("lab-book", runs)))
    return RunPlan("log", "your runs in {}/ (testbed logs) and {}/ (lab-book notebooks and sweeps)".format(
        config.logs_dir, config.runs_dir), "the homework compares runs you made; it reads them, it trains nothing",
        more=more)


_plan_step = plan  # run_exercise's argument is called plan too


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

