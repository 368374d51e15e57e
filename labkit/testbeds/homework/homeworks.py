"""What a homework is (:class:`Homework`, one :class:`Section` per testbed) and the registry of every
offering's homework: which one a notebook, a record or a run belongs to.

    homework_of(config)            # by its spec's name: "homework/ai_testbeds" (2024), "..._2025"
    homework_for_runs("cerebras", runs)   # by the exercise the runs are of (CS-2 BERT: 2024, CS-3 LLaMA: 2025)

The package imports every offering's module, so the registry is whole whichever module a caller
imports. Anything that names no homework is 2024's, so notebooks handed in before 2025 run as they did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Tuple, Union

from labkit.metrics import Metric, MetricTable
from labkit.params import Spec
from labkit.results import Run

__all__ = ["Section", "Homework", "HOMEWORKS", "register", "homework_of", "homework_for_runs", "is_overview",
           "runs_metric", "overview_table"]


@dataclass(frozen=True)
class Section:
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


def runs_metric(testbed: str) -> str:
    """The overview's metric that counts ``testbed``'s runs ("graphcore_runs")."""
    return "{}_runs".format(testbed)


def overview_table(name: str, sections: Mapping[str, Section]) -> MetricTable:
    """The table of the overview record ``name``: one count of runs per section (by testbed), so a grader
    sees at a glance which testbeds a student handed nothing in for (each section's runs keep their
    own exercise's table)."""
    return MetricTable(
        (name,),
        *(Metric(runs_metric(testbed), "", "runs of {} found in logs/{}/ and runs/{}/ (testbed logs, lab-book "
                                           "notebooks and sweeps)".format(section.exercise, testbed, testbed),
                 primary=True)
          for testbed, section in sections.items()),
    )


@dataclass(frozen=True)
class Homework:
    """One offering's homework: its notebook's spec (whose name is its overview record's exercise),
    its sections by testbed, its overview record's metrics, and the hardware each section's testbed
    runs are measured on."""

    year: int
    spec: Spec
    testbeds: Dict[str, Section]
    metrics: MetricTable  # the overview record's table: how many runs each section found
    hardware: Dict[str, str]  # testbed -> what its testbed runs ran on ("CS-2", "CS-3", ...)
    notebook: str  # the lab book's notebook of this homework
    run_notes: bool = False  # each section prints its runs' own notes (what the numbers do and do not say)

    @property
    def name(self) -> str:
        return self.spec.name

    def section_for(self, testbed: str) -> Section:
        """The :class:`Section` of ``testbed``; a ValueError names the sections there are."""
        if testbed not in self.testbeds:
            raise ValueError("testbed: {!r} is not one of {} (the {} homework's sections)".format(
                testbed, ", ".join(self.testbeds), self.year))
        return self.testbeds[testbed]


#: Every offering's homework by its spec's name, the current (latest) offering first.
HOMEWORKS: Dict[str, Homework] = {}


def register(homework: Homework) -> Homework:
    """Add ``homework`` to :data:`HOMEWORKS` (kept latest year first) and return it."""
    if homework.name in HOMEWORKS:
        raise ValueError("homework: {!r} is registered already (by the {} homework)".format(
            homework.name, HOMEWORKS[homework.name].year))
    ordered = sorted(list(HOMEWORKS.values()) + [homework], key=lambda h: h.year, reverse=True)
    HOMEWORKS.clear()
    HOMEWORKS.update((h.name, h) for h in ordered)
    return homework


def _first() -> Homework:
    if not HOMEWORKS:
        raise LookupError("no homework is registered (import labkit.testbeds.homework)")
    return min(HOMEWORKS.values(), key=lambda h: h.year)


def homework_of(thing: Any = None) -> Homework:
    """The homework named by ``thing``: a Homework, a Config (its spec's name), a Run (its exercise) or a name."""
    if isinstance(thing, Homework):
        return thing
    if isinstance(thing, str) and thing and thing not in HOMEWORKS:
        raise ValueError("{!r} is not a homework; the homeworks are {}".format(thing, ", ".join(HOMEWORKS)))
    name = thing.exercise if isinstance(thing, Run) else getattr(thing, "spec_name", thing)
    return HOMEWORKS[name] if isinstance(name, str) and name in HOMEWORKS else _first()


def homework_for_runs(testbed: str, runs: Any, homework: Any = None) -> Homework:
    """The homework whose ``testbed`` section ``runs`` (a list, or an overview Run) belong to."""
    if homework is not None:
        return homework_of(homework)
    if isinstance(runs, Run):
        return homework_of(runs)
    exercises = {r.exercise for r in (runs or []) if isinstance(r, Run)}
    for candidate in HOMEWORKS.values():
        section = candidate.testbeds.get(testbed)
        if section is not None and section.exercise in exercises:
            return candidate
    return _first()


def is_overview(run: Union[Run, Mapping[str, Any]]) -> bool:
    """True for a homework notebook's overview record (it counts runs; it ran nowhere)."""
    exercise = run.exercise if isinstance(run, Run) else run.get("exercise")
    return exercise in HOMEWORKS
