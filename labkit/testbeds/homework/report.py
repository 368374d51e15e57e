"""The homework's comparison of a testbed's runs: a table and a bar plot, each run labelled with where it ran.

    from labkit.testbeds import homework
    homework.show(run)                                  # the overview: each testbed's runs, where they ran
    homework.show_testbed("graphcore", run)             # table + plot, or what to run when there is nothing
    homework.comparison("graphcore", runs)              # the table alone: one row per run
    homework.plot("graphcore", runs)                    # the plot alone (None without runs)

Portable runs (``portable: CPU`` / ``portable: GPU``) model the exercise on a stand-in device:
they are hatched in the plot and named in a warning, never passed off as the testbed's speed.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Union

from labkit import display
from labkit.results import Run
from labkit.testbeds.homework.against import plot_against
from labkit.testbeds.homework.gather import runs_of
from labkit.testbeds.homework.spec import Exercise
from labkit.testbeds.homework.where import is_portable, where_it_ran
from labkit.testbeds.homework.years import homework_for_runs, homework_of

__all__ = ["comparison", "plot", "show", "show_testbed", "overview", "nothing_yet"]


def _source_name(run: Run) -> str:
    path = run.params.get("log") or run.params.get("evidence") or ""
    return os.path.basename(str(path))


def comparison(testbed: str, runs: Sequence[Run], homework: Any = None):
    """A pandas DataFrame comparing the runs: where each ran, its file, changed parameters, key metrics, status.

    ``homework``: whose section (found from the runs' exercise when not given).
    """
    import pandas as pd

    exercise = homework_for_runs(testbed, runs, homework).exercise_for(testbed)
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
    # One parameter a line: three side by side ran into the next bar's label.
    changed = "\n".join("{}={}".format(p, run.params[p]) for p in exercise.params if p in run.params)
    return "{}\n[{}]".format(changed or "run {}".format(number), where_it_ran(run))


def plot(testbed: str, runs: Sequence[Run], homework: Any = None):
    """Bars of the testbed's key metric(s), one group per run, labelled with where it ran.

    Portable runs are drawn hatched and named "portable: ..." in the legend. Without a run to
    show it returns None: no empty figure.
    """
    import matplotlib.pyplot as plt

    book = homework_for_runs(testbed, runs, homework)
    exercise = book.exercise_for(testbed)
    hardware = book.hardware.get(testbed, testbed)
    if exercise.detail_plot is not None:
        return exercise.detail_plot(runs, hardware)
    if exercise.against:
        return plot_against(exercise, runs, hardware)
    metrics = [m for m in exercise.plotted if any(isinstance(r.metrics.get(m), (int, float)) for r in runs)]
    shown = [r for r in runs if any(isinstance(r.metrics.get(m), (int, float)) for m in metrics)]
    if not shown:
        return None
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(shown) * len(metrics)), 4.2))
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
            key = "{} ({})".format(metric, "portable: a model, not the {}".format(hardware)
                                   if portable else "measured on the {}".format(where_it_ran(run)))
            legend.setdefault(key, bar)
    ax.set_xticks(range(len(shown)))
    ax.set_xticklabels([_bar_label(exercise, i, r) for i, r in enumerate(shown, 1)], fontsize=8)
    unit = next((r.units.get(metrics[0]) for r in shown if r.units.get(metrics[0])), None)
    ax.set_ylabel((metrics[0] + (" ({})".format(unit) if unit else "")) if len(metrics) == 1 else "value")
    ax.set_title("{}: {} per run".format(exercise.exercise, ", ".join(metrics)))
    # Below the axes, never over a bar: "best" still covered the tallest bar in the browser test.
    ax.legend(list(legend.values()), list(legend), fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.35), ncol=min(2, len(legend)), frameon=False)
    fig.tight_layout()
    plt.close(fig)  # the notebook shows the returned figure once
    return fig


def nothing_yet(testbed: str, homework: Any = None) -> str:
    """What to run, and where to put it, for a testbed with no runs yet (in ``homework``'s section)."""
    exercise = homework_of(homework).exercise_for(testbed)
    return ("No runs of {ex} yet, so there is nothing to compare. Either\n"
            "  - portably, on a laptop or a GPU node (about five minutes on 2 cores), from the lab book's folder:\n"
            "      {portable}\n"
            "    and put runs/{tb}/ beside this notebook; or\n"
            "  - on the testbed: run {testbed}, and copy the logs into logs/{tb}/ beside this notebook\n"
            "    (or run the lab book's notebook there with `labkit sweep ... --out runs/{tb}`).\n"
            "Then run this notebook again.").format(ex=exercise.exercise, portable=exercise.portable, tb=testbed,
                                                    testbed=exercise.testbed)


def show_testbed(testbed: str, runs: Union[Run, Sequence[Run]], homework: Any = None) -> Optional[List[Any]]:
    """The comparison table and plot, with a warning about portable runs; or, without runs, what to run.

    ``runs``: a list, or the homework's Run (:func:`labkit.testbeds.homework.run_exercise`).
    Shown by the rule of :func:`labkit.display.shown` (None in a kernel).
    """
    book = homework_for_runs(testbed, runs, homework)
    runs = runs_of(testbed, runs)
    if not runs:
        print(nothing_yet(testbed, book))
        return display.shown([])
    table = display.show(comparison(testbed, runs, book))
    exercise = book.exercise_for(testbed)
    detail = None if exercise.detail_table is None else display.show(exercise.detail_table(runs, testbed))
    portable = sorted({where_it_ran(r) for r in runs if is_portable(r)})
    hardware = book.hardware.get(testbed, testbed)
    if portable:
        print("Runs marked {} ran the exercise's portable stand-in, not the {}: they model the exercise (same model, "
              "same parameters, same metrics); their times and speeds say nothing about the {}.".format(
                  " and ".join(portable), hardware, hardware))
    for note in _notes(runs) if book.run_notes else []:
        print("Note:", note)
    fig = plot(testbed, runs, book)
    shown = [table] + ([detail] if exercise.detail_table is not None else [])
    return display.shown(shown + [None if fig is None else display.show(fig)])


def _notes(runs: Sequence[Run]) -> List[str]:
    """The runs' own notes (a cached compile, a run that stopped early, different models compared ...), once each."""
    notes: List[str] = []
    for run in runs:
        for note in run.notes:
            if note not in notes:
                notes.append(note)
    return notes


def overview(run: Run):
    """One row per testbed: how many runs were found, where they ran, and from which kind of source."""
    import pandas as pd

    rows = []
    for testbed in homework_of(run).testbeds:
        runs = runs_of(testbed, run)
        rows.append({"testbed": testbed, "runs": len(runs),
                     "where they ran": ", ".join(sorted({where_it_ran(r) for r in runs})) or "-",
                     "from testbed logs": sum(1 for r in runs if "log" in r.params),
                     "from lab-book notebooks": sum(1 for r in runs if "evidence" in r.params)})
    return pd.DataFrame(rows).set_index("testbed")


def show(run: Union[Run, str], runs: Optional[Sequence[Run]] = None) -> Optional[List[Any]]:
    """The notebook's show step: :func:`overview` of the homework's Run, and its notes.

    ``show("graphcore", runs)``, the form of notebooks made before the five steps, is
    :func:`show_testbed`, so a homework handed in with those cells still runs.
    """
    if isinstance(run, str):
        return show_testbed(run, runs or [])
    table = display.show(overview(run))
    for note in run.notes:
        print("Note:", note)
    return display.shown([table])
