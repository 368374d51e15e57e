"""The homework of each offering of the course, and which one a notebook, a record or a run belongs to.

    from labkit.testbeds.homework.years import HOMEWORKS, homework_of
    homework_of(config)            # by its spec's name: "homework/ai_testbeds" (2024), "..._2025"
    homework_of(run)               # by the overview record's exercise
    homework_for_runs("cerebras", runs)   # by the exercise the runs are of (CS-2 BERT: 2024, CS-3 LLaMA: 2025)

Anything that names no homework is the 2024 one, so homework notebooks handed in before the
2025 homework existed run as they did.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from labkit.results import Run
from labkit.testbeds.homework.spec import HOMEWORK_2024, Homework
from labkit.testbeds.homework.spec_2025 import HOMEWORK_2025

__all__ = ["HOMEWORKS", "homework_of", "homework_for_runs", "CURRENT"]

#: Every offering's homework by its spec's name, the current offering first.
HOMEWORKS: Dict[str, Homework] = {h.name: h for h in (HOMEWORK_2025, HOMEWORK_2024)}
CURRENT = HOMEWORK_2025


def homework_of(thing: Any = None) -> Homework:
    """The homework named by ``thing``: a Homework, a Config (its spec's name), a Run (its exercise) or a name."""
    if isinstance(thing, Homework):
        return thing
    name: Optional[str] = None
    if isinstance(thing, str):
        name = thing
    elif isinstance(thing, Run):
        name = thing.exercise
    elif getattr(thing, "spec_name", None):
        name = thing.spec_name
    if name is None or name not in HOMEWORKS:
        if isinstance(thing, str) and thing:
            raise ValueError("{!r} is not a homework; the homeworks are {}".format(thing, ", ".join(HOMEWORKS)))
        return HOMEWORK_2024
    return HOMEWORKS[name]


def homework_for_runs(testbed: str, runs: Any, homework: Any = None) -> Homework:
    """The homework whose ``testbed`` section ``runs`` belong to.

    ``homework`` when given; else the homework whose overview Run ``runs`` is; else the one whose
    section's exercise the runs are of; else 2024's.
    """
    if homework is not None:
        return homework_of(homework)
    if isinstance(runs, Run):
        return homework_of(runs)
    exercises = {r.exercise for r in (runs or []) if isinstance(r, Run)}
    for candidate in HOMEWORKS.values():
        section = candidate.testbeds.get(testbed)
        if section is not None and section.exercise in exercises:
            return candidate
    return HOMEWORK_2024


